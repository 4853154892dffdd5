// ImageService: how an org gets images — pulled from a registry, imported from an archive, exported, snapshotted —
// over the ImageStore that keeps them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "egress/dialer.h"
#include "egress/stream.h"
#include "image/blob_store.h"
#include "image/image_store.h"

namespace isb::image {

// What the daemon's operator allows of registries.
struct RegistrySettings {
  // HOST[:PORT] entries (`isb serve --registry-allow`): registries on loopback or private addresses the daemon may
  // reach. Others: public addresses only.
  std::vector<std::string> allow;
  // HOST[:PORT] entries (`--registry-insecure`) spoken to in plain http; every other registry over https.
  std::vector<std::string> insecure;
  // A PEM file of CAs trusted beside the system's (`--registry-ca`), for a registry with its own CA.
  std::string ca_file;
  // Tests: the dialer's resolver.
  egress::Resolver resolver = egress::ResolveSystem;
  // Unpacked bytes one pull may write (a decompression bomb stops here).
  uint64_t max_image_bytes = uint64_t{64} << 30;
  int parallel_layers = 4;
};

// Basic credentials for a registry (from an org secret or a host file): never logged, never in an error.
struct RegistryLogin {
  std::string user;
  std::string password;
  // Hosts it may be sent to ("name:port", "*.domain:port", as a secret's hosts are written): a registry and a token
  // realm the operator did not allow (--registry-allow) get it only when listed here.
  std::vector<std::string> hosts;
};

// Whether `host`:`port` is one of `entries` ("name:port", or "*.domain:port" for names below domain).
bool HostListed(const std::vector<std::string>& entries, const std::string& host, uint16_t port);

struct PullProgress {
  std::string phase;   // "manifest", "layer", "done"
  std::string layer;   // the layer's digest, for "layer"
  uint64_t done = 0;   // bytes of it fetched
  uint64_t total = 0;  // its size
};
using PullProgressFn = std::function<void(const PullProgress&)>;

class ImageService {
 public:
  // `store` must outlive the service. Errors (kInvalidArgument) name a bad allow entry or CA file.
  static Result<std::unique_ptr<ImageService>> Create(ImageStore& store, RegistrySettings settings);
  ~ImageService();

  ImageStore& store() { return store_; }
  // Whether the operator allowed this registry (HOST[:PORT] as in a reference) with --registry-allow.
  bool OperatorAllows(const std::string& registry) const;

  // Fetches `ref` (manifest, or the index's entry for this host's platform; its config; its layers, in parallel,
  // each verified and unpacked as it streams) and records it as `org`'s image under its normalized name. Layers
  // already stored are not fetched again. `cancelled` is asked between steps. No layer unpacks to more than
  // `max_bytes` (the room the org's disk quota leaves; RegistrySettings::max_image_bytes bounds it too).
  Result<ImageRecord> Pull(const std::string& org, const std::string& ref, const std::optional<RegistryLogin>& login,
                           const PullProgressFn& progress, const std::function<bool()>& cancelled,
                           uint64_t max_bytes = UINT64_MAX);

  // An OCI layout (a directory or a tar of one) or a `docker save` archive at `path` on the host: each image in it
  // recorded as `org`'s (named by its annotation or RepoTags; `name` overrides when the archive holds one image).
  Result<std::vector<ImageRecord>> Import(const std::string& org, const std::string& path, const std::string& name);

  // `org`'s image `ref` as an OCI archive (a tar of an OCI layout) at `path`, which skopeo and podman read.
  Status Export(const std::string& org, const std::string& ref, const std::string& path);

  // A sandbox's writable layer as a new image of `org`: `upper` (an overlay upper dir whose files belong to the
  // sandbox's ids from `uid_base`) made into a layer on top of `base` (empty: the sandbox had no image), named
  // `name`. `exclude` are paths (relative, no leading '/') left out.
  Result<ImageRecord> Snapshot(const std::string& org, const std::string& name, const std::optional<ImageRecord>& base,
                               const std::string& upper, uint32_t uid_base, const std::vector<std::string>& exclude);

 private:
  ImageService(ImageStore& store, BlobStore blobs, RegistrySettings settings, egress::Dialer dialer,
               std::shared_ptr<const egress::TlsTrust> trust);
  // One layer of a pull: fetched, stored as a blob and unpacked at once (image_pull.cc).
  struct PullJob;
  Result<ImageRecord> PullOnce(const std::string& org, const std::string& ref,
                               const std::optional<RegistryLogin>& login, const PullProgressFn& progress,
                               const std::function<bool()>& cancelled, uint64_t max_bytes);
  Result<LayerRecord> PullLayer(PullJob& job, size_t index);

  ImageStore& store_;
  BlobStore blobs_;
  const RegistrySettings settings_;
  egress::Dialer dialer_;
  std::shared_ptr<const egress::TlsTrust> trust_;
};

}  // namespace isb::image
