// ImageStore: records per org as JSON files, layers as directories renamed into place once complete.
#include "image/image_store.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <system_error>

#include "base/fd.h"
#include "base/file.h"
#include "base/random.h"
#include "image/layer_flatten.h"

namespace isb::image {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

// "sha256:<64 lower-case hex>": the only digests a layer dir is named by.
bool IsSha256Digest(std::string_view d) {
  if (!d.starts_with("sha256:") || d.size() != 7 + 64) return false;
  return std::all_of(d.begin() + 7, d.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Beside a flattened layer's root: the file data its flatten wrote, in decimal.
constexpr const char* kFlattenedBytesFile = "bytes";

// The most names a flattened layer may hold: twice what one layer may unpack to (layer_store_io.cc).
constexpr uint64_t kMaxFlattenedEntries = uint64_t{8} << 20;

Error LayerGone(const ImageRecord& record, const std::string& diff_id) {
  return Error::Of(Code::kConflict,
                   "image '" + record.name + "': layer " + diff_id + " is gone from the image store: pull it again");
}

Error Sys(const std::string& what, const std::error_code& ec) {
  return Error::Of(Code::kInternal, what + ": " + ec.message());
}

// The size of what is below `dir` (regular files): the garbage report, and the bound of a flatten of layers.
uint64_t TreeBytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    // Its own error code: one entry that cannot be looked at (a whole path past PATH_MAX) neither ends the walk nor
    // adds file_size's (uintmax_t)-1. Such a file is not counted: a flatten bounded by this then refuses it.
    std::error_code entry;
    if (it->is_symlink(entry) || !it->is_regular_file(entry)) continue;
    const uintmax_t size = it->file_size(entry);
    if (!entry) total += size;
  }
  return total;
}

json LayerJson(const LayerRecord& l) {
  return {{"digest", l.digest},
          {"diff_id", l.diff_id},
          {"media_type", l.media_type},
          {"size", l.size},
          {"unpacked_bytes", l.unpacked_bytes}};
}

json RunConfigJson(const RunConfig& c) {
  return {
      {"env", c.env}, {"entrypoint", c.entrypoint},    {"cmd", c.cmd}, {"working_dir", c.working_dir}, {"user", c.user},
      {"os", c.os},   {"architecture", c.architecture}};
}

}  // namespace

json ToJson(const ImageRecord& r) {
  json layers = json::array();
  for (const LayerRecord& l : r.layers) layers.push_back(LayerJson(l));
  return {{"org", r.org},
          {"name", r.name},
          {"manifest_digest", r.manifest_digest},
          {"config_digest", r.config_digest},
          {"manifest_media_type", r.manifest_media_type},
          {"layers", std::move(layers)},
          {"config", RunConfigJson(r.config)},
          {"source", r.source},
          {"created_ms", r.created_ms}};
}

Result<ImageRecord> ImageRecordFromJson(const json& j) {
  try {
    ImageRecord r;
    r.org = j.at("org").get<std::string>();
    r.name = j.at("name").get<std::string>();
    r.manifest_digest = j.at("manifest_digest").get<std::string>();
    r.config_digest = j.value("config_digest", "");
    r.manifest_media_type = j.value("manifest_media_type", "");
    for (const json& l : j.at("layers")) {
      LayerRecord layer{l.value("digest", ""), l.at("diff_id").get<std::string>(), l.value("media_type", ""),
                        l.value("size", uint64_t{0}), l.value("unpacked_bytes", uint64_t{0})};
      if (!IsSha256Digest(layer.diff_id)) return Error::Of(Code::kInvalidArgument, "layer diff_id is not sha256");
      r.layers.push_back(std::move(layer));
    }
    const json& c = j.at("config");
    r.config.env = c.value("env", std::vector<std::string>{});
    r.config.entrypoint = c.value("entrypoint", std::vector<std::string>{});
    r.config.cmd = c.value("cmd", std::vector<std::string>{});
    r.config.working_dir = c.value("working_dir", "");
    r.config.user = c.value("user", "");
    r.config.os = c.value("os", "");
    r.config.architecture = c.value("architecture", "");
    r.source = j.value("source", "");
    r.created_ms = j.value("created_ms", int64_t{0});
    return r;
  } catch (const json::exception& e) {
    return Error::Of(Code::kInvalidArgument, std::string("image record: ") + e.what());
  }
}

size_t FlattenedCount(size_t layers) { return layers > kMaxStackedLayers ? layers - kMaxStackedLayers + 1 : 0; }

std::string ChainId(const std::vector<LayerRecord>& layers, size_t count) {
  std::string chain = count > 0 ? layers[0].diff_id : "";
  for (size_t i = 1; i < count && i < layers.size(); ++i)
    chain = "sha256:" + Sha256Hex(chain + " " + layers[i].diff_id);
  return chain;
}

