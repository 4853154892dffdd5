// Fuzzes tool input: JSON parsing, schema validation and the sandbox tools' handlers, for every tool.
// The first byte picks the tool; the rest is the JSON body a caller would send.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_registry.h"

#include "api/json_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  isb::api::Registry& registry = FuzzRegistry();
  if (size == 0) return 0;
  auto tools = registry.List();
  const auto* tool = tools[data[0] % tools.size()];
  auto input = isb::api::ParseJson(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  if (!input.ok()) return 0;
  isb::api::CallContext ctx;
  ctx.identity = isb::api::Identity::Host();
  (void)registry.Call(tool->name, *input, ctx);
  return 0;
}
