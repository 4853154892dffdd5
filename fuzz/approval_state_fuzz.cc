// Fuzzes a stateless MCP approval's requestState as a client sends it back: any bytes, and a state this harness
// issued with its tail replaced by the input. Nothing but the state issued for the call may be redeemed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/mcp_approval.h"

using namespace isb;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static api::ApprovalStates states(std::string(32, 'k'), std::chrono::seconds(300), [] { return int64_t{1000}; });
  const api::ApprovalCall call{"token/1/1/token:1", "default", "sandbox_remove", R"({"sandbox":"a"})"};
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (states.Redeem(in, call).ok()) abort();  // a state nobody issued
  auto issued = states.Issue(call);
  if (!issued.ok()) abort();
  // The input spliced into an issued state: unless the input changed nothing, it is refused.
  std::string spliced = issued->substr(0, size % (issued->size() + 1)) + std::string(in);
  if (spliced != *issued && states.Redeem(spliced, call).ok()) abort();
  return 0;
}
