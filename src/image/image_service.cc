// ImageService: snapshots and exports (pull and import are in image_pull.cc and image_import.cc).
#include "image/image_service.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/fd.h"
#include "image/digest.h"
#include "image/layer_store_io.h"
#include "image/manifest.h"
#include "image/registry_http.h"
#include "image/layer_writer.h"
#include "image/tar_writer.h"

namespace isb::image {
namespace {

using json = nlohmann::json;

const std::string kOciManifest{media::kOciManifest};
const std::string kOciConfig{media::kOciConfig};
const std::string kOciLayerGzip{media::kOciLayerGzip};
const std::string kOciIndex{media::kOciIndex};
constexpr size_t kMaxConfig = kMaxConfigBytes;
constexpr size_t kMaxManifest = kMaxManifestBytes;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Rfc3339Now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char out[32];
  std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return out;
}

// A fresh config for an image no other one is under.
json EmptyConfig() {
  return {{"architecture", "amd64"},
          {"os", "linux"},
          {"config", json::object()},
          {"rootfs", {{"type", "layers"}, {"diff_ids", json::array()}}},
          {"history", json::array()}};
}

// The tag an export names its image by in index.json ("org.opencontainers.image.ref.name").
std::string TagOf(const std::string& name) {
  const size_t at = name.find('@');
  const std::string base = name.substr(0, at);
  const size_t colon = base.rfind(':'), slash = base.rfind('/');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) return base.substr(colon + 1);
  return "latest";
}

