// The proxy's secrets on the wire: a MessageFilter that swaps each sandbox's placeholders for their values in
// requests to the hosts a secret is approved for (intercepted TLS only), holds them back anywhere else (on_leak:
// pass, block or stop, each reported), and scrubs the values back into placeholders in every response, compressed
// ones included.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "egress/message_filter.h"
#include "egress/policy.h"

namespace isb::secrets {

using OnLeak = egress::OnLeak;  // egress/policy.h: the spec's on_leak

// Where in a request to an approved host the placeholder is swapped; the credential headers always
// (credential_headers.h), other header fields only as SecretBinding::headers names them. Elsewhere in such a
// request the placeholder goes on as it is (it is not secret, and the host may be sent it): an origin that echoes a
// query, a body or a header back would otherwise hand the value to the sandbox, so those are an admin's opt-in per
// secret.
struct SwapParts {
  bool query = false;  // the request target: path and query
  bool body = false;   // request bodies and WebSocket messages to the origin
  bool operator==(const SwapParts&) const = default;
};

struct SecretBinding {
  std::string name;                     // the org secret's name: the only part ever reported
  std::string placeholder;              // what the sandbox holds
  std::string value;                    // never logged, never in an error
  std::vector<egress::HostRule> hosts;  // where it may be sent (approved, already narrowed)
  SwapParts swap{};
  // The secret's earlier values: never swapped in, scrubbed from responses as the value is (an origin may still
  // echo one). Never logged.
  std::vector<std::string> old_values{};
  // Header fields swapped in besides the credential headers (SecretMeta::headers).
  std::vector<std::string> headers{};
  // The secret is gone (deleted, or its latest value unreadable) but the sandbox had its value: the placeholder is
  // no longer swapped nor judged (it goes on as it is), and `value` and `old_values` are still scrubbed from
  // responses, as an origin may still echo them.
  bool retired = false;
};

struct SandboxSecrets {
  secrets::OnLeak on_leak = secrets::OnLeak::kPass;
  std::vector<SecretBinding> bindings;
};

// A placeholder headed where its secret may not go.
struct LeakEvent {
  std::string sandbox, secret, host;
  uint16_t port = 0;
  // "path", "query", "header NAME", "body" on an intercepted connection; "plain http" on a plain one.
  std::string where;
  secrets::OnLeak action = secrets::OnLeak::kPass;
  bool operator==(const LeakEvent&) const = default;
};

// A placeholder swapped for its value in a request (head, body or WebSocket message) to `host`.
struct UseEvent {
  std::string sandbox, secret, host;
  uint16_t port = 0;
  bool operator==(const UseEvent&) const = default;
};

struct SecretCounters {
  uint64_t swapped = 0;   // requests with the placeholder swapped (head or body)
  uint64_t scrubbed = 0;  // responses with the value turned back into the placeholder (head or body)
  uint64_t held = 0;      // requests where the placeholder was held back from a host it may not go to
  bool operator==(const SecretCounters&) const = default;
};

// Shared by every connection of a proxy; Set, Remove, OnLeak and Counters are thread-safe and take effect on the
// next message. Request bodies: the placeholder (raw, and every byte percent-encoded) becomes the value as the
// body's Content-Type writes it (JSON-escaped in JSON, percent-encoded in a form, else raw). Response bodies in
// gzip, deflate, br or zstd (stacked codings too) are decoded, scrubbed and encoded again in the same coding, so
// Content-Encoding and the client's Accept-Encoding stand; a coding isb does not know cuts the response.
class SecretsFilter : public egress::MessageFilter {
 public:
  SecretsFilter();
  ~SecretsFilter() override;

  void Set(const std::string& sandbox, SandboxSecrets secrets);
  void Remove(const std::string& sandbox);
  // Called on the proxy's event loop for every leak: must not block.
  void OnLeak(std::function<void(const LeakEvent&)> callback);
  // Called on the proxy's event loop for every request with a placeholder swapped (once per request and secret):
  // must not block.
  void OnUse(std::function<void(const UseEvent&)> callback);
  // By secret name.
  std::map<std::string, SecretCounters> Counters(const std::string& sandbox) const;

  std::string RequestHead(const egress::Exchange& exchange, egress::HttpHead& head) override;
  // No: a placeholder in a trailer field would go on unjudged (for a sandbox with secrets; others keep them).
  bool KeepRequestTrailers(const egress::Exchange& exchange) override;
  std::unique_ptr<egress::BodyFilter> RequestBody(const egress::Exchange& exchange,
                                                  const egress::HttpHead& head) override;
  void ResponseHead(const egress::Exchange& exchange, const egress::HttpHead& request,
                    egress::ResponseHead& head) override;
  std::unique_ptr<egress::BodyFilter> ResponseBody(const egress::Exchange& exchange, const egress::HttpHead& request,
                                                   const egress::ResponseHead& head) override;
  // A WebSocket message on an intercepted connection: the sandbox's placeholders swapped (or held back), the
  // origin's values scrubbed, as for bodies.
  std::unique_ptr<egress::BodyFilter> WebSocketMessage(const egress::Exchange& exchange, bool to_origin,
                                                       bool text) override;

  struct Sandbox;  // one sandbox's secrets, compiled (secrets_filter.cc)
  struct Tally;    // one sandbox's counters, kept across Set
  struct Hooks {   // the callbacks, replaced whole so a message holds the ones it started with
    std::function<void(const LeakEvent&)> leak;
    std::function<void(const UseEvent&)> use;
  };

 private:
  std::shared_ptr<const Sandbox> Find(const std::string& sandbox) const;
  std::shared_ptr<const Hooks> CurrentHooks() const;

  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<const Sandbox>> sandboxes_ ISB_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<Tally>> tallies_ ISB_GUARDED_BY(mu_);
  std::shared_ptr<const Hooks> hooks_ ISB_GUARDED_BY(mu_);
};

}  // namespace isb::secrets
