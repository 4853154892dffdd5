// Parsing of the `egress` field and the matcher over it.
#include "egress/policy.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "egress/address.h"
#include "egress/host_port.h"

namespace isb::egress {
namespace {

using nlohmann::json;
using Suffixes = Result<const PublicSuffixList*>;

constexpr const char* kForms =
    "expected \"none\", \"open\", a list of \"host[:port]\", or an object with allow, block, judge and secrets";

Error BadSpec(const std::string& why) { return Error::Of(Code::kInvalidArgument, "egress: " + why); }

Error BadEntry(std::string_view entry, const std::string& why) {
  return Error::Of(Code::kInvalidArgument, "egress entry '" + Printable(entry) + "': " + why);
}

// JSON for a message, without throwing on invalid UTF-8.
std::string Shown(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

Result<HostRule> ParseRule(const json& j, std::optional<uint16_t> default_port, const Suffixes& suffixes) {
  if (!j.is_string()) return BadEntry(Shown(j), "expected a string \"host[:port]\"");
  const std::string& text = j.get_ref<const std::string&>();
  if (text == "none") return BadEntry(text, "\"none\" combines with nothing; give egress: \"none\" alone");
  if (text == "open") return BadEntry(text, "\"open\" is a mode, not a host; give egress: \"open\" alone");
  auto hp = SplitHostPort(text);
  if (!hp) return BadEntry(text, "unbalanced brackets");
  if (hp->bracketed || ParseIpAddress(hp->host).ok()) {
    return BadEntry(text, "IP addresses are refused; list the host's name");
  }
  HostRule rule;
  rule.port = default_port;
  if (hp->port) {
    rule.port = ParsePort(*hp->port);
    if (!rule.port) return BadEntry(text, "the port must be a number from 1 to 65535");
  }
  std::string_view host = hp->host;
  rule.wildcard = host.starts_with("*.");
  if (rule.wildcard) host.remove_prefix(2);
  if (host.find('*') != std::string_view::npos) {
    return BadEntry(text, "a wildcard must be the whole first label, as in *.example.com");
  }
  auto name = NormalizeHostName(host);
  if (!name.ok()) return BadEntry(text, "the name " + name.error().message);
  rule.name = std::move(*name);
  if (!rule.wildcard) return rule;
  if (rule.name.find('.') == std::string::npos) {
    return BadEntry(text, "a wildcard over a whole top-level domain is refused");
  }
  if (!suffixes.ok())
    return Error::Of(Code::kUnavailable,
                     "egress entry '" + Printable(text) + "': cannot check the wildcard: " + suffixes.error().message);
  if ((*suffixes)->IsPublicSuffix(rule.name)) {
    return BadEntry(text, rule.name + " is a public suffix, so the wildcard would cover names of unrelated owners");
  }
  return rule;
}

// Counts entries across all lists so that no spec holds more than kMaxEgressEntries.
struct Budget {
  size_t used = 0;
  Status Take(size_t n) {
    used += n;
    if (used > kMaxEgressEntries) {
      return BadSpec("more than " + std::to_string(kMaxEgressEntries) + " entries; isb supports at most that many");
    }
    return {};
  }
};

Result<std::vector<HostRule>> ParseRules(const json& j, const char* key, std::optional<uint16_t> default_port,
                                         const Suffixes& suffixes, Budget& budget) {
  if (!j.is_array()) return BadSpec(std::string("'") + key + "' must be a list of \"host[:port]\"");
  ISB_TRY(budget.Take(j.size()));
  std::vector<HostRule> rules;
  std::unordered_set<std::string> seen;
  for (const json& e : j) {
    ISB_ASSIGN_OR_RETURN(HostRule rule, ParseRule(e, default_port, suffixes));
    if (seen.insert(rule.ToString()).second) rules.push_back(std::move(rule));
  }
  return rules;
}

bool ValidVariable(const std::string& name) {
  if (name.empty() || name.size() > 128 || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

Result<OnLeak> ParseOnLeak(const json& v) {
  for (OnLeak o : {OnLeak::kPass, OnLeak::kBlock, OnLeak::kStop})
    if (v.is_string() && v.get_ref<const std::string&>() == OnLeakName(o)) return o;
  return BadSpec("'on_leak' is \"pass\", \"block\" or \"stop\"; got " + Printable(Shown(v)));
}

Result<SecretRule> ParseSecret(const json& j, const Suffixes& suffixes, Budget& budget) {
  SecretRule secret;
  const json* hosts = nullptr;
  if (j.is_string()) {
    secret.name = j.get<std::string>();
  } else if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (k == "name" && v.is_string()) {
        secret.name = v.get<std::string>();
      } else if (k == "env" && v.is_string()) {
        secret.env = v.get<std::string>();
      } else if (k == "hosts") {
        hosts = &v;
      } else {
        return BadSpec("secret " + Printable(Shown(j)) + ": unknown or mistyped key '" + Printable(k) + "'");
      }
    }
  } else {
    return BadSpec("secret " + Printable(Shown(j)) + ": expected \"NAME\" or {\"name\": NAME, \"hosts\": [...]}");
  }
  if (!IsValidSecretName(secret.name)) {
    return BadSpec("secret '" + Printable(secret.name) + "': a name is 1 to 128 letters, digits, '_', '-' or '.'");
  }
  if (!ValidVariable(secret.Variable())) {
    return BadSpec("secret '" + secret.name + "': '" + Printable(secret.Variable()) +
                   "' cannot name an environment variable (letters, digits and '_', not starting with a digit)" +
                   (secret.env.empty() ? "; give one in \"env\"" : ""));
  }
  if (hosts != nullptr) {
    ISB_ASSIGN_OR_RETURN(secret.hosts, ParseRules(*hosts, "hosts", 443, suffixes, budget));
  }
  return secret;
}

Result<EgressSpec> ParseObject(const json& j, const Suffixes& suffixes) {
  EgressSpec spec;
  Budget budget;
  bool has_block = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "allow") {
      ISB_ASSIGN_OR_RETURN(spec.allow, ParseRules(v, "allow", 443, suffixes, budget));
    } else if (key == "block") {
      has_block = true;
      ISB_ASSIGN_OR_RETURN(spec.block, ParseRules(v, "block", std::nullopt, suffixes, budget));
    } else if (key == "judge") {
      ISB_ASSIGN_OR_RETURN(spec.judge, ParseRules(v, "judge", 443, suffixes, budget));
    } else if (key == "secrets") {
      if (!v.is_array()) return BadSpec("'secrets' must be a list");
      ISB_TRY(budget.Take(v.size()));
      std::set<std::string> names, variables;
      for (const json& s : v) {
        ISB_ASSIGN_OR_RETURN(SecretRule secret, ParseSecret(s, suffixes, budget));
        if (!names.insert(secret.name).second) return BadSpec("secret '" + secret.name + "' is listed twice");
        if (!variables.insert(secret.Variable()).second)
          return BadSpec("two secrets are given in the variable '" + secret.Variable() + "'");
        spec.secrets.push_back(std::move(secret));
      }
    } else if (key == "on_leak") {
      ISB_ASSIGN_OR_RETURN(spec.on_leak, ParseOnLeak(v));
    } else {
      return BadSpec("unknown key '" + Printable(key) + "' (" + kForms + ")");
    }
  }
  if (has_block && j.contains("allow")) return BadSpec("'allow' and 'block' exclude each other; give one");
  if (has_block) {
    spec.mode = EgressMode::kBlocklist;
  } else if (!spec.allow.empty() || !spec.judge.empty() || !spec.secrets.empty()) {
    // Secrets alone: a list of the hosts they may be sent to (the daemon adds them when it resolves the secrets).
    spec.mode = EgressMode::kAllowlist;
  }
  if (j.contains("on_leak") && spec.secrets.empty()) return BadSpec("'on_leak' is for secrets; none are given");
  return spec;
}

Result<EgressSpec> Parse(const json& value, const Suffixes& suffixes) {
  EgressSpec spec;
  if (value.is_null()) return spec;
  if (value.is_string()) {
    if (value == "none") return spec;
    if (value == "open") {
      spec.mode = EgressMode::kOpen;
      return spec;
    }
    return BadSpec(std::string(kForms) + "; got " + Printable(Shown(value)));
  }
  if (value.is_array()) {
    if (value.size() == 1 && value[0] == "none") return spec;
    Budget budget;
    ISB_ASSIGN_OR_RETURN(spec.allow, ParseRules(value, "egress", 443, suffixes, budget));
    if (!spec.allow.empty()) spec.mode = EgressMode::kAllowlist;
    return spec;
  }
  if (value.is_object()) return ParseObject(value, suffixes);
  return BadSpec(std::string(kForms) + "; got " + Printable(Shown(value)));
}

json RulesToJson(const std::vector<HostRule>& rules) {
  json out = json::array();
  for (const HostRule& r : rules) out.push_back(r.ToString());
  return out;
}

std::string NameAndPort(const std::string& name, uint16_t port) { return name + ":" + std::to_string(port); }

}  // namespace

