// The daemon's images: the store under <state>/images, the service that pulls, imports, exports and snapshots, and
// what their tools do, wired to the sandboxes and the secret store.
#pragma once

#include <memory>
#include <string>

#include "api/image_tools.h"
#include "api/quota_gate.h"
#include "api/registry.h"
#include "api/sandbox_tools.h"
#include "base/result.h"
#include "daemon/sandbox_manager.h"
#include "image/image_service.h"
#include "image/image_store.h"
#include "secrets/secret_store.h"

namespace isb::daemon {

struct DaemonImages {
  std::unique_ptr<image::ImageStore> store;
  std::unique_ptr<image::ImageService> service;
};

// Opens <state_dir>/images. Errors name the flag at fault (--registry-allow, --registry-ca).
Result<DaemonImages> OpenDaemonImages(const std::string& state_dir, image::RegistrySettings settings);

// What the image tools and sandbox_snapshot do in the daemon (api::RegisterAllTools registers them), over `images`,
// `manager` (who uses an image, a sandbox's layer) and `secrets` (a registry login an org keeps as a secret). All must
// outlive the registry. `may_read_secrets` says whether a caller may use a secret's value as secret_get would give
// it; `quotas` gives an org's quota (images count against its disk quota beside its sandboxes' disks).
api::ImageToolOptions DaemonImageToolOptions(DaemonImages& images, SandboxManager& manager,
                                             secrets::SecretStore& secrets,
                                             std::function<Status(const api::CallContext& ctx)> may_read_secrets,
                                             api::QuotaGate::Lookup quotas);

// sandbox_create's resolution of an image reference among the org's images.
std::function<Result<api::ResolvedImage>(const std::string& org, const std::string& ref,
                                         const std::function<Status(uint64_t max_bytes)>& may_flatten)>
ImageResolver(const DaemonImages& images);

}  // namespace isb::daemon
