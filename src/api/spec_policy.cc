// The remote-spec policy's checks, over the fields a SandboxSpec has, and ${VAR} expansion from the caller's vars.
#include "api/spec_policy.h"

#include <filesystem>
#include <system_error>

#include "api/json_util.h"
#include "egress/address.h"
#include "identity/names.h"

namespace isb::api {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxQuoted = 128;  // caller text quoted in a message is cut to this

Error Forbidden(std::string msg) { return Error::Of(Code::kForbidden, std::move(msg)); }
Error Invalid(std::string msg) { return Error::Of(Code::kInvalidArgument, std::move(msg)); }

std::string Quote(std::string_view text) {
  std::string clean = SanitizeUtf8(text.substr(0, kMaxQuoted));
  return "'" + clean + (text.size() > kMaxQuoted ? "...'" : "'");
}

// Component-wise: "/data/x" is below "/data", "/data2" is not.
bool AtOrBelow(const std::string& path, const std::string& root) {
  if (root == "/" || path == root) return true;
  return path.size() > root.size() && path.starts_with(root) && path[root.size()] == '/';
}

bool UnderSomeRoot(const std::string& path, const std::vector<std::string>& roots) {
  for (const std::string& root : roots) {
    if (AtOrBelow(path, root)) return true;
  }
  return false;
}

// "." and ".." removed as written, no trailing slash; the file system is not consulted.
std::string Lexical(const std::string& path) {
  std::string out = fs::path(path).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

Result<egress::IpAddress> ParseAddress(std::string_view what, std::string_view text) {
  auto ip = egress::ParseIpAddress(text);
  if (!ip.ok()) return Invalid(std::string(what) + " " + Quote(text) + " is not an IP address");
  return *ip;
}

}  // namespace

Status PrepareRemoteSpecPolicy(RemoteSpecPolicy& policy) {
  std::vector<std::string> every;
  for (const std::string& entry : policy.bind_roots) {
    // ORG=DIR: an org's name has no '/', a directory starts with one.
    const size_t eq = entry.find('=');
    const bool for_org = eq != std::string::npos && entry.find('/') > eq;
    if (for_org && eq == 0) return Invalid("--bind-root " + entry + ": ORG=DIR needs an org");
    if (for_org) {
      if (Status named = identity::CheckOrgName(entry.substr(0, eq)); !named.ok())
        return Invalid("--bind-root " + entry + ": " + named.error().message);
    }
    const std::string root = for_org ? entry.substr(eq + 1) : entry;
    if (root.empty() || root[0] != '/') return Invalid("--bind-root " + entry + ": the directory must be absolute");
    std::error_code ec;
    fs::path real = fs::canonical(root, ec);
    if (ec) return Invalid("--bind-root " + entry + ": " + ec.message());
    if (!fs::is_directory(real, ec)) return Invalid("--bind-root " + entry + ": not a directory");
    (for_org ? policy.org_bind_roots[entry.substr(0, eq)] : every).push_back(real.string());
  }
  policy.bind_roots = std::move(every);
  for (std::string& address : policy.publish_addresses) {
    ISB_ASSIGN_OR_RETURN(egress::IpAddress ip, ParseAddress("--publish-address", address));
    address = ip.ToString();
  }
  // Below 1024 no unprivileged user of the host may listen, and host services trust those ports (a mail relay on 25,
  // ssh on 22): the daemon, root, publishes there for the host's own callers only.
  const std::string& range = policy.publish_ports;
  const size_t dash = range.find('-');
  auto bound = [&](std::string_view text) -> int {
    if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string_view::npos) return -1;
    return std::stoi(std::string(text));
  };
  const int first = dash == std::string::npos ? -1 : bound(std::string_view(range).substr(0, dash));
  const int last = dash == std::string::npos ? -1 : bound(std::string_view(range).substr(dash + 1));
  if (first < 1024 || last > 65535 || first > last)
    return Invalid("--publish-ports " + range + ": expected FIRST-LAST within 1024-65535, FIRST no more than LAST");
  policy.publish_port_first = static_cast<uint16_t>(first);
  policy.publish_port_last = static_cast<uint16_t>(last);
  return {};
}

Result<std::string> ResolveUnderBindRoot(std::string_view field, const std::string& path,
                                         const RemoteSpecPolicy& policy, const std::string& org) {
  std::string name = std::string(field) + " " + Quote(path);
  if (path.empty() || path[0] != '/') return Invalid(name + ": must be an absolute path");
  std::vector<std::string> roots = policy.bind_roots;
  if (auto own = policy.org_bind_roots.find(org); own != policy.org_bind_roots.end())
    roots.insert(roots.end(), own->second.begin(), own->second.end());
  if (roots.empty() && policy.org_bind_roots.empty())
    return Forbidden(name + ": host paths need --bind-root DIR (none is set)");
  if (roots.empty())
    return Forbidden(name + ": host paths need --bind-root DIR or " + org + "=DIR (none is set for org " + Quote(org) +
                     ")");
  if (!UnderSomeRoot(Lexical(path), roots)) return Forbidden(name + " is outside every --bind-root");
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);
  if (ec) return Invalid(name + " does not exist");
  std::string real_path = real.string();
  if (!UnderSomeRoot(real_path, roots)) {
    return Forbidden(name + " resolves to " + Quote(real_path) + ", outside every --bind-root");
  }
  return real_path;
}