bool IsValidSecretName(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
}

std::string SecretRule::Variable() const {
  if (!env.empty()) return env;
  std::string out = name;
  for (char& c : out)
    if (c == '.' || c == '-') c = '_';
  return out;
}

const char* OnLeakName(OnLeak on_leak) {
  switch (on_leak) {
    case OnLeak::kBlock:
      return "block";
    case OnLeak::kStop:
      return "stop";
    default:
      return "pass";
  }
}

std::string HostRule::ToString() const {
  std::string out = wildcard ? "*." + name : name;
  if (port) out += ":" + std::to_string(*port);
  return out;
}

Result<EgressSpec> ParseEgressSpec(const json& value, const Suffixes& suffixes) { return Parse(value, suffixes); }

Result<EgressSpec> ParseEgressSpec(const json& value) { return Parse(value, PublicSuffixList::System()); }

json EgressSpecToJson(const EgressSpec& spec) {
  switch (spec.mode) {
    case EgressMode::kNone:
      return "none";
    case EgressMode::kOpen:
      return "open";
    default:
      break;
  }
  if (spec.mode == EgressMode::kAllowlist && spec.judge.empty() && spec.secrets.empty() && !spec.allow.empty()) {
    return RulesToJson(spec.allow);
  }
  json out = json::object();
  if (spec.mode == EgressMode::kBlocklist) out["block"] = RulesToJson(spec.block);
  if (!spec.allow.empty()) out["allow"] = RulesToJson(spec.allow);
  if (!spec.judge.empty()) out["judge"] = RulesToJson(spec.judge);
  if (!spec.secrets.empty()) {
    json secrets = json::array();
    for (const SecretRule& s : spec.secrets) {
      if (s.hosts.empty() && s.env.empty()) {
        secrets.push_back(s.name);
        continue;
      }
      json one = {{"name", s.name}};
      if (!s.env.empty()) one["env"] = s.env;
      if (!s.hosts.empty()) one["hosts"] = RulesToJson(s.hosts);
      secrets.push_back(std::move(one));
    }
    out["secrets"] = std::move(secrets);
    if (spec.on_leak != OnLeak::kPass) out["on_leak"] = OnLeakName(spec.on_leak);
  }
  return out;
}

