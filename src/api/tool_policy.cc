// Parsing the tool lists and judging a tool name against them, with identity's glob.
#include "api/tool_policy.h"

#include <algorithm>

#include "api/json_util.h"
#include "identity/roles.h"

namespace isb::api {
namespace {

constexpr size_t kMaxEntry = 64;

bool EntryChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '*' || c == '?'; }

Result<std::vector<std::string>> ParseList(std::string_view flag, std::string_view text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string_view entry = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    if (entry.empty() || entry.size() > kMaxEntry || !std::all_of(entry.begin(), entry.end(), EntryChar)) {
      return Error::Of(Code::kInvalidArgument,
                       std::string(flag) + ": '" + SanitizeUtf8(entry.substr(0, kMaxEntry)) +
                           "' is not a tool name or glob (1 to 64 characters of a-z, 0-9, _, * and ?)");
    }
    out.emplace_back(entry);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool AnyMatches(const std::vector<std::string>& globs, std::string_view tool) {
  return std::any_of(globs.begin(), globs.end(), [tool](const std::string& g) { return identity::GlobMatch(g, tool); });
}

}  // namespace

bool IsToolName(std::string_view name) {
  return !name.empty() && name.size() <= kMaxEntry && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

Result<ToolPolicy> ToolPolicy::Parse(std::string_view allow, std::string_view deny) {
  ToolPolicy policy;
  ISB_ASSIGN_OR_RETURN(policy.allow_, ParseList("--allow-tools", allow));
  ISB_ASSIGN_OR_RETURN(policy.deny_, ParseList("--deny-tools", deny));
  return policy;
}

bool ToolPolicy::Allows(std::string_view tool) const {
  if (!IsToolName(tool) || AnyMatches(deny_, tool)) return false;
  return allow_.empty() || AnyMatches(allow_, tool);
}

}  // namespace isb::api
