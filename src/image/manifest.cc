// Parsers for manifests, indexes and configs: every field isb relies on is checked for type and form, and an error
// names the field by its path ("manifest: layers[2].size: ...").
#include "image/manifest.h"

#include <optional>

#include <sys/utsname.h>

#include <set>

#include <nlohmann/json.hpp>

#include "api/json_util.h"
#include "egress/host_port.h"

namespace isb::image {
namespace {

using json = nlohmann::json;

Error Bad(const std::string& where, const std::string& why) {
  return Error::Of(Code::kInvalidArgument, where + ": " + why);
}

// Finds the first key an object repeats: two parsers could read such a document two ways.
class DuplicateKeys : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (keys_.back().insert(k).second) return true;
    duplicate_ = k;
    return false;
  }
  bool end_object() override {
    keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
  const std::optional<std::string>& duplicate() const { return duplicate_; }

 private:
  std::vector<std::set<std::string>> keys_;
  std::optional<std::string> duplicate_;
};

// A JSON object of at most `max` bytes, with no key repeated in any object.
Result<json> ParseStrict(std::string_view bytes, size_t max, const std::string& what) {
  if (bytes.size() > max)
    return Error::Of(Code::kTooLarge,
                     what + " is " + std::to_string(bytes.size()) + " bytes, over the limit of " + std::to_string(max));
  Result<json> doc = api::ParseJson(bytes);
  if (!doc.ok()) return Bad(what, doc.error().message);
  DuplicateKeys sax;
  (void)json::sax_parse(bytes, &sax);
  if (sax.duplicate())
    return Bad(what, "key '" + egress::Printable(*sax.duplicate()) + "' appears twice in one object");
  if (!doc->is_object()) return Bad(what, "is not a JSON object");
  return doc;
}

// The member `key` of `obj` if present and not null.
const json* Member(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

Result<std::string> StringAt(const json& obj, const char* key, const std::string& where, bool required) {
  const json* v = Member(obj, key);
  if (v == nullptr) {
    if (required) return Bad(where + "." + key, "is missing");
    return std::string();
  }
  if (!v->is_string()) return Bad(where + "." + key, "must be a string");
  return v->get<std::string>();
}

Result<std::vector<std::string>> StringsAt(const json& obj, const char* key, const std::string& where) {
  std::vector<std::string> out;
  const json* v = Member(obj, key);
  if (v == nullptr) return out;
  if (!v->is_array()) return Bad(where + "." + key, "must be an array of strings");
  for (const json& s : *v) {
    if (!s.is_string()) return Bad(where + "." + key, "must be an array of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

Result<Platform> ParsePlatform(const json& v, const std::string& where) {
  if (!v.is_object()) return Bad(where, "must be an object");
  Platform p;
  ISB_ASSIGN_OR_RETURN(p.os, StringAt(v, "os", where, true));
  ISB_ASSIGN_OR_RETURN(p.architecture, StringAt(v, "architecture", where, true));
  ISB_ASSIGN_OR_RETURN(p.variant, StringAt(v, "variant", where, false));
  return p;
}

Result<Descriptor> ParseDescriptor(const json& v, const std::string& where) {
  if (!v.is_object()) return Bad(where, "must be an object");
  Descriptor d;
  ISB_ASSIGN_OR_RETURN(d.media_type, StringAt(v, "mediaType", where, true));
  ISB_ASSIGN_OR_RETURN(std::string digest, StringAt(v, "digest", where, true));
  Result<Digest> parsed = ParseDigest(digest);
  if (!parsed.ok()) return Bad(where + ".digest", parsed.error().message);
  d.digest = *parsed;
  const json* size = Member(v, "size");
  if (size == nullptr) return Bad(where + ".size", "is missing");
  if (!size->is_number_unsigned()) return Bad(where + ".size", "must be a non-negative integer");
  d.size = size->get<uint64_t>();
  if (const json* p = Member(v, "platform")) {
    ISB_ASSIGN_OR_RETURN(d.platform, ParsePlatform(*p, where + ".platform"));
  }
  return d;
}

Status CheckSchemaVersion(const json& doc, const std::string& what) {
  const json* v = Member(doc, "schemaVersion");
  if (v == nullptr) return Bad(what + ".schemaVersion", "is missing");
  if (!v->is_number_unsigned() || v->get<uint64_t>() != 2) return Bad(what + ".schemaVersion", "must be 2");
  return {};
}

Result<std::vector<Descriptor>> DescriptorList(const json& doc, const char* key, size_t max, const std::string& what) {
  const json* list = Member(doc, key);
  if (list == nullptr) return Bad(what + "." + key, "is missing");
  if (!list->is_array()) return Bad(what + "." + key, "must be an array");
  if (list->size() > max)
    return Bad(what + "." + key,
               "has " + std::to_string(list->size()) + " entries, over the limit of " + std::to_string(max));
  std::vector<Descriptor> out;
  for (size_t i = 0; i < list->size(); ++i) {
    std::string where = what + "." + key + "[" + std::to_string(i) + "]";
    ISB_ASSIGN_OR_RETURN(Descriptor d, ParseDescriptor((*list)[i], where));
    out.push_back(std::move(d));
  }
  return out;
}

// Foreign layers (Windows base layers) and OCI's non-distributable ones carry URLs to fetch them from elsewhere.
Status CheckLayer(const json& layer, const Descriptor& d, const std::string& where) {
  Result<LayerCompression> c = LayerCompressionOf(d.media_type);
  if (!c.ok()) return Bad(where + ".mediaType", c.error().message);
  const json* urls = Member(layer, "urls");
  if (urls != nullptr && !(urls->is_array() && urls->empty()))
    return Bad(where + ".urls", "names external URLs: layers fetched from elsewhere than the registry are refused");
  return {};
}

// Digits of an arm variant ("v7" is 7); 0 when it has none.
int VariantNumber(std::string_view v) {
  if (v.size() < 2 || v[0] != 'v') return 0;
  int n = 0;
  for (char c : v.substr(1)) {
    if (c < '0' || c > '9' || n > 1000) return 0;
    n = n * 10 + (c - '0');
  }
  return n;
}

// How well `entry` suits `host`: -1 not at all, higher is better.
int Fitness(const Platform& entry, const Platform& host) {
  if (entry.os != host.os || entry.architecture != host.architecture) return -1;
  std::string want = host.variant, have = entry.variant;
  if (host.architecture == "arm64") {
    if (want.empty()) want = "v8";
    if (have.empty()) have = "v8";
  }
  if (have == want) return 1000;
  if (host.architecture != "arm") return have.empty() ? 500 : -1;
  int h = VariantNumber(want), e = VariantNumber(have);
  if (have.empty()) return 1;
  return e > 0 && e <= h ? 1 + e : -1;
}

}  // namespace

std::string ManifestAccept() {
  return std::string(media::kOciManifest) + ", " + std::string(media::kOciIndex) + ", " +
         std::string(media::kDockerManifest) + ", " + std::string(media::kDockerManifestList);
}

bool IsManifestType(std::string_view t) { return t == media::kOciManifest || t == media::kDockerManifest; }
bool IsIndexType(std::string_view t) { return t == media::kOciIndex || t == media::kDockerManifestList; }

std::string Platform::str() const { return os + "/" + architecture + (variant.empty() ? "" : "/" + variant); }

Platform HostPlatform() {
  utsname u{};
  uname(&u);
  std::string m = u.machine;
  if (m == "x86_64") return {"linux", "amd64", ""};
  if (m == "aarch64" || m == "arm64") return {"linux", "arm64", "v8"};
  if (m.starts_with("armv7")) return {"linux", "arm", "v7"};
  if (m.starts_with("armv6")) return {"linux", "arm", "v6"};
  if (m.starts_with("armv5")) return {"linux", "arm", "v5"};
  if (m == "i386" || m == "i686") return {"linux", "386", ""};
  return {"linux", m, ""};  // ppc64le, s390x, riscv64: the same names in both
}

Result<LayerCompression> LayerCompressionOf(std::string_view t) {
  if (t == media::kOciLayer) return LayerCompression::kNone;
  if (t == media::kOciLayerGzip || t == media::kDockerLayerGzip) return LayerCompression::kGzip;
  if (t == media::kOciLayerZstd) return LayerCompression::kZstd;
  std::string shown = egress::Printable(t);
  if (t.find("nondistributable") != std::string_view::npos || t.find("foreign") != std::string_view::npos)
    return Error::Of(Code::kInvalidArgument, "layer media type '" + shown +
                                                 "' is a foreign (non-distributable) layer, which isb does not fetch");
  return Error::Of(Code::kInvalidArgument,
                   "layer media type '" + shown + "' is not a layer isb unpacks (tar, tar+gzip or tar+zstd)");
}

Result<ImageManifest> ParseManifest(std::string_view bytes) {
  ISB_ASSIGN_OR_RETURN(json doc, ParseStrict(bytes, kMaxManifestBytes, "manifest"));
  ISB_TRY(CheckSchemaVersion(doc, "manifest"));
  ImageManifest m;
  ISB_ASSIGN_OR_RETURN(m.media_type, StringAt(doc, "mediaType", "manifest", false));
  if (m.media_type.empty()) m.media_type = media::kOciManifest;  // optional in OCI
  if (IsIndexType(m.media_type)) return Bad("manifest.mediaType", "is an image index, not a manifest");
  if (!IsManifestType(m.media_type))
    return Bad("manifest.mediaType",
               "'" + egress::Printable(m.media_type) + "' is not an OCI or Docker schema-2 manifest");
  const json* config = Member(doc, "config");
  if (config == nullptr) return Bad("manifest.config", "is missing");
  ISB_ASSIGN_OR_RETURN(m.config, ParseDescriptor(*config, "manifest.config"));
  if (m.config.media_type != media::kOciConfig && m.config.media_type != media::kDockerConfig)
    return Bad("manifest.config.mediaType", "'" + egress::Printable(m.config.media_type) +
                                                "' is not an image config (this is not a container image)");
  if (m.config.size > kMaxConfigBytes)
    return Bad("manifest.config.size", "is over the config limit of " + std::to_string(kMaxConfigBytes) + " bytes");
  ISB_ASSIGN_OR_RETURN(m.layers, DescriptorList(doc, "layers", kMaxLayers, "manifest"));
  for (size_t i = 0; i < m.layers.size(); ++i)
    ISB_TRY(CheckLayer(doc["layers"][i], m.layers[i], "manifest.layers[" + std::to_string(i) + "]"));
  return m;
}

Result<ImageIndex> ParseIndex(std::string_view bytes) {
  ISB_ASSIGN_OR_RETURN(json doc, ParseStrict(bytes, kMaxManifestBytes, "index"));
  ISB_TRY(CheckSchemaVersion(doc, "index"));
  ImageIndex index;
  ISB_ASSIGN_OR_RETURN(index.media_type, StringAt(doc, "mediaType", "index", false));
  if (index.media_type.empty()) index.media_type = media::kOciIndex;
  if (IsManifestType(index.media_type)) return Bad("index.mediaType", "is an image manifest, not an index");
  if (!IsIndexType(index.media_type))
    return Bad("index.mediaType",
               "'" + egress::Printable(index.media_type) + "' is not an OCI index or Docker manifest list");
  ISB_ASSIGN_OR_RETURN(index.manifests, DescriptorList(doc, "manifests", kMaxIndexEntries, "index"));
  return index;
}

Result<ImageConfig> ParseImageConfig(std::string_view bytes) {
  ISB_ASSIGN_OR_RETURN(json doc, ParseStrict(bytes, kMaxConfigBytes, "image config"));
  ImageConfig c;
  ISB_ASSIGN_OR_RETURN(c.os, StringAt(doc, "os", "image config", true));
  ISB_ASSIGN_OR_RETURN(c.architecture, StringAt(doc, "architecture", "image config", true));
  ISB_ASSIGN_OR_RETURN(c.variant, StringAt(doc, "variant", "image config", false));
  if (const json* run = Member(doc, "config")) {
    if (!run->is_object()) return Bad("image config.config", "must be an object");
    const std::string where = "image config.config";
    ISB_ASSIGN_OR_RETURN(c.env, StringsAt(*run, "Env", where));
    ISB_ASSIGN_OR_RETURN(c.entrypoint, StringsAt(*run, "Entrypoint", where));
    ISB_ASSIGN_OR_RETURN(c.cmd, StringsAt(*run, "Cmd", where));
    ISB_ASSIGN_OR_RETURN(c.working_dir, StringAt(*run, "WorkingDir", where, false));
    ISB_ASSIGN_OR_RETURN(c.user, StringAt(*run, "User", where, false));
  }
  const json* rootfs = Member(doc, "rootfs");
  if (rootfs == nullptr) return Bad("image config.rootfs", "is missing");
  if (!rootfs->is_object()) return Bad("image config.rootfs", "must be an object");
  ISB_ASSIGN_OR_RETURN(std::string type, StringAt(*rootfs, "type", "image config.rootfs", true));
  if (type != "layers") return Bad("image config.rootfs.type", "must be \"layers\"");
  ISB_ASSIGN_OR_RETURN(std::vector<std::string> ids, StringsAt(*rootfs, "diff_ids", "image config.rootfs"));
  if (ids.size() > kMaxLayers)
    return Bad("image config.rootfs.diff_ids",
               "has " + std::to_string(ids.size()) + " entries, over the limit of " + std::to_string(kMaxLayers));
  for (size_t i = 0; i < ids.size(); ++i) {
    Result<Digest> d = ParseDigest(ids[i]);
    if (!d.ok()) return Bad("image config.rootfs.diff_ids[" + std::to_string(i) + "]", d.error().message);
    c.diff_ids.push_back(*d);
  }
  return c;
}

Result<Descriptor> SelectPlatform(const ImageIndex& index, const Platform& host) {
  const Descriptor* best = nullptr;
  int best_fit = -1;
  std::string have;
  for (const Descriptor& d : index.manifests) {
    if (!IsManifestType(d.media_type) || !d.platform) continue;
    if (d.platform->os == "unknown") continue;  // attestations beside the images, not images
    if (have.size() < 400) have += (have.empty() ? "" : ", ") + egress::Printable(d.platform->str());
    int fit = Fitness(*d.platform, host);
    if (fit > best_fit) {
      best_fit = fit;
      best = &d;
    }
  }
  if (best == nullptr)
    return Error::Of(Code::kNotFound, "image index has no manifest for " + host.str() +
                                          " (it has: " + (have.empty() ? "none" : have) + ")");
  return *best;
}

namespace {

// The host's manifest somewhere under `index` (depth levels below the top), or nullopt when there is none.
Result<std::optional<Descriptor>> FindNested(const ImageIndex& index, const Platform& host, const IndexLoader& load,
                                             int depth, int& read) {
  if (Result<Descriptor> here = SelectPlatform(index, host); here.ok()) return std::optional<Descriptor>(*here);
  for (const Descriptor& d : index.manifests) {
    if (!IsIndexType(d.media_type)) continue;
    if (depth + 1 > kMaxIndexDepth)
      return Error::Of(Code::kInvalidArgument,
                       "image index: indexes nested more than " + std::to_string(kMaxIndexDepth) + " deep");
    if (++read > kMaxIndexesRead)
      return Error::Of(Code::kInvalidArgument,
                       "image index: more than " + std::to_string(kMaxIndexesRead) + " nested indexes to read");
    ISB_ASSIGN_OR_RETURN(ImageIndex inner, load(d));
    ISB_ASSIGN_OR_RETURN(std::optional<Descriptor> found, FindNested(inner, host, load, depth + 1, read));
    if (found) return found;
  }
  return std::optional<Descriptor>();
}

}  // namespace

Result<Descriptor> SelectPlatformNested(const ImageIndex& index, const Platform& host, const IndexLoader& load) {
  int read = 0;
  ISB_ASSIGN_OR_RETURN(std::optional<Descriptor> found, FindNested(index, host, load, 0, read));
  if (found) return *found;
  return SelectPlatform(index, host);  // its error: what the top index has
}

Status CheckConfigMatches(const ImageManifest& manifest, const ImageConfig& config) {
  if (manifest.layers.size() == config.diff_ids.size()) return {};
  return Error::Of(Code::kInvalidArgument, "image config lists " + std::to_string(config.diff_ids.size()) +
                                               " diff_ids for a manifest of " + std::to_string(manifest.layers.size()) +
                                               " layers");
}

}  // namespace isb::image
