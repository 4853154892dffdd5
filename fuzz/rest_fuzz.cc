// Fuzzes the REST surface: the first byte picks the route, the rest is the body.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_registry.h"

#include "api/rest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  isb::api::Registry& registry = FuzzRegistry();
  static isb::api::RestApi rest(registry, "fuzz");
  if (size == 0) return 0;
  auto tools = registry.List();
  isb::api::Request req;
  req.method = "POST";
  req.target = "/api/v1/tools/" + tools[data[0] % tools.size()]->name + ((data[0] & 0x80) ? "?stream=1" : "");
  req.headers.Add("Content-Type", "application/json");
  req.body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto resp = rest.Handle(req, isb::api::Identity::Host());
  if (resp.stream) resp.stream([](std::string_view) { return true; });
  return 0;
}
