// Every tool isb serves, registered by one function: the daemon, the docs generator and the role matrix call it, so
// the set of tools is written down once.
#pragma once

#include "api/image_tools.h"
#include "api/preview_access.h"
#include "api/registry.h"
#include "api/sandbox_tools.h"
#include "api/sandboxes.h"
#include "base/result.h"

namespace isb::audit {
class AuditLog;
class History;
}  // namespace isb::audit
namespace isb::identity {
class IdentityStore;
}  // namespace isb::identity
namespace isb::secrets {
class SecretStore;
}  // namespace isb::secrets

namespace isb::api {

// What the tool families act on. The daemon gives its own services; the docs generator and the role matrix, which
// never run a tool, give throwaway stores and sandboxes that refuse. All must outlive the registry.
struct ToolDeps {
  Sandboxes& sandboxes;
  PreviewAccess& previews;
  identity::IdentityStore& identity;
  audit::AuditLog& audit_log;
  audit::History& history;
  secrets::SecretStore& secrets;
  image::ImageService& images;
  // What a call does, never whether its tool exists.
  SandboxToolOptions sandbox_options{};
  // An unset snapshot: sandbox_snapshot exists all the same and refuses every call.
  ImageToolOptions image_options{};
};

// The sandbox_* tools, port previews, identity, orgs, audit, secrets and images: every tool, whatever the options.
// A duplicate name is a wiring bug (kInternal, from Registry::Add).
Status RegisterAllTools(Registry& registry, const ToolDeps& deps);

}  // namespace isb::api
