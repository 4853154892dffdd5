// The names of every tool the daemon serves, for the e2e suite and the api tests' role matrix.
#pragma once

#include <string>
#include <vector>

namespace isb::e2e {

// Every tool the daemon serves.
inline const std::vector<std::string> kAllTools = {"sandbox_create",
                                                   "sandbox_exec",
                                                   "sandbox_exec_input",
                                                   "sandbox_exec_resize",
                                                   "sandbox_file_read",
                                                   "sandbox_file_write",
                                                   "sandbox_list",
                                                   "sandbox_get",
                                                   "sandbox_stop",
                                                   "sandbox_start",
                                                   "sandbox_extend",
                                                   "sandbox_remove",
                                                   "sandbox_egress_set",
                                                   "whoami",
                                                   "user_create",
                                                   "user_list",
                                                   "token_create",
                                                   "token_list",
                                                   "token_revoke",
                                                   "org_list",
                                                   "org_get",
                                                   "org_create",
                                                   "org_delete",
                                                   "member_list",
                                                   "member_add",
                                                   "member_update",
                                                   "member_remove",
                                                   "invitation_create",
                                                   "invitation_accept",
                                                   "invitation_list",
                                                   "invitation_revoke",
                                                   "org_update",
                                                   "user_revoke",
                                                   "session_list",
                                                   "session_revoke",
                                                   "org_quota_set",
                                                   "audit_list",
                                                   "audit_verify",
                                                   "history_query",
                                                   "secret_create",
                                                   "secret_set",
                                                   "secret_import",
                                                   "secret_delete",
                                                   "secret_get",
                                                   "secret_list",
                                                   "secret_inspect",
                                                   "secret_recipient",
                                                   "secret_reencrypt",
                                                   "image_pull",
                                                   "image_list",
                                                   "image_inspect",
                                                   "image_remove",
                                                   "image_import",
                                                   "image_export",
                                                   "sandbox_snapshot",
                                                   "sandbox_usage",
                                                   "sandbox_port_open",
                                                   "sandbox_port_close",
                                                   "sandbox_logs"};

// The tools annotated read-only: a call of one that succeeds leaves no audit row (every other call does), unless
// it is one of kAuditedReads.
inline const std::vector<std::string> kReadOnlyTools = {
    "sandbox_list", "sandbox_get",   "sandbox_file_read", "whoami",          "user_list",    "token_list",
    "org_list",     "org_get",       "member_list",       "invitation_list", "session_list", "audit_list",
    "audit_verify", "history_query", "secret_get",        "secret_inspect",  "secret_list",  "secret_recipient",
    "image_list",   "image_inspect", "sandbox_usage",     "sandbox_logs"};

// Read-only tools whose every call is an audit row: a secret's value read.
inline const std::vector<std::string> kAuditedReads = {"secret_get"};

}  // namespace isb::e2e