Status CopyBlobInto(TarWriter& tar, const BlobStore& blobs, const std::string& digest, const std::string& name) {
  ISB_ASSIGN_OR_RETURN(Digest d, ParseDigest(digest));
  ISB_ASSIGN_OR_RETURN(Fd f, blobs.OpenBlob(d));
  const std::string path = "blob " + digest;
  const off_t size = ::lseek(f.get(), 0, SEEK_END);
  ::lseek(f.get(), 0, SEEK_SET);
  TarHeader h;
  h.path = name;
  h.size = static_cast<uint64_t>(size);
  ISB_TRY(tar.Add(h));
  uint8_t buf[128 << 10];
  uint64_t left = h.size;
  while (left > 0) {
    const ssize_t n = ::read(f.get(), buf, std::min<uint64_t>(left, sizeof buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::Sys("reading " + path);
    ISB_TRY(tar.Data(std::span<const uint8_t>(buf, static_cast<size_t>(n))));
    left -= static_cast<uint64_t>(n);
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<ImageService>> ImageService::Create(ImageStore& store, RegistrySettings settings) {
  for (const std::string& entry : settings.allow) {
    if (Result<HostRule> r = ParseHostRule(entry); !r.ok())
      return Error::Of(Code::kInvalidArgument, "--registry-allow: " + r.error().message);
  }
  for (const std::string& entry : settings.insecure) {
    if (Result<HostRule> r = ParseHostRule(entry); !r.ok())
      return Error::Of(Code::kInvalidArgument, "--registry-insecure: " + r.error().message);
  }
  Result<std::shared_ptr<const egress::TlsTrust>> trust = egress::TlsTrust::Create(settings.ca_file);
  if (!trust.ok()) return Error::Of(Code::kInvalidArgument, "--registry-ca: " + trust.error().message);
  egress::DialerOptions d;
  d.resolver = settings.resolver;
  ISB_ASSIGN_OR_RETURN(egress::Dialer dialer, egress::Dialer::Create(std::move(d)));
  ISB_ASSIGN_OR_RETURN(BlobStore blobs, BlobStore::Open(store.root().string()));
  ISB_TRY(blobs.CleanTemp());
  return std::unique_ptr<ImageService>(
      new ImageService(store, std::move(blobs), std::move(settings), std::move(dialer), std::move(*trust)));
}

ImageService::ImageService(ImageStore& store, BlobStore blobs, RegistrySettings settings, egress::Dialer dialer,
                           std::shared_ptr<const egress::TlsTrust> trust)
    : store_(store),
      blobs_(std::move(blobs)),
      settings_(std::move(settings)),
      dialer_(std::move(dialer)),
      trust_(std::move(trust)) {}

ImageService::~ImageService() = default;

Result<ImageRecord> ImageService::Snapshot(const std::string& org, const std::string& name,
                                           const std::optional<ImageRecord>& base, const std::string& upper,
                                           uint32_t uid_base, const std::vector<std::string>& exclude) {
  // What isb itself put in the layer (names, resolver, trust bundle) belongs to that sandbox, not to the image.
  static const std::vector<std::string> kDrop = {"etc/hostname", "etc/hosts", "etc/resolv.conf", "etc/isb"};
  if (base && base->layers.size() + 1 > kMaxLayers)
    return Error::Of(Code::kInvalidArgument, "image '" + base->name + "' has " + std::to_string(base->layers.size()) +
                                                 " layers: a snapshot on top would pass the " +
                                                 std::to_string(kMaxLayers) + " an image may have");
  ImageStore::Pins pins(store_);
  if (base) {
    std::vector<std::string> pinned = {base->config_digest};
    for (const LayerRecord& l : base->layers) pinned.insert(pinned.end(), {l.digest, l.diff_id});
    pins.Add(pinned);
  }
  ISB_ASSIGN_OR_RETURN(std::string temp, BlobTempPath(blobs_));
  Result<WrittenLayer> written = WriteUpperAsLayer(upper, uid_base, exclude, kDrop, temp);
  if (!written.ok()) {
    ::unlink(temp.c_str());
    return written.error();
  }
  pins.Add({written->digest, written->diff_id});
  ISB_TRY(AdoptBlob(blobs_, temp, written->digest));

  ISB_ASSIGN_OR_RETURN(Digest layer_digest, ParseDigest(written->digest));
  ISB_ASSIGN_OR_RETURN(Fd blob, blobs_.OpenBlob(layer_digest));
  FdSource source(blob.get());
  ISB_ASSIGN_OR_RETURN(UnpackedLayer unpacked, UnpackIntoStore(store_, source, Compression::kGzip, written->diff_id,
                                                               settings_.max_image_bytes));

  json config = EmptyConfig();
  json manifest_layers = json::array();
  ImageRecord r;
  if (base) {
    ISB_ASSIGN_OR_RETURN(std::string text, ReadBlob(blobs_, base->config_digest, kMaxConfig));
    config = json::parse(text, nullptr, false);
    if (!config.is_object())
      return Error::Of(Code::kInvalidArgument, "image '" + base->name + "': its config is not JSON");
    for (const LayerRecord& l : base->layers) {
      if (l.digest.empty()) return Error::Of(Code::kConflict, "image '" + base->name + "' has a layer without a blob");
      manifest_layers.push_back({{"mediaType", l.media_type}, {"digest", l.digest}, {"size", l.size}});
    }
    r.layers = base->layers;
    r.config = base->config;
  }
  // The base's config as it is but for what a snapshot adds; fields of the wrong type (parsers ignore history) are
  // made what they must be rather than thrown at.
  if (!config["rootfs"].is_object()) config["rootfs"] = json::object();
  config["rootfs"]["type"] = "layers";
  if (!config["rootfs"]["diff_ids"].is_array()) config["rootfs"]["diff_ids"] = json::array();
  config["rootfs"]["diff_ids"].push_back(written->diff_id);
  if (!config["history"].is_array()) config["history"] = json::array();
  config["history"].push_back({{"created", Rfc3339Now()}, {"created_by", "isb snapshot"}});
  config["created"] = Rfc3339Now();
  const std::string config_bytes = config.dump();
  ISB_ASSIGN_OR_RETURN(std::string config_digest, PutBlob(blobs_, config_bytes));
  manifest_layers.push_back({{"mediaType", kOciLayerGzip}, {"digest", written->digest}, {"size", written->size}});
  json manifest = {{"schemaVersion", 2},
                   {"mediaType", kOciManifest},
                   {"config", {{"mediaType", kOciConfig}, {"digest", config_digest}, {"size", config_bytes.size()}}},
                   {"layers", std::move(manifest_layers)}};
  ISB_ASSIGN_OR_RETURN(std::string manifest_digest, PutBlob(blobs_, manifest.dump()));

  r.org = org;
  r.name = name;
  r.manifest_digest = manifest_digest;
  r.config_digest = config_digest;
  r.manifest_media_type = kOciManifest;
  r.layers.push_back(LayerRecord{written->digest, written->diff_id, kOciLayerGzip, written->size, unpacked.bytes});
  r.source = "snapshot";
  r.created_ms = NowMs();
  ISB_TRY(store_.Put(r));
  return r;
}

Status ImageService::Export(const std::string& org, const std::string& ref, const std::string& path) {
  ISB_ASSIGN_OR_RETURN(ImageRecord r, store_.Get(org, ref));
  ISB_ASSIGN_OR_RETURN(std::string manifest, ReadBlob(blobs_, r.manifest_digest, kMaxManifest));
  const std::string temp = path + ".isb-partial";
  Fd out(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!out.valid()) return Error::Sys("creating " + path);
  TarWriter tar([&out](std::span<const uint8_t> bytes) -> Status {
    for (size_t off = 0; off < bytes.size();) {
      const ssize_t n = ::write(out.get(), bytes.data() + off, bytes.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Error::Sys("writing the archive");
      off += static_cast<size_t>(n);
    }
    return {};
  });
  auto write_all = [&]() -> Status {
    const std::string media = r.manifest_media_type.empty() ? kOciManifest : r.manifest_media_type;
    json index = {{"schemaVersion", 2},
                  {"mediaType", kOciIndex},
                  {"manifests",
                   {{{"mediaType", media},
                     {"digest", r.manifest_digest},
                     {"size", manifest.size()},
                     {"annotations",
                      {{"org.opencontainers.image.ref.name", TagOf(r.name)}, {"io.containerd.image.name", r.name}}}}}}};
    ISB_TRY(tar.AddFile(TarHeader{.path = "oci-layout"}, R"({"imageLayoutVersion":"1.0.0"})"));
    ISB_TRY(tar.AddFile(TarHeader{.path = "index.json"}, index.dump()));
    ISB_TRY(tar.Add(TarHeader{.type = TarHeader::Type::kDir, .path = "blobs", .mode = 0755}));
    ISB_TRY(tar.Add(TarHeader{.type = TarHeader::Type::kDir, .path = "blobs/sha256", .mode = 0755}));
    auto blob_name = [](const std::string& d) { return "blobs/sha256/" + d.substr(d.find(':') + 1); };
    ISB_TRY(tar.AddFile(TarHeader{.path = blob_name(r.manifest_digest)}, manifest));
    ISB_TRY(CopyBlobInto(tar, blobs_, r.config_digest, blob_name(r.config_digest)));
    for (const LayerRecord& l : r.layers) {
      if (l.digest.empty()) return Error::Of(Code::kConflict, "image '" + r.name + "' has a layer without a blob");
      ISB_TRY(CopyBlobInto(tar, blobs_, l.digest, blob_name(l.digest)));
    }
    ISB_TRY(tar.Finish());
    if (::fsync(out.get()) != 0) return Error::Sys("writing " + path);
    if (::rename(temp.c_str(), path.c_str()) != 0) return Error::Sys("writing " + path);
    return {};
  };
  Status st = write_all();
  if (!st.ok()) ::unlink(temp.c_str());
  return st;
}

}  // namespace isb::image
