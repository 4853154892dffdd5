// `isb audit ls` and `isb audit export`: the org's audit rows from the daemon's audit_list tool.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {

// audit_list's largest page; export asks for pages of this size.
inline constexpr int64_t kAuditPage = 1000;

// `isb audit ls`'s table of an audit_list result: ID, TIME (UTC), ACTOR, ACTION, TARGET, OUTCOME, SURFACE.
std::string AuditTable(const json& result);

// Every row of the call's org, in id order, each given to `line` as one JSON object on one line (no newline): all
// of audit_list's fields, prev_hash and hash included. Pages through audit_list until next_after is null; the first
// failed call ends it with that error.
// With `platform`, the rows of no org (audit_list's platform).
Status ExportAudit(const ToolClient& client, const std::function<void(const std::string& line)>& line,
                   bool platform = false);

}  // namespace isb::cli
