// The secret broker: the spec's secrets resolved against the store, placeholders made, the filter kept bound.
#include "daemon/secret_broker.h"

#include <openssl/hmac.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

#include "base/file.h"
#include "base/random.h"

namespace isb::daemon {
namespace {

// Whether `rule` names only hosts that `approved` names: the same port, and the same name or names below a wildcard.
bool Within(const egress::HostRule& rule, const egress::HostRule& approved) {
  if (rule.port != approved.port) return false;
  if (!approved.wildcard) return !rule.wildcard && rule.name == approved.name;
  if (rule.wildcard && rule.name == approved.name) return true;
  return rule.name.size() > approved.name.size() && rule.name.ends_with("." + approved.name);
}

Result<std::vector<egress::HostRule>> ApprovedHosts(const secrets::SecretMeta& meta) {
  Result<egress::EgressSpec> parsed = egress::ParseEgressSpec(nlohmann::json{{"allow", meta.hosts}});
  if (!parsed.ok())
    return Error::Of(Code::kInternal, "secret '" + meta.name + "': its stored hosts: " + parsed.error().message);
  return parsed->allow;
}

}  // namespace

SecretBroker::SecretBroker(SecretBrokerOptions options) : options_(std::move(options)) {
  if (options_.on_leak) {
    options_.filter->OnLeak([this](const secrets::LeakEvent& event) {
      options_.on_leak(LeakReport{event, OrgOf(event.sandbox)});
    });
  }
  if (options_.on_use) {
    options_.filter->OnUse([this](const secrets::UseEvent& event) {
      options_.on_use(UseReport{event, OrgOf(event.sandbox)});
    });
  }
  options_.store->Watch([this](const std::string& org, const std::string& name) { Changed(org, name); });
}

std::string SecretBroker::OrgOf(const std::string& id) const {
  MutexLock lock(mu_);
  auto it = bound_.find(id);
  return it == bound_.end() ? std::string() : it->second.org;
}

Status SecretBroker::Resolve(const std::string& org, egress::EgressSpec& spec) const {
  std::set<std::string> allowed;
  for (const egress::HostRule& r : spec.allow) allowed.insert(r.ToString());
  // A block list is not changed here: one matcher over it for every secret host.
  std::optional<egress::EgressPolicy> blocks;
  if (spec.mode == egress::EgressMode::kBlocklist) blocks.emplace(spec);
  for (egress::SecretRule& rule : spec.secrets) {
    const std::string what = "egress: secret '" + rule.name + "'";
    Result<secrets::SecretStore::Value> secret = options_.store->Get(org, rule.name);
    if (!secret.ok()) {
      if (secret.error().code == Code::kNotFound)
        return Error::Of(Code::kNotFound, what + ": org '" + org + "' has no such secret");
      return Error::Of(secret.error().code, what + ": " + secret.error().message);
    }
    ISB_ASSIGN_OR_RETURN(std::vector<egress::HostRule> approved, ApprovedHosts(secret->meta));
    // No hosts first: a file-only secret may hold a value no placeholder could stand for.
    if (approved.empty())
      return Error::Of(Code::kForbidden, what + " may be sent to no host: an admin names its hosts (secret_set hosts)");
    if (Status usable = secrets::CheckPlaceholderValue(secret->value.view()); !usable.ok())
      return Error::Of(Code::kInvalidArgument, what + ": " + usable.error().message);
    if (rule.hosts.empty()) {
      rule.hosts = approved;
    } else {
      for (const egress::HostRule& host : rule.hosts) {
        bool ok =
            std::any_of(approved.begin(), approved.end(), [&](const egress::HostRule& a) { return Within(host, a); });
        if (!ok)
          return Error::Of(Code::kForbidden, what + " may not be sent to " + host.ToString() +
                                                 ": the secret allows only its own hosts (secret_inspect)");
      }
    }
    for (const egress::HostRule& host : rule.hosts) {
      if (spec.mode == egress::EgressMode::kAllowlist) {
        if (allowed.insert(host.ToString()).second) spec.allow.push_back(host);
      } else if (blocks && !host.wildcard) {
        egress::Decision d = blocks->Check(host.name, host.port.value_or(443));
        if (d.verdict == egress::Verdict::kDeny)
          return Error::Of(Code::kInvalidArgument, what + ": its host " + host.ToString() + " is blocked: " + d.reason);
      }
    }
  }
  return {};
}

std::string SecretBroker::Placeholder(const std::string& id, const std::string& variable) const {
  const std::string message = id + '\0' + variable;
  unsigned char mac[32];
  unsigned int len = sizeof mac;
  ::HMAC(EVP_sha256(), options_.placeholder_key.data(), static_cast<int>(options_.placeholder_key.size()),
         reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz234567";  // 5 bits a character: 160 of 256 bits
  std::string out = kPlaceholderPrefix;
  uint64_t bits = 0;
  int have = 0;
  for (unsigned int i = 0; i < len && out.size() < sizeof kPlaceholderPrefix - 1 + 32; ++i) {
    bits = (bits << 8) | mac[i];
    have += 8;
    while (have >= 5 && out.size() < sizeof kPlaceholderPrefix - 1 + 32) {
      have -= 5;
      out += kAlphabet[(bits >> have) & 31];
    }
  }
  return out;
}

Status SecretBroker::AddEnvironment(const std::string& id, const egress::EgressSpec& spec,
                                    std::map<std::string, std::string>& env) const {
  for (const egress::SecretRule& rule : spec.secrets) {
    const std::string variable = rule.Variable();
    const std::string placeholder = Placeholder(id, variable);
    auto [it, added] = env.try_emplace(variable, placeholder);
    if (!added && it->second != placeholder)
      return Error::Of(Code::kInvalidArgument, "environment: " + variable + " holds the placeholder of secret '" +
                                                   rule.name + "'; leave it out of the environment");
  }
  return {};
}

std::optional<secrets::SecretBinding> SecretBroker::Current(const std::string& id, const std::string& org,
                                                            const egress::SecretRule& rule) const {
  Result<secrets::SecretStore::Versions> versions = options_.store->AllVersions(org, rule.name);
  if (!versions.ok()) {
    // Named by secret and version only: the store's message may quote a file's header.
    if (versions.error().code != Code::kNotFound) {
      Result<secrets::SecretMeta> meta = options_.store->Inspect(org, rule.name);
      std::fprintf(stderr,
                   "isb: secrets: secret '%s' version %d cannot be read; it is not swapped, and its earlier "
                   "values are still scrubbed\n",
                   rule.name.c_str(), meta.ok() ? meta->version : 0);
    }
    return std::nullopt;
  }
  for (int version : versions->unreadable)
    std::fprintf(stderr,
                 "isb: secrets: secret '%s' version %d cannot be read; the other versions' values are still "
                 "scrubbed\n",
                 rule.name.c_str(), version);
  const secrets::SecretStore::Value& secret = versions->values.back();
  if (!secrets::CheckPlaceholderValue(secret.value.view()).ok()) return std::nullopt;
  // The secret's hosts as they are now: an admin's narrowing reaches a sandbox resolved against wider ones.
  Result<std::vector<egress::HostRule>> approved = ApprovedHosts(secret.meta);
  if (!approved.ok()) return std::nullopt;
  secrets::SecretBinding b;
  b.name = rule.name;
  b.placeholder = Placeholder(id, rule.Variable());
  b.value = std::string(secret.value.view());
  const std::vector<std::string>& parts = secret.meta.substitute;
  b.swap.query = std::find(parts.begin(), parts.end(), "query") != parts.end();
  b.swap.body = std::find(parts.begin(), parts.end(), "body") != parts.end();
  b.headers = secret.meta.headers;
  for (size_t v = 0; v + 1 < versions->values.size(); ++v) b.old_values.emplace_back(versions->values[v].value.view());
  for (const egress::HostRule& host : rule.hosts)
    if (std::any_of(approved->begin(), approved->end(), [&](const egress::HostRule& a) { return Within(host, a); }))
      b.hosts.push_back(host);
  return b;
}

namespace {

// Whether a value is scrubbed: one too short would match ordinary bytes, one too long stands behind no placeholder.
bool Scrubbable(std::string_view value) {
  return value.size() >= secrets::kMinPlaceholderValueSize && value.size() <= secrets::kMaxPlaceholderValueSize;
}

// `seen` with `values` (oldest first) added as the newest, each once, the oldest dropped past kMaxScrubbedValues.
void Remember(std::vector<std::string>& seen, const std::vector<std::string_view>& values) {
  std::erase_if(seen, [&](const std::string& v) { return std::find(values.begin(), values.end(), v) != values.end(); });
  for (std::string_view value : values)
    if (Scrubbable(value) && std::find(seen.begin(), seen.end(), value) == seen.end()) seen.emplace_back(value);
  if (seen.size() > kMaxScrubbedValues) seen.erase(seen.begin(), seen.end() - kMaxScrubbedValues);
}

}  // namespace

secrets::SandboxSecrets SecretBroker::Bindings(const std::string& id, Bound& bound) const {
  secrets::SandboxSecrets out;
  out.on_leak = bound.spec.on_leak;
  std::set<std::string> live;
  for (const egress::SecretRule& rule : bound.spec.secrets) {
    std::optional<secrets::SecretBinding> b = Current(id, bound.org, rule);
    if (!b) continue;
    Seen& seen = bound.seen[rule.name];
    seen.placeholder = b->placeholder;
    std::vector<std::string_view> values(b->old_values.begin(), b->old_values.end());
    values.push_back(b->value);
    Remember(seen.values, values);
    // Earlier values an origin may still echo are scrubbed too, this secret's before it was deleted and made again
    // among them.
    b->old_values.clear();
    for (const std::string& value : seen.values)
      if (value != b->value) b->old_values.push_back(value);
    live.insert(rule.name);
    out.bindings.push_back(std::move(*b));
  }
  // Secrets the sandbox had and has no longer (deleted, unreadable, left out of its spec): scrubbed, never swapped.
  for (const auto& [name, seen] : bound.seen) {
    if (live.contains(name) || seen.values.empty()) continue;
    secrets::SecretBinding retired;
    retired.name = name;
    retired.placeholder = seen.placeholder;
    retired.value = seen.values.back();
    retired.old_values.assign(seen.values.begin(), seen.values.end() - 1);
    retired.retired = true;
    out.bindings.push_back(std::move(retired));
  }
  return out;
}

// Adds to `into` the values of `from` it lacks (read by a rebinding that ran meanwhile); whether it added any.
bool SecretBroker::MergeSeen(std::map<std::string, Seen>& into, const std::map<std::string, Seen>& from) {
  bool added = false;
  for (const auto& [name, theirs] : from) {
    Seen& ours = into[name];
    if (ours.placeholder.empty()) ours.placeholder = theirs.placeholder;
    for (const std::string& value : theirs.values) {
      if (std::find(ours.values.begin(), ours.values.end(), value) != ours.values.end()) continue;
      ours.values.push_back(value);
      added = true;
    }
    if (ours.values.size() > kMaxScrubbedValues)
      ours.values.erase(ours.values.begin(), ours.values.end() - kMaxScrubbedValues);
  }
  return added;
}

void SecretBroker::Bind(const std::string& id, const std::string& org, const egress::EgressSpec& spec) {
  if (spec.secrets.empty()) return Unbind(id);
  Bound bound{org, spec, {}};
  {
    MutexLock lock(mu_);
    if (auto it = bound_.find(id); it != bound_.end() && it->second.org == org) bound.seen = it->second.seen;
  }
  secrets::SandboxSecrets bindings = Bindings(id, bound);
  MutexLock lock(mu_);
  // A change bound the sandbox again meanwhile (Changed) and read values this binding has not: kept, and the
  // bindings made again with them, so a value the proxy had stays scrubbed.
  if (auto it = bound_.find(id); it != bound_.end() && it->second.org == org && MergeSeen(bound.seen, it->second.seen))
    bindings = Bindings(id, bound);
  bound_[id] = std::move(bound);
  options_.filter->Set(id, std::move(bindings));
}

void SecretBroker::Unbind(const std::string& id) {
  MutexLock lock(mu_);
  bound_.erase(id);
  options_.filter->Remove(id);
}

void SecretBroker::Changed(const std::string& org, const std::string& name) {
  std::function<void(const std::string&, const std::string&)> changed;
  {
    MutexLock lock(mu_);
    for (auto& [id, bound] : bound_) {
      if (bound.org != org) continue;
      bool uses = std::any_of(bound.spec.secrets.begin(), bound.spec.secrets.end(),
                              [&](const egress::SecretRule& r) { return r.name == name; });
      if (uses) options_.filter->Set(id, Bindings(id, bound));
    }
    changed = changed_;
  }
  if (changed) changed(org, name);
}

void SecretBroker::OnChange(std::function<void(const std::string& org, const std::string& name)> changed) {
  MutexLock lock(mu_);
  changed_ = std::move(changed);
}

Result<secrets::SecretStore::Value> SecretBroker::FileSecret(const std::string& org, const std::string& name) const {
  Result<secrets::SecretStore::Value> secret = options_.store->Get(org, name);
  if (!secret.ok() && secret.error().code == Code::kNotFound)
    return Error::Of(Code::kNotFound, "secrets: org '" + org + "' has no secret '" + name + "'");
  return secret;
}

std::map<std::string, secrets::SecretCounters> SecretBroker::Counters(const std::string& id) const {
  return options_.filter->Counters(id);
}

Result<std::string> LoadPlaceholderKey(const std::string& path) {
  if (std::error_code ec; std::filesystem::exists(path, ec) || ec) {
    ISB_ASSIGN_OR_RETURN(std::string key, ReadFile(path));
    if (key.size() != 32) return Error::Of(Code::kInvalidArgument, path + ": a placeholder key is 32 bytes");
    return key;
  }
  std::string key(32, '\0');
  ISB_TRY(RandomBytes(key.data(), key.size()));
  ISB_TRY(WriteFileAtomically(path, key, 0600));
  return key;
}

}  // namespace isb::daemon
