// Roles in an org (viewer < member < admin < owner) and token scopes, which only ever narrow a role.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace isb::identity {

// Ordered: a higher role may do everything a lower one may.
enum class Role { kViewer = 0, kMember = 1, kAdmin = 2, kOwner = 3 };

std::string_view RoleName(Role role);
// "viewer" | "member" | "admin" | "owner"; anything else is kInvalidArgument.
Result<Role> ParseRole(std::string_view text);

// A token's scope. read < deploy < admin cover the tools of their kind and the kinds below; tool:GLOB covers the tools
// whose names match GLOB (`*` any run, `?` one character) whatever their kind. metrics covers no tool: it lets a
// platform admin's token read GET /metrics (api/metrics_endpoint.h), for a scraper that may do nothing else.
enum class ScopeKind { kRead, kDeploy, kAdmin, kTool, kMetrics };

struct Scope {
  ScopeKind kind = ScopeKind::kRead;
  std::string glob;  // kTool only
  bool operator==(const Scope&) const = default;
};

// "read" | "deploy" | "admin" | "metrics" | "tool:GLOB" with GLOB of [a-z0-9_*?], 1..64 characters.
Result<Scope> ParseScope(std::string_view text);
std::string FormatScope(const Scope& scope);
// Comma-separated; "" is no scope at all (the role's full power). Duplicates are dropped.
Result<std::vector<Scope>> ParseScopes(std::string_view text);
std::string FormatScopes(const std::vector<Scope>& scopes);
// Kind of tool: "read" | "deploy" | "admin" (tool:GLOB is a scope, not a kind of tool).
Result<ScopeKind> ParseToolKind(std::string_view text);

// `*` matches any run of characters, `?` exactly one; everything else itself.
bool GlobMatch(std::string_view glob, std::string_view name);

// Whether a caller holding `role` (in the org the call is about) with `scopes` (empty: unscoped) may call `tool`,
// which needs at least `least_role` and is of kind `tool_kind` (kRead, kDeploy or kAdmin). OK, or kForbidden with the
// reason, naming the role or scope that is missing.
Status May(Role role, const std::vector<Scope>& scopes, Role least_role, ScopeKind tool_kind, std::string_view tool);

}  // namespace isb::identity