std::string ShortId(const ImageRecord& record) {
  const std::string& d = record.manifest_digest;
  const size_t colon = d.find(':');
  return d.substr(colon == std::string::npos ? 0 : colon + 1, 12);
}

Result<std::unique_ptr<ImageStore>> ImageStore::Open(fs::path root, bool clean) {
  for (const char* sub : {"", "blobs", "layers", "layers/sha256", "layers/tmp", "layers/trash", "orgs"}) {
    const fs::path dir = root / sub;
    ISB_TRY(MakeDirs(dir.string(), 0700));
    ::chmod(dir.c_str(), 0700);
  }
  // A layer half unpacked, or collected but not yet deleted, when the daemon stopped: nothing names it.
  std::error_code ec;
  for (const char* sub : {"layers/tmp", "layers/trash"}) {
    if (!clean) break;
    for (const auto& e : fs::directory_iterator(root / sub, ec)) fs::remove_all(e.path(), ec);
  }
  return std::unique_ptr<ImageStore>(new ImageStore(std::move(root)));
}

std::string DiffIdOfLayerRoot(const std::string& path) {
  const fs::path p(path);
  if (p.filename() != "root" || p.parent_path().parent_path().filename() != "sha256") return "";
  const std::string id = "sha256:" + p.parent_path().filename().string();
  return IsSha256Digest(id) ? id : "";
}

std::optional<LayerRecord> ImageStore::HeldLayer(const std::string& org, const std::string& diff_id) const {
  MutexLock lock(mu_);
  std::optional<LayerRecord> held;
  for (const ImageRecord& r : ListLocked(org)) {
    for (const LayerRecord& l : r.layers) {
      if (l.diff_id == diff_id && (!held || l.unpacked_bytes > held->unpacked_bytes)) held = l;
    }
  }
  return held;
}

bool ImageStore::OrgHolds(const std::string& org, const std::string& digest) const {
  MutexLock lock(mu_);
  for (const ImageRecord& r : ListLocked(org)) {
    if (r.manifest_digest == digest || r.config_digest == digest) return true;
    for (const LayerRecord& l : r.layers) {
      if (l.digest == digest || l.diff_id == digest) return true;
    }
  }
  return false;
}

ImageStore::Pins::~Pins() {
  MutexLock lock(store_.mu_);
  for (const std::string& d : held_) {
    auto it = store_.pins_.find(d);
    if (it != store_.pins_.end() && --it->second <= 0) store_.pins_.erase(it);
  }
}

void ImageStore::Pins::Add(const std::vector<std::string>& digests) {
  MutexLock lock(store_.mu_);
  for (const std::string& d : digests) {
    ++store_.pins_[d];
    held_.push_back(d);
  }
}

fs::path ImageStore::LayerRoot(const std::string& diff_id) const {
  return root_ / "layers/sha256" / diff_id.substr(diff_id.find(':') + 1) / "root";
}

bool ImageStore::HasLayer(const std::string& diff_id) const {
  std::error_code ec;
  return IsSha256Digest(diff_id) && fs::is_directory(LayerRoot(diff_id), ec);
}

Result<fs::path> ImageStore::BeginLayer() {
  ISB_ASSIGN_OR_RETURN(std::string name, RandomHex(12));
  const fs::path dir = root_ / "layers/tmp" / name;
  std::error_code ec;
  fs::create_directories(dir / "root", ec);
  if (ec) return Sys("image store: make a layer dir", ec);
  // The root dir's own mode and owner are the tar's to set (its "./" entry); until then only root reaches it.
  ::chmod((dir / "root").c_str(), 0755);
  return dir / "root";
}

Status ImageStore::CommitLayer(const fs::path& begun_root, const std::string& diff_id) {
  if (!IsSha256Digest(diff_id))
    return Error::Of(Code::kInvalidArgument, "layer diff_id '" + diff_id + "' is not a sha256 digest");
  const fs::path from = begun_root.parent_path();
  const fs::path to = LayerRoot(diff_id).parent_path();
  std::error_code ec;
  fs::rename(from, to, ec);
  if (!ec) return {};
  // Another pull unpacked the same layer first: its dir is as good as this one.
  if (ec == std::errc::directory_not_empty || ec == std::errc::file_exists) {
    fs::remove_all(from, ec);
    return {};
  }
  return Sys("image store: move layer " + diff_id + " into place", ec);
}

void ImageStore::DiscardLayer(const fs::path& begun_root) {
  std::error_code ec;
  fs::remove_all(begun_root.parent_path(), ec);
}

