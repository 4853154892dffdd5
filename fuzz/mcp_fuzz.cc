// Fuzzes the MCP endpoint: any body, with and without a session, on both protocol revisions; in a 2025-03-26
// session, a JSON array is a batch.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_registry.h"

#include "api/mcp.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  isb::api::Registry& registry = FuzzRegistry();
  static isb::api::McpServer mcp(registry, isb::api::McpOptions{});
  if (size == 0) return 0;
  isb::api::Request req;
  req.method = (data[0] & 3) == 3 ? "DELETE" : "POST";
  req.target = (data[0] & 4) ? "/orgs/default/mcp" : "/mcp";
  req.headers.Add("Content-Type", "application/json");
  req.headers.Add("Accept", "application/json, text/event-stream");
  if (data[0] & 8) req.headers.Add("MCP-Protocol-Version", (data[0] & 16) ? "2026-07-28" : "2025-11-25");
  if (data[0] & 32) req.headers.Add("Mcp-Method", "tools/call");
  if (data[0] & 64) {
    // A session of the revision with batches, new for each input (the fuzzer's own initializes may evict one).
    isb::api::Request init;
    init.method = "POST";
    init.target = req.target;
    init.headers.Add("Content-Type", "application/json");
    init.body = R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}})";
    std::string sid = mcp.Handle(init, isb::api::Identity::Host()).headers.Get("Mcp-Session-Id");
    if (!sid.empty()) req.headers.Add("Mcp-Session-Id", sid);
  }
  req.body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto resp = mcp.Handle(req, isb::api::Identity::Host());
  if (resp.stream) resp.stream([](std::string_view) { return true; });
  return 0;
}
