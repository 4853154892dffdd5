// Roles, scopes and the rule that scopes only narrow a role.
#include "identity/roles.h"

#include <algorithm>
#include <array>

namespace isb::identity {
namespace {

constexpr std::array<std::string_view, 4> kRoleNames = {"viewer", "member", "admin", "owner"};
constexpr std::array<std::string_view, 3> kKindNames = {"read", "deploy", "admin"};
constexpr std::string_view kToolPrefix = "tool:";
constexpr std::string_view kMetricsScope = "metrics";
constexpr size_t kMaxGlob = 64;

bool GlobChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '*' || c == '?'; }

bool Covers(const Scope& scope, ScopeKind tool_kind, std::string_view tool) {
  if (scope.kind == ScopeKind::kTool) return GlobMatch(scope.glob, tool);
  if (scope.kind == ScopeKind::kMetrics) return false;
  return static_cast<int>(scope.kind) >= static_cast<int>(tool_kind);
}

}  // namespace

std::string_view RoleName(Role role) { return kRoleNames[static_cast<size_t>(role)]; }

Result<Role> ParseRole(std::string_view text) {
  for (size_t i = 0; i < kRoleNames.size(); ++i)
    if (text == kRoleNames[i]) return static_cast<Role>(i);
  return Error::Of(Code::kInvalidArgument,
                   "role: '" + std::string(text.substr(0, 32)) + "' is not a role (viewer, member, admin, owner)");
}

Result<ScopeKind> ParseToolKind(std::string_view text) {
  for (size_t i = 0; i < kKindNames.size(); ++i)
    if (text == kKindNames[i]) return static_cast<ScopeKind>(i);
  return Error::Of(Code::kInvalidArgument,
                   "tool kind: '" + std::string(text.substr(0, 32)) + "' is not a kind (read, deploy, admin)");
}

Result<Scope> ParseScope(std::string_view text) {
  if (text.starts_with(kToolPrefix)) {
    std::string_view glob = text.substr(kToolPrefix.size());
    if (glob.empty() || glob.size() > kMaxGlob || !std::all_of(glob.begin(), glob.end(), GlobChar))
      return Error::Of(Code::kInvalidArgument,
                       "scope: tool:GLOB needs a glob of 1 to 64 characters of a-z, 0-9, _, * and ?");
    return Scope{ScopeKind::kTool, std::string(glob)};
  }
  if (text == kMetricsScope) return Scope{ScopeKind::kMetrics, ""};
  auto kind = ParseToolKind(text);
  if (!kind.ok())
    return Error::Of(Code::kInvalidArgument, "scope: '" + std::string(text.substr(0, 32)) +
                                                 "' is not a scope (read, deploy, admin, metrics, tool:GLOB)");
  return Scope{*kind, ""};
}

std::string FormatScope(const Scope& scope) {
  if (scope.kind == ScopeKind::kTool) return std::string(kToolPrefix) + scope.glob;
  if (scope.kind == ScopeKind::kMetrics) return std::string(kMetricsScope);
  return std::string(kKindNames[static_cast<size_t>(scope.kind)]);
}

Result<std::vector<Scope>> ParseScopes(std::string_view text) {
  std::vector<Scope> out;
  if (text.empty()) return out;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    ISB_ASSIGN_OR_RETURN(Scope scope, ParseScope(item));
    if (std::find(out.begin(), out.end(), scope) == out.end()) out.push_back(std::move(scope));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string FormatScopes(const std::vector<Scope>& scopes) {
  std::string out;
  for (const Scope& s : scopes) {
    if (!out.empty()) out += ',';
    out += FormatScope(s);
  }
  return out;
}

bool GlobMatch(std::string_view glob, std::string_view name) {
  // Iterative with one backtrack point: linear in practice, never exponential.
  size_t g = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (g < glob.size() && (glob[g] == '?' || glob[g] == name[n])) {
      ++g;
      ++n;
    } else if (g < glob.size() && glob[g] == '*') {
      star = g++;
      mark = n;
    } else if (star != std::string_view::npos) {
      g = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (g < glob.size() && glob[g] == '*') ++g;
  return g == glob.size();
}

Status May(Role role, const std::vector<Scope>& scopes, Role least_role, ScopeKind tool_kind, std::string_view tool) {
  if (role < least_role)
    return Error::Of(Code::kForbidden, "role " + std::string(RoleName(role)) + " may not call " + std::string(tool) +
                                           ", which needs " + std::string(RoleName(least_role)));
  if (scopes.empty()) return {};
  if (tool_kind == ScopeKind::kTool) tool_kind = ScopeKind::kAdmin;  // not a kind of tool: the strictest
  for (const Scope& s : scopes)
    if (Covers(s, tool_kind, tool)) return {};
  std::string needs;
  for (size_t k = static_cast<size_t>(tool_kind); k < kKindNames.size(); ++k)
    needs += std::string(kKindNames[k]) + ", ";
  return Error::Of(Code::kForbidden, "token scopes (" + FormatScopes(scopes) + ") do not cover " + std::string(tool) +
                                         "; it needs scope " + needs + "or tool:" + std::string(tool));
}

}  // namespace isb::identity
