// Fuzzes what remote callers and operators hand the policies: ${VAR} text of a remote spec, and tool lists.
// The first byte picks the parser; the rest is its input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/spec_policy.h"
#include "api/tool_policy.h"

using namespace isb::api;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 2) {
    case 0: {
      static const std::map<std::string, std::string> kVars = {{"A", "$"}, {"B_2", "${A}"}, {"E", ""}};
      auto out = ExpandVars(in, kVars);
      // Text without '$' is its own expansion.
      if (in.find('$') == std::string_view::npos && (!out.ok() || *out != in)) abort();
      break;
    }
    case 1: {
      // allow \n deny \n tool
      size_t a = in.find('\n');
      size_t b = a == std::string_view::npos ? a : in.find('\n', a + 1);
      if (b == std::string_view::npos) break;
      auto policy = ToolPolicy::Parse(in.substr(0, a), in.substr(a + 1, b - a - 1));
      if (!policy.ok()) break;
      std::string_view tool = in.substr(b + 1);
      // Deny wins: a tool matched by a deny entry equal to its own name is never allowed; and a string that is no
      // tool name (a comma in it, say) is allowed by no list.
      if (in.substr(a + 1, b - a - 1) == tool && policy->Allows(tool)) abort();
      if (!IsToolName(tool) && policy->Allows(tool)) abort();
      break;
    }
  }
  return 0;
}