Result<std::vector<std::string>> ImageStore::StackedLayerRoots(const ImageRecord& record,
                                                               const FlattenGate& may_flatten) {
  const size_t flat = FlattenedCount(record.layers.size());
  std::vector<std::string> roots;
  if (flat > 0) {
    ISB_ASSIGN_OR_RETURN(std::string root, Flattened(record, flat, may_flatten));
    roots.push_back(std::move(root));
  }
  for (size_t i = flat; i < record.layers.size(); ++i) {
    const std::string& id = record.layers[i].diff_id;
    if (!HasLayer(id)) return LayerGone(record, id);
    roots.push_back(LayerRoot(id).string());
  }
  return roots;
}

Result<std::string> ImageStore::Flattened(const ImageRecord& record, size_t count, const FlattenGate& may_flatten) {
  const std::string chain = ChainId(record.layers, count);
  // Pinned before they are looked at: a collection that comes after leaves them, one that came before took them
  // away whole (a rename), so a layer read below is never one being deleted.
  Pins pins(*this);
  std::vector<std::string> pinned = {chain};
  for (size_t i = 0; i < count; ++i) pinned.push_back(record.layers[i].diff_id);
  pins.Add(pinned);
  if (HasLayer(chain)) return LayerRoot(chain).string();
  // One flatten at a time: a call for the same layer that waited here finds it made.
  MutexLock flattening(flatten_mu_);
  if (HasLayer(chain)) return LayerRoot(chain).string();
  std::vector<std::string> roots;
  FlattenLimits limits{.max_bytes = 0, .max_entries = kMaxFlattenedEntries};
  for (size_t i = 0; i < count; ++i) {
    const LayerRecord& l = record.layers[i];
    if (!HasLayer(l.diff_id)) return LayerGone(record, l.diff_id);
    roots.push_back(LayerRoot(l.diff_id).string());
    // What the layers hold on disk bounds what their merge writes: each file of it is copied from one of them
    // (their records' unpacked_bytes may be short: a layer an org held already was recorded without them once).
    limits.max_bytes += TreeBytes(roots.back());
  }
  if (may_flatten) {
    ISB_TRY(may_flatten(FlattenRequest{
        .image = record.name, .layers = record.layers.size(), .count = count, .max_bytes = limits.max_bytes}));
  }
  ISB_ASSIGN_OR_RETURN(fs::path dir, BeginLayer());
  Result<FlattenReport> made = FlattenLayers(roots, dir.string(), limits);
  if (made.ok()) {
    // Its size beside its root, and both on disk before it is renamed into place: a layer dir that exists is
    // complete, after a crash too.
    Status sized =
        WriteFileAtomically((dir.parent_path() / kFlattenedBytesFile).string(), std::to_string(made->bytes), 0600);
    Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!sized.ok()) {
      made = sized.error();
    } else if (!fd.valid() || ::syncfs(fd.get()) != 0) {
      made = Error::Sys("image store: sync the flattened layer");
    }
  }
  if (!made.ok()) {
    DiscardLayer(dir);
    return Error::Of(made.error().code, "image '" + record.name + "': flattening its lowest " + std::to_string(count) +
                                            " layers into one: " + made.error().message);
  }
  if (Status committed = CommitLayer(dir, chain); !committed.ok()) {
    DiscardLayer(dir);
    return committed.error();
  }
  return LayerRoot(chain).string();
}

uint64_t ImageStore::FlattenedBytes(const std::string& chain, uint64_t fallback) const {
  Result<std::string> text = ReadFile((LayerRoot(chain).parent_path() / kFlattenedBytesFile).string());
  if (!text.ok()) return fallback;
  uint64_t bytes = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), bytes);
  return ec == std::errc() && end == text->data() + text->size() ? bytes : fallback;
}

fs::path ImageStore::RecordPath(const std::string& org, const std::string& name) const {
  return root_ / "orgs" / org / (Sha256Hex(name) + ".json");
}

Status ImageStore::Put(const ImageRecord& record) {
  MutexLock lock(mu_);  // before the layers are looked at: a collection cannot take one between look and write
  for (const LayerRecord& l : record.layers) {
    if (!HasLayer(l.diff_id))
      return Error::Of(Code::kConflict, "image '" + record.name + "': layer " + l.diff_id + " is not stored");
  }
  const fs::path dir = root_ / "orgs" / record.org;
  ISB_TRY(MakeDirs(dir.string(), 0700));
  return WriteFileAtomically(RecordPath(record.org, record.name).string(), ToJson(record).dump(), 0600);
}

std::vector<ImageRecord> ImageStore::ListLocked(const std::string& org) const {
  std::vector<ImageRecord> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root_ / "orgs" / org, ec)) {
    if (e.path().extension() != ".json") continue;
    Result<std::string> text = ReadFile(e.path().string());
    if (!text.ok()) continue;
    json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) continue;
    Result<ImageRecord> r = ImageRecordFromJson(j);
    if (r.ok() && r->org == org) out.push_back(std::move(*r));
  }
  std::sort(out.begin(), out.end(), [](const ImageRecord& a, const ImageRecord& b) { return a.name < b.name; });
  return out;
}

