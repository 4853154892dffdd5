// The tool policy of `isb serve --allow-tools/--deny-tools`: which tools remote callers see and may call.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace isb::api {

// A tool's name: 1 to 64 characters of a-z, 0-9 and '_' (so no list entry can hold more than one name, and no
// name is mistaken for a glob). The registry takes no other.
bool IsToolName(std::string_view name);

class ToolPolicy {
 public:
  // The default: every tool.
  ToolPolicy() = default;

  // `allow` and `deny`: comma-separated tool names or globs (`*` any run, `?` one character) of a-z, 0-9, '_', '*'
  // and '?', each 1 to 64 characters. An empty `allow` allows every tool; deny wins over allow. An empty entry
  // ("a,,b") or one with another character is kInvalidArgument naming the flag and the entry.
  static Result<ToolPolicy> Parse(std::string_view allow, std::string_view deny);

  // Whether a remote caller may see and call `tool`; never a string that is not a tool name.
  bool Allows(std::string_view tool) const;

 private:
  std::vector<std::string> allow_, deny_;
};

}  // namespace isb::api
