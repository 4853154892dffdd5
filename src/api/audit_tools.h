// The accountability tools: audit_list (an org's audit log), audit_verify (both hash chains) and history_query (a
// sandbox's lifecycle events).
#pragma once

#include "api/registry.h"
#include "api/sandboxes.h"
#include "audit/history.h"
#include "audit/log.h"

namespace isb::api {

// audit_list (the call's org's admins: that org's rows only, whoever calls), audit_verify (platform admins) and
// history_query (the org's viewers: the events of one sandbox of the call's org, found through OrgSandboxes, or of
// all the org's sandboxes by the org recorded with each event).
// `log`, `history` and `sandboxes` must outlive the registry.
Status AddAuditTools(Registry& registry, audit::AuditLog& log, audit::History& history, Sandboxes& sandboxes);

}  // namespace isb::api