Status CheckRemoteSpec(const SandboxSpec& spec, const RemoteSpecPolicy& policy, const std::string& org) {
  ISB_TRY(spec::CheckCallerLabels(spec.labels));
  if (spec.privileged && !policy.allow_privileged) return Forbidden("privileged: true needs --allow-privileged");
  if (!spec.idmap.empty() && !policy.allow_raw) return Forbidden("idmap: mapping host ids needs --allow-raw");
  // An image reference names one of the org's own images: no host path is in it.
  if (!spec.image.empty() && !spec::IsImageReference(spec.image))
    ISB_TRY(ResolveUnderBindRoot("image", spec.image, policy, org));
  for (size_t i = 0; i < spec.mounts.size(); ++i)
    ISB_TRY(ResolveUnderBindRoot("mounts[" + std::to_string(i) + "].source", spec.mounts[i].source, policy, org));
  for (size_t i = 0; i < spec.ports.size(); ++i) {
    const std::string field = "ports[" + std::to_string(i) + "]";
    const uint16_t port = spec.ports[i].host_port;
    if (port < policy.publish_port_first || port > policy.publish_port_last)
      return Forbidden(field + ": host port " + std::to_string(port) + " is outside " + policy.publish_ports +
                       ", the ports isb publishes for remote callers (isb serve --publish-ports)");
    if (policy.api_port != 0 && spec.ports[i].host_port == policy.api_port)
      return Forbidden(field + ": host port " + std::to_string(spec.ports[i].host_port) +
                       " is the isb daemon's own, on every address");
    if (Status st = CheckPublishAddress(spec.ports[i].host_address, policy); !st.ok())
      return Error::Of(st.error().code, field + ": " + st.error().message);
  }
  return {};
}

Status CheckPublishAddress(std::string_view address, const RemoteSpecPolicy& policy) {
  ISB_ASSIGN_OR_RETURN(egress::IpAddress ip, ParseAddress("publish address", address));
  if (egress::Classify(ip).kind == egress::AddressKind::kLoopback) return {};
  for (const std::string& allowed : policy.publish_addresses) {
    auto allowed_ip = egress::ParseIpAddress(allowed);
    if (allowed_ip.ok() && *allowed_ip == ip) return {};
  }
  std::string text = ip.ToString();
  return Forbidden("publishing on " + text + " needs --publish-address " + text);
}

Result<std::string> ExpandVars(std::string_view text, const std::map<std::string, std::string>& vars,
                               size_t max_bytes) {
  auto too_long = [max_bytes] {
    return Error::Of(Code::kTooLarge, "expands to more than " + std::to_string(max_bytes) + " bytes");
  };
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c != '$' || i + 1 >= text.size() || (text[i + 1] != '$' && text[i + 1] != '{')) {
      out += c;
      ++i;
      continue;
    }
    if (text[i + 1] == '$') {
      out += '$';
      i += 2;
      continue;
    }
    size_t close = text.find('}', i + 2);
    if (close == std::string_view::npos) return Invalid("unterminated ${ at offset " + std::to_string(i));
    std::string_view name = text.substr(i + 2, close - i - 2);
    bool valid = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
    for (char n : name) {
      valid = valid && ((n >= 'A' && n <= 'Z') || (n >= 'a' && n <= 'z') || (n >= '0' && n <= '9') || n == '_');
    }
    std::string shown = SanitizeUtf8(name.substr(0, kMaxQuoted));
    if (!valid) return Invalid("${" + shown + "} is not a variable name");
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return Invalid("${" + shown + "} is not among the vars sent");
    if (out.size() + it->second.size() > max_bytes) return too_long();
    out += it->second;
    i = close + 1;
  }
  if (out.size() > max_bytes) return too_long();
  return out;
}

Result<nlohmann::json> ExpandSpecVars(const nlohmann::json& input, const std::map<std::string, std::string>& vars) {
  nlohmann::json out = input;
  out.erase("vars");
  size_t growth = kMaxExpandedSpecBytes;  // what filling may add, shared by every field
  auto expand = [&](const std::string& field, nlohmann::json& value) -> Status {
    if (!value.is_string()) return {};  // the schema has refused it already
    const std::string& text = value.get_ref<const std::string&>();
    Result<std::string> filled = ExpandVars(text, vars, text.size() + growth);
    if (!filled.ok() && filled.error().code == Code::kTooLarge)
      return Error::Of(Code::kTooLarge, field + ": filling the spec's ${NAME}s adds more than " +
                                            std::to_string(kMaxExpandedSpecBytes) + " bytes");
    if (!filled.ok()) return Invalid(field + ": " + filled.error().message);
    if (filled->size() > text.size()) growth -= filled->size() - text.size();
    value = std::move(*filled);
    return {};
  };
  for (const char* field : {"name", "image", "working_dir", "user"}) {
    if (auto it = out.find(field); it != out.end()) ISB_TRY(expand(field, *it));
  }
  for (const char* field : {"environment", "labels"}) {
    auto map = out.find(field);
    if (map == out.end() || !map->is_object()) continue;
    for (auto e = map->begin(); e != map->end(); ++e) {
      ISB_TRY(expand(std::string(field) + "." + SanitizeUtf8(e.key().substr(0, kMaxQuoted)), e.value()));
    }
  }
  return out;
}

}  // namespace isb::api
