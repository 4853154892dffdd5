// Every tool family, registered in one place.
#include "api/all_tools.h"

#include "api/audit_tools.h"
#include "api/identity_tools.h"
#include "api/org_tools.h"
#include "api/preview_tools.h"
#include "api/secret_tools.h"
#include "audit/history.h"
#include "audit/log.h"
#include "identity/store.h"
#include "secrets/secret_store.h"

namespace isb::api {

Status RegisterAllTools(Registry& registry, const ToolDeps& deps) {
  ImageToolOptions image_options = deps.image_options;
  // AddImageTools leaves out sandbox_snapshot without a snapshot; here every tool exists whatever the options.
  if (!image_options.snapshot) {
    image_options.snapshot = [](const std::string&, const std::string&,
                                const std::string&) -> Result<image::ImageRecord> {
      return Error::Of(Code::kUnavailable, "sandbox_snapshot: no snapshots here");
    };
  }
  ISB_TRY(AddSandboxTools(registry, deps.sandboxes, deps.sandbox_options));
  ISB_TRY(AddPreviewTools(registry, deps.sandboxes, deps.previews));
  ISB_TRY(AddIdentityTools(registry, deps.identity));
  ISB_TRY(AddOrgTools(registry, deps.identity));
  ISB_TRY(AddAuditTools(registry, deps.audit_log, deps.history, deps.sandboxes));
  ISB_TRY(AddSecretTools(registry, deps.secrets));
  return AddImageTools(registry, deps.images, std::move(image_options));
}

}  // namespace isb::api