std::vector<ImageRecord> ImageStore::ListAll() const {
  std::vector<ImageRecord> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root_ / "orgs", ec)) {
    for (ImageRecord& r : ListLocked(e.path().filename().string())) out.push_back(std::move(r));
  }
  return out;
}

std::vector<ImageRecord> ImageStore::List(const std::string& org) const {
  MutexLock lock(mu_);
  return ListLocked(org);
}

uint64_t ImageStore::BytesOf(const std::vector<ImageRecord>& records) const {
  std::set<std::string> layers, blobs, chains;
  uint64_t bytes = 0;
  for (const ImageRecord& r : records) {
    for (const LayerRecord& l : r.layers) {
      if (layers.insert(l.diff_id).second) bytes += l.unpacked_bytes;
      if (!l.digest.empty() && blobs.insert(l.digest).second) bytes += l.size;
    }
    // The flattened layer it needs, once made: charged like a layer of its own.
    const size_t flat = FlattenedCount(r.layers.size());
    if (flat == 0) continue;
    const std::string chain = ChainId(r.layers, flat);
    if (!chains.insert(chain).second || !HasLayer(chain)) continue;
    uint64_t merged = 0;
    for (size_t i = 0; i < flat; ++i) merged += r.layers[i].unpacked_bytes;
    bytes += FlattenedBytes(chain, merged);
  }
  return bytes;
}

Result<ImageRecord> ImageStore::Get(const std::string& org, const std::string& ref) const {
  MutexLock lock(mu_);
  std::vector<ImageRecord> all = ListLocked(org);
  for (const ImageRecord& r : all) {
    if (r.name == ref || r.manifest_digest == ref) return r;
  }
  // An id: 12 or more hex digits of the manifest digest, naming one image only.
  const bool hex = ref.size() >= 12 && ref.size() <= 64 &&
                   std::all_of(ref.begin(), ref.end(), [](char c) { return std::isxdigit((unsigned char)c); });
  if (hex) {
    const ImageRecord* found = nullptr;
    for (const ImageRecord& r : all) {
      if (r.manifest_digest.compare(7, ref.size(), ref) != 0) continue;
      if (found != nullptr && found->manifest_digest != r.manifest_digest)
        return Error::Of(Code::kInvalidArgument, "image id '" + ref + "' names more than one image: give more digits");
      found = &r;
    }
    if (found != nullptr) return *found;
  }
  return Error::Of(Code::kNotFound,
                   "image '" + ref + "' not found in org '" + org + "': pull or import it first (isb image pull)");
}

Status ImageStore::Remove(const std::string& org, const std::string& name) {
  MutexLock lock(mu_);
  std::error_code ec;
  if (!fs::remove(RecordPath(org, name), ec) || ec)
    return Error::Of(Code::kNotFound, "image '" + name + "' not found in org '" + org + "'");
  return {};
}

Result<ImageStore::Garbage> ImageStore::CollectGarbage(const std::vector<std::string>& in_use) {
  Garbage g;
  std::vector<fs::path> doomed;
  {
    MutexLock lock(mu_);
    std::set<std::string> keep(in_use.begin(), in_use.end());
    for (const auto& [digest, count] : pins_) keep.insert(digest);
    for (const ImageRecord& r : ListAll()) {
      keep.insert(r.manifest_digest);
      keep.insert(r.config_digest);
      for (const LayerRecord& l : r.layers) {
        keep.insert(l.digest);
        keep.insert(l.diff_id);
      }
      if (const size_t flat = FlattenedCount(r.layers.size()); flat > 0) keep.insert(ChainId(r.layers, flat));
    }
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root_ / "layers/sha256", ec)) {
      if (keep.contains("sha256:" + e.path().filename().string())) continue;
      // Moved aside at once (a rename): a pull that looks for the layer after this finds it gone, never half gone.
      Result<std::string> name = RandomHex(8);
      if (!name.ok()) return name.error();
      const fs::path to = root_ / "layers/trash" / *name;
      fs::rename(e.path(), to, ec);
      if (ec) return Sys("image store: remove layer " + e.path().filename().string(), ec);
      doomed.push_back(to);
      ++g.layers;
    }
    for (const auto& e : fs::directory_iterator(root_ / "blobs/sha256", ec)) {
      if (keep.contains("sha256:" + e.path().filename().string())) continue;
      g.bytes += e.file_size(ec);
      fs::remove(e.path(), ec);
      if (ec) return Sys("image store: remove blob " + e.path().filename().string(), ec);
      ++g.blobs;
    }
  }
  for (const fs::path& dir : doomed) {
    g.bytes += TreeBytes(dir);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return g;
}

}  // namespace isb::image