void EgressPolicy::Index::Add(const HostRule& rule) {
  auto& ports = (rule.wildcard ? below : exact)[rule.name];
  ports.push_back(rule.port.value_or(0));  // 0: every port
}

std::optional<std::string> EgressPolicy::Index::Match(std::string_view host, uint16_t port) const {
  auto entry = [&](const std::vector<uint16_t>& ports, std::string name) -> std::optional<std::string> {
    for (uint16_t p : ports) {
      if (p == port) return NameAndPort(name, port);
      if (p == 0) return name;
    }
    return std::nullopt;
  };
  if (auto it = exact.find(host); it != exact.end()) {
    if (auto m = entry(it->second, it->first)) return m;
  }
  // Each proper parent domain: "a.b.example.com" looks up b.example.com, example.com and com.
  for (size_t dot = host.find('.'); dot != std::string_view::npos; dot = host.find('.', dot + 1)) {
    if (auto it = below.find(host.substr(dot + 1)); it != below.end()) {
      if (auto m = entry(it->second, "*." + it->first)) return m;
    }
  }
  return std::nullopt;
}

EgressPolicy::EgressPolicy(EgressSpec spec) : spec_(std::move(spec)) {
  for (const HostRule& r : spec_.allow) allow_.Add(r);
  for (const HostRule& r : spec_.block) block_.Add(r);
  for (const HostRule& r : spec_.judge) judge_.Add(r);
  for (const SecretRule& secret : spec_.secrets)
    for (const HostRule& r : secret.hosts) secret_hosts_.Add(r);
}

