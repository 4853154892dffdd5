// A sandbox's secrets at the daemon: the hosts each may go to (the secret's own approved hosts, narrowed by the
// sandbox's spec, never widened), the placeholder its environment holds for each, and the values the proxy's
// secrets filter swaps in, kept current as the org's secrets change.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "egress/policy.h"
#include "secrets/secret_store.h"
#include "secrets/secrets_filter.h"

namespace isb::daemon {

// Every placeholder starts with this, then 32 characters of [a-z0-9].
inline constexpr char kPlaceholderPrefix[] = "isb_placeholder_";

// The most values of one secret a bound sandbox's responses are scrubbed of: twice the versions a store keeps, so a
// secret deleted and made again still has the first one's values scrubbed.
inline constexpr size_t kMaxScrubbedValues = 2 * secrets::kMaxSecretVersions;

// A placeholder that was headed where its secret may not go, as the proxy reported it: for the audit log and, with
// on_leak stop, to stop the sandbox. Never a value.
struct LeakReport {
  secrets::LeakEvent event;
  std::string org;  // the sandbox's
};

// Placeholders swapped in a request to an approved host, as the proxy reported it: for the audit log. Never a value.
struct UseReport {
  secrets::UseEvent event;
  std::string org;  // the sandbox's
};

struct SecretBrokerOptions {
  secrets::SecretStore* store = nullptr;  // outlives the broker
  std::shared_ptr<secrets::SecretsFilter> filter;
  // Keys the placeholders (HMAC-SHA-256): the same sandbox and variable give the same placeholder across restarts.
  std::string placeholder_key;
  // Told of every leak the filter reports, on the proxy's thread: must not block.
  std::function<void(const LeakReport&)> on_leak;
  // Told of every request that had a placeholder swapped, on the proxy's thread: must not block.
  std::function<void(const UseReport&)> on_use;
};

class SecretBroker {
 public:
  explicit SecretBroker(SecretBrokerOptions options);
  SecretBroker(const SecretBroker&) = delete;
  SecretBroker& operator=(const SecretBroker&) = delete;

  // The spec's secrets as they will be applied: each names a secret of `org` whose value can be a placeholder's;
  // its hosts are the secret's approved hosts when the spec names none, else each must be within them; they join the
  // allow list of an allowlist spec (a blocklist must not block them). Errors name the secret and the host.
  Status Resolve(const std::string& org, egress::EgressSpec& spec) const;

  // The placeholder of `variable` in sandbox `id`.
  std::string Placeholder(const std::string& id, const std::string& variable) const;
  // The variables holding the spec's placeholders, added to `env`. A variable the caller set is refused: it would
  // hide the placeholder.
  Status AddEnvironment(const std::string& id, const egress::EgressSpec& spec,
                        std::map<std::string, std::string>& env) const;

  // The proxy swaps `id`'s placeholders from now on (values read from the store now; a secret that no longer
  // exists is left out: its placeholder goes out as it is). Every value the sandbox's proxy has had for a secret
  // stays scrubbed from its responses until it is unbound, even once the secret is deleted, a new spec that still
  // names other secrets leaves it out, or a version cannot be read (kMaxScrubbedValues a secret, the newest kept).
  // A spec that names no secret unbinds (as Unbind does): from then on none of the values is scrubbed.
  void Bind(const std::string& id, const std::string& org, const egress::EgressSpec& spec);
  void Unbind(const std::string& id);

  // A secret of `org` for a file: its value (kNotFound when it does not exist).
  Result<secrets::SecretStore::Value> FileSecret(const std::string& org, const std::string& name) const;
  // Told of every change of a secret after the proxy has it (a sandbox's files follow): set once, before serving.
  void OnChange(std::function<void(const std::string& org, const std::string& name)> changed);

  // Counters of `id`'s secrets, by name.
  std::map<std::string, secrets::SecretCounters> Counters(const std::string& id) const;

 private:
  // A secret's values the sandbox's proxy has had, oldest first, and the placeholder it had them for.
  struct Seen {
    std::string placeholder;
    std::vector<std::string> values;
  };
  struct Bound {
    std::string org;
    egress::EgressSpec spec;
    std::map<std::string, Seen> seen;  // by secret name
  };
  // Adds to `into` the values of `from` it lacks; whether it added any.
  static bool MergeSeen(std::map<std::string, Seen>& into, const std::map<std::string, Seen>& from);
  // The store changed `name` of `org`: every sandbox using it is bound again.
  void Changed(const std::string& org, const std::string& name);
  // The filter's bindings for `bound` as the store holds its secrets now; adds what it read to bound.seen.
  secrets::SandboxSecrets Bindings(const std::string& id, Bound& bound) const;
  // The binding of spec secret `rule` from the store, or nullopt (gone, unreadable, not a placeholder's value).
  std::optional<secrets::SecretBinding> Current(const std::string& id, const std::string& org,
                                                const egress::SecretRule& rule) const;
  std::string OrgOf(const std::string& id) const;  // "" for a sandbox not bound

  SecretBrokerOptions options_;
  mutable Mutex mu_;
  std::map<std::string, Bound> bound_ ISB_GUARDED_BY(mu_);  // by sandbox id
  std::function<void(const std::string&, const std::string&)> changed_ ISB_GUARDED_BY(mu_);
};

// The key placeholders are made with, kept in `path` (0600), made at first use.
Result<std::string> LoadPlaceholderKey(const std::string& path);

}  // namespace isb::daemon
