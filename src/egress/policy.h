// A sandbox's egress: the spec's `egress` field, parsed and checked, and the matcher that judges each connection.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "egress/public_suffix.h"

namespace isb::egress {

enum class EgressMode {
  kNone,       // loopback only, no address, no DNS (isb's default)
  kOpen,       // NAT out to public addresses
  kAllowlist,  // only listed names (and judged ones the judge allows)
  kBlocklist,  // every public name but the listed ones
};

// One entry: "example.com", "example.com:8443", "*.example.com" (names below example.com, not example.com itself).
struct HostRule {
  std::string name;  // normalized; for a wildcard the domain below which it matches, without "*."
  bool wildcard = false;
  std::optional<uint16_t> port;  // nullopt only for block entries without a port: every port
  std::string ToString() const;  // "*.example.com:443"
  bool operator==(const HostRule&) const = default;
};

// A secret the proxy substitutes for its placeholder on the way to its hosts: the sandbox's environment holds the
// placeholder in `env`, never the value.
struct SecretRule {
  std::string name;             // the org secret's name
  std::vector<HostRule> hosts;  // empty: the hosts the secret itself is approved for
  std::string env{};            // the variable holding the placeholder; empty: from the name
  // The variable the placeholder is given in: `env`, or the name with each character a variable cannot hold ('.',
  // '-') as '_' ("gh-token.v2" in gh_token_v2).
  std::string Variable() const;
  bool operator==(const SecretRule&) const = default;
};

// A secret's name: 1 to 128 letters, digits, '_', '-' or '.'.
bool IsValidSecretName(std::string_view name);

// What the proxy does with a placeholder headed where its secret may not go (another host, plain HTTP): forward it
// as it is (the host gets the placeholder), refuse the request (403 naming the secret), or stop the sandbox.
enum class OnLeak { kPass, kBlock, kStop };
const char* OnLeakName(OnLeak on_leak);  // "pass", "block", "stop"

struct EgressSpec {
  EgressMode mode = EgressMode::kNone;
  std::vector<HostRule> allow;  // kAllowlist
  std::vector<HostRule> block;  // kBlocklist
  std::vector<HostRule> judge;  // either list mode: decided per request by the judge
  std::vector<SecretRule> secrets;
  OnLeak on_leak = OnLeak::kPass;
  bool operator==(const EgressSpec&) const = default;
};

// More than a user needs; the matcher's cost does not grow with it.
inline constexpr size_t kMaxEgressEntries = 16384;

// The `egress` field: null, "none", "open", a list of "host[:port]" (port 443 unless given), or an object with
// "allow" (a list as above), "block" (entries without a port block every port), "judge" (entries, port 443 unless
// given), "secrets" ("NAME" or {"name": NAME, "env": VARIABLE, "hosts": [...]}) and "on_leak" ("pass", "block" or
// "stop"; only with secrets). "allow" and "block" exclude each other; an
// empty list, or an object with no allow or judge entry and no block key, is none; "none" combines with nothing.
// Refused: IP addresses, wildcards anywhere but as the whole first label, a wildcard over a single label ("*.com")
// or over a public suffix ("*.co.uk", "*.github.io"), invalid names and ports. Errors (kInvalidArgument) name the
// entry and the reason; kUnavailable when a wildcard needs the public suffix list and it cannot be read.
// `suffixes` is the list or why it could not be loaded: then only a spec without wildcards parses.
Result<EgressSpec> ParseEgressSpec(const nlohmann::json& value, const Result<const PublicSuffixList*>& suffixes);
Result<EgressSpec> ParseEgressSpec(const nlohmann::json& value);  // with PublicSuffixList::System()

// The canonical JSON of a spec; ParseEgressSpec reads it back to an equal spec.
nlohmann::json EgressSpecToJson(const EgressSpec& spec);

enum class Verdict { kAllow, kDeny, kAskJudge };

struct Decision {
  Verdict verdict = Verdict::kDeny;
  std::string reason;  // one line: the entry that decided, or why nothing did
};

// The matcher over a parsed spec: hash lookups of the exact name and of each of its parent domains, so a check
// costs O(labels), not O(entries). Immutable; Check may be called from any number of threads at once.
class EgressPolicy {
 public:
  explicit EgressPolicy(EgressSpec spec);

  const EgressSpec& spec() const { return spec_; }

  // `host` as a client sent it (SNI, Host, CONNECT): normalized here; an invalid name is denied.
  // Allow entries win over judge entries; block entries win over judge entries.
  Decision Check(std::string_view host, uint16_t port) const;

  // Entries of the allow and judge lists that apply on `port`, in spec order.
  std::vector<HostRule> NamesOnPort(uint16_t port) const;
  // For protocols without a name: the single exact allowed host listed on `port`. Errors (kForbidden) when there
  // is none, more than one, or a wildcard or judged entry on that port.
  Result<std::string> SingleHostOnPort(uint16_t port) const;

  // Whether the proxy ends the TLS of connections to `host` on `port` (interception): it is one of the hosts a
  // secret names. Only allowed connections are asked about.
  bool Intercepted(std::string_view host, uint16_t port) const;

  // The ports an allowlist sandbox may reach the proxy on (allow and judge entries), sorted; empty in other modes.
  std::vector<uint16_t> ListedPorts() const;

 private:
  // One list as two hash maps: exact names and wildcard domains, each to its ports (empty vector: every port).
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Index {
    using Map = std::unordered_map<std::string, std::vector<uint16_t>, Hash, std::equal_to<>>;
    Map exact, below;
    void Add(const HostRule& rule);
    // The matching entry as text, or nullopt.
    std::optional<std::string> Match(std::string_view host, uint16_t port) const;
  };

  EgressSpec spec_;
  Index allow_, block_, judge_, secret_hosts_;
};

}  // namespace isb::egress
