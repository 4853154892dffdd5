// sandbox_port_open and sandbox_port_close: one-time links to a port preview of a sandbox, and ending its previews.
#pragma once

#include "api/preview_access.h"
#include "api/registry.h"
#include "api/sandboxes.h"

namespace isb::api {

// Members and up, in the sandbox's org; both change what may be reached, so both are audited. `sandboxes` and
// `access` must outlive `registry`.
Status AddPreviewTools(Registry& registry, Sandboxes& sandboxes, PreviewAccess& access);

}  // namespace isb::api
