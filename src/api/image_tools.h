// The image tools: an org's images, pulled from registries, imported from archives on the host, exported, listed,
// inspected and removed, and sandboxes snapshotted into new ones.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/image_quota.h"
#include "api/registry.h"
#include "api/sandbox_tools.h"
#include "image/image_service.h"

namespace isb::api {

struct ImageToolOptions {
  // The org's sandboxes made from the image with manifest digest `digest` (their names or ids): image_inspect shows
  // them, image_remove is refused while there are any.
  std::function<std::vector<std::string>(const std::string& org, const std::string& digest)> users{};
  // The login an org secret holds ("USER:PASSWORD") for image_pull's `auth_secret`, to the registry of `ref`: the
  // caller needs what secret_get needs, and the registry must be one of the secret's hosts or allowed by the
  // operator. Unset: no secrets store.
  std::function<Result<image::RegistryLogin>(const CallContext& ctx, const std::string& secret, const std::string& ref)>
      login{};
  // The diff_ids of the layers sandboxes are made from: garbage collection keeps them whatever the records say.
  std::function<std::vector<std::string>()> in_use{};
  // sandbox_snapshot: the sandbox `ref` of `org` made into the image `name`. Unset: no snapshots.
  std::function<Result<image::ImageRecord>(const std::string& org, const std::string& ref, const std::string& name)>
      snapshot{};
  // The org's disk quota: its images count against it beside its sandboxes' disks (a pull, import or snapshot that
  // would pass it is refused and undone). Unset: no quotas.
  ImageDiskQuotaFn disk_quota{};
};

// image_pull (members; streams progress), image_list and image_inspect (viewers), image_remove (members; refused
// while a sandbox uses the image), image_import and image_export (the host only: they name files on it), and
// sandbox_snapshot (members). `images` must outlive the registry.
Status AddImageTools(Registry& registry, image::ImageService& images, ImageToolOptions options);

// An image as the tools show it.
nlohmann::json ImageJson(const image::ImageRecord& record);

// The image of `org` that `ref` names, resolved for a sandbox: its layers' directories (an image deeper than a
// sandbox stacks has its lowest ones flattened into one, made here the first time: ImageStore::StackedLayerRoots)
// and config. User names in the config are looked up in the image's own /etc/passwd and /etc/group. `may_flatten` is
// asked before a flatten is made and may refuse it (ImageStore::StackedLayerRoots).
Result<ResolvedImage> ResolveImage(image::ImageStore& store, const std::string& org, const std::string& ref,
                                   const image::FlattenGate& may_flatten = nullptr);

}  // namespace isb::api
