// `isb audit ls`, `isb audit export` and `isb history`: the rows of audit_list and history_query as the CLI prints
// them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {

// audit_list's largest page; export asks for pages of this size.
inline constexpr int64_t kAuditPage = 1000;

// 1700000000123 (unix milliseconds) -> "2023-11-14T22:13:20Z".
std::string UtcTime(int64_t ms);

// `isb audit ls`'s table of an audit_list result: ID, TIME (UTC), ACTOR, ACTION, TARGET, OUTCOME, SURFACE.
std::string AuditTable(const json& result);

// `isb history`'s table of a history_query result: ID, TIME (UTC), SANDBOX, EVENT, ACTOR, REASON.
std::string HistoryTable(const json& result);

// Every row of the call's org, in id order, each given to `line` as one JSON object on one line (no newline): all
// of audit_list's fields, prev_hash and hash included. Pages through audit_list until next_after is null; the first
// failed call ends it with that error.
// With `platform`, the rows of no org (audit_list's platform).
Status ExportAudit(const ToolClient& client, const std::function<void(const std::string& line)>& line,
                   bool platform = false);

}  // namespace isb::cli
