// Fuzzes the sandbox spec's caller parser behind sandbox_create's schema, with two properties: a spec it accepts
// passes the one validator, and its stored form reads back as the same spec.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_registry.h"

#include "api/json_util.h"
#include "spec/spec_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const isb::api::Tool* create = FuzzRegistry().Find("sandbox_create");
  auto input = isb::api::ParseJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!input.ok() || !FuzzRegistry().ValidateInput(*create, *input).ok()) return 0;
  auto spec = isb::spec::FromCallerJson(*input);
  if (!spec.ok()) return 0;
  if (!isb::spec::Validate(*spec).ok()) std::abort();
  const isb::spec::SandboxSpec back = isb::spec::FromStoredJson(isb::spec::ToStoredJson(*spec));
  if (isb::spec::ToJson(back) != isb::spec::ToJson(*spec)) std::abort();
  return 0;
}
