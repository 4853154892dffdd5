// Image manifests, indexes and configs of OCI and Docker schema 2: their media types, strict parsers with size caps,
// and the choice of the host's platform from an index.
#pragma once

#include <cstdint>
#include <optional>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "image/digest.h"

namespace isb::image {

namespace media {
inline constexpr std::string_view kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr std::string_view kDockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kOciConfig = "application/vnd.oci.image.config.v1+json";
inline constexpr std::string_view kDockerConfig = "application/vnd.docker.container.image.v1+json";
inline constexpr std::string_view kOciLayer = "application/vnd.oci.image.layer.v1.tar";
inline constexpr std::string_view kOciLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip";
inline constexpr std::string_view kOciLayerZstd = "application/vnd.oci.image.layer.v1.tar+zstd";
inline constexpr std::string_view kDockerLayerGzip = "application/vnd.docker.image.rootfs.diff.tar.gzip";
}  // namespace media

// The Accept header of a manifest request: all four manifest types.
std::string ManifestAccept();
bool IsManifestType(std::string_view media_type);  // OCI manifest or Docker schema-2 manifest
bool IsIndexType(std::string_view media_type);     // OCI index or Docker manifest list

inline constexpr size_t kMaxManifestBytes = 4 << 20;
inline constexpr size_t kMaxConfigBytes = 8 << 20;
inline constexpr size_t kMaxLayers = 256;
inline constexpr size_t kMaxIndexEntries = 1024;

enum class LayerCompression { kNone, kGzip, kZstd };

struct Platform {
  std::string os;            // "linux"
  std::string architecture;  // "amd64", "arm64", "arm"
  std::string variant;       // "v8", "v7", or empty
  std::string str() const;   // "linux/arm/v7", "linux/amd64"
  bool operator==(const Platform&) const = default;
};

// The platform this process runs on (uname(2)), in OCI's terms: x86_64 is linux/amd64, aarch64 linux/arm64/v8.
Platform HostPlatform();

struct Descriptor {
  std::string media_type;
  Digest digest;
  uint64_t size = 0;
  std::optional<Platform> platform;  // index entries
  bool operator==(const Descriptor&) const = default;
};

struct ImageManifest {
  std::string media_type;  // kOciManifest or kDockerManifest
  Descriptor config;
  std::vector<Descriptor> layers;  // base first; media types checked, see LayerCompressionOf
};

struct ImageIndex {
  std::string media_type;  // kOciIndex or kDockerManifestList
  std::vector<Descriptor> manifests;
};

struct ImageConfig {
  std::string os;
  std::string architecture;
  std::string variant;
  std::vector<std::string> env;  // "KEY=VALUE"
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string working_dir;
  std::string user;
  std::vector<Digest> diff_ids;  // rootfs.diff_ids: the uncompressed layers' digests, base first
};

// The compression of a layer media type the unpacker takes. Errors (kInvalidArgument) name the type: foreign and
// non-distributable layers (fetched from elsewhere than the registry) and every type not listed in media::.
Result<LayerCompression> LayerCompressionOf(std::string_view media_type);

// Strict JSON (no duplicate keys, depth-limited) of at most kMaxManifestBytes (kTooLarge), schemaVersion 2, a known
// manifest media type, an image config, at most kMaxLayers layers each of a type LayerCompressionOf takes and without
// external urls. Errors (kInvalidArgument) name the field: "manifest: layers[1].digest: digest 'x' ...".
Result<ImageManifest> ParseManifest(std::string_view bytes);
// The same for an index or manifest list: at most kMaxIndexEntries entries, each a descriptor.
Result<ImageIndex> ParseIndex(std::string_view bytes);
// An image config of at most kMaxConfigBytes: the fields above; fields isb does not use are ignored.
Result<ImageConfig> ParseImageConfig(std::string_view bytes);

// The manifest of `index` for `host`: os and architecture equal; for arm, the exact variant first, then the highest
// older one the host runs (a v7 host runs v6 and v5 images); arm64's variant v8 is the same as none. Entries of
// nested indexes and of other platforms are passed over. Errors (kNotFound) name the host and what the index has.
Result<Descriptor> SelectPlatform(const ImageIndex& index, const Platform& host);

// An index may list other indexes (an index of multi-platform images, as some build tools write): how deep isb looks
// and how many it reads for one image.
inline constexpr int kMaxIndexDepth = 4;
inline constexpr int kMaxIndexesRead = 16;
// Reads the index a descriptor names (verified against its digest by the caller's store or registry).
using IndexLoader = std::function<Result<ImageIndex>(const Descriptor& index)>;
// SelectPlatform, and when `index` has no manifest for `host`, the same in the indexes it lists, in their order,
// depth first: the first that has one. Errors: SelectPlatform's for the top index when none has one; kInvalidArgument
// past kMaxIndexDepth levels or kMaxIndexesRead indexes (an index that lists itself ends there); the loader's.
Result<Descriptor> SelectPlatformNested(const ImageIndex& index, const Platform& host, const IndexLoader& load);

// Whether `config` belongs to `manifest`: one diff_id per layer. Errors (kInvalidArgument) give both counts.
Status CheckConfigMatches(const ImageManifest& manifest, const ImageConfig& config);

}  // namespace isb::image
