// Fuzzes the egress field: JSON in, ParseEgressSpec, then the properties a parsed spec must keep: its canonical
// JSON parses back to the same spec, and the matcher agrees with every entry. The raw bytes are also a host name
// and a pin, since the proxy and the flags see such text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "api/json_util.h"
#include "egress/address.h"
#include "egress/pin.h"
#include "egress/policy.h"

namespace {

using isb::egress::EgressMode;
using isb::egress::EgressPolicy;
using isb::egress::HostRule;
using isb::egress::Verdict;

void Require(bool ok) {
  if (!ok) __builtin_trap();
}

// The host an entry must match: the name itself, or one label below a wildcard's domain.
std::string HostFor(const HostRule& r) { return r.wildcard ? "x." + r.name : r.name; }

void CheckEntries(const EgressPolicy& policy) {
  const auto& spec = policy.spec();
  if (spec.mode == EgressMode::kAllowlist) {
    for (const HostRule& r : spec.allow) {
      if (HostFor(r).size() <= 253) Require(policy.Check(HostFor(r), *r.port).verdict == Verdict::kAllow);
    }
  }
  if (spec.mode == EgressMode::kBlocklist) {
    for (const HostRule& r : spec.block) {
      if (HostFor(r).size() <= 253) Require(policy.Check(HostFor(r), r.port.value_or(443)).verdict == Verdict::kDeny);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)isb::egress::ParseIpAddress(text);
  (void)isb::egress::ParsePin(text);
  static const EgressPolicy kFixed(*isb::egress::ParseEgressSpec(
      nlohmann::json::parse(R"({"allow": ["a.example", "*.b.example:8443"], "judge": ["*.j.example"]})")));
  (void)kFixed.Check(text, 443);

  auto input = isb::api::ParseJson(text);
  if (!input.ok()) return 0;
  auto spec = isb::egress::ParseEgressSpec(*input);
  if (!spec.ok()) return 0;
  auto again = isb::egress::ParseEgressSpec(isb::egress::EgressSpecToJson(*spec));
  Require(again.ok() && *again == *spec);
  EgressPolicy policy(std::move(*spec));
  CheckEntries(policy);
  for (uint16_t port : policy.ListedPorts()) (void)policy.SingleHostOnPort(port);
  return 0;
}