bool EgressPolicy::Intercepted(std::string_view host, uint16_t port) const {
  auto name = NormalizeHostName(host);
  return name.ok() && secret_hosts_.Match(*name, port).has_value();
}

Decision EgressPolicy::Check(std::string_view host, uint16_t port) const {
  if (spec_.mode == EgressMode::kNone) return {Verdict::kDeny, "egress is none: this sandbox has no network"};
  if (spec_.mode == EgressMode::kOpen) return {Verdict::kAllow, "egress is open"};
  if (ParseIpAddress(host).ok()) {
    return {Verdict::kDeny, "'" + Printable(host) + "' is an IP address; egress lists hold names, connect by name"};
  }
  auto name = NormalizeHostName(host);
  if (!name.ok()) return {Verdict::kDeny, "'" + Printable(host) + "' is not a host name: it " + name.error().message};
  std::string target = NameAndPort(*name, port);
  if (spec_.mode == EgressMode::kAllowlist) {
    if (auto m = allow_.Match(*name, port)) return {Verdict::kAllow, "allowed by " + *m};
    if (auto m = judge_.Match(*name, port))
      return {Verdict::kAskJudge, target + " is for the judge to decide (" + *m + ")"};
    return {Verdict::kDeny, target + " is not in the egress list"};
  }
  if (auto m = block_.Match(*name, port)) return {Verdict::kDeny, target + " is blocked by " + *m};
  if (auto m = judge_.Match(*name, port))
    return {Verdict::kAskJudge, target + " is for the judge to decide (" + *m + ")"};
  return {Verdict::kAllow, target + " is not blocked"};
}

std::vector<HostRule> EgressPolicy::NamesOnPort(uint16_t port) const {
  std::vector<HostRule> out;
  for (const auto* list : {&spec_.allow, &spec_.judge}) {
    for (const HostRule& r : *list) {
      if (r.port == port) out.push_back(r);
    }
  }
  return out;
}

Result<std::string> EgressPolicy::SingleHostOnPort(uint16_t port) const {
  auto refuse = [&](const std::string& why) {
    return Error::Of(Code::kForbidden,
                     "egress: a connection without a name on port " + std::to_string(port) + " is refused: " + why);
  };
  if (spec_.mode != EgressMode::kAllowlist) return refuse("only an egress list can name its single host");
  std::vector<HostRule> names = NamesOnPort(port);
  if (names.empty()) return refuse("nothing is listed on that port");
  if (names.size() > 1) {
    return refuse(std::to_string(names.size()) + " entries are listed on that port (" + names[0].ToString() + ", " +
                  names[1].ToString() + (names.size() > 2 ? ", ..." : "") + ")");
  }
  if (names[0].wildcard) return refuse("its one entry " + names[0].ToString() + " is a wildcard");
  if (judge_.Match(names[0].name, port) && !allow_.Match(names[0].name, port)) {
    return refuse("its one entry " + names[0].ToString() + " is for the judge, who needs a name");
  }
  return names[0].name;
}

std::vector<uint16_t> EgressPolicy::ListedPorts() const {
  if (spec_.mode != EgressMode::kAllowlist) return {};
  std::set<uint16_t> ports;
  for (const auto* list : {&spec_.allow, &spec_.judge}) {
    for (const HostRule& r : *list) ports.insert(r.port.value_or(0));
  }
  return {ports.begin(), ports.end()};
}

}  // namespace isb::egress
