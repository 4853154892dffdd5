// The sandbox spec's one validator: each rule once, each refusal naming its field and what the field takes.
#include "spec/sandbox_spec.h"

#include <arpa/inet.h>

#include <cctype>
#include <cstring>
#include <iterator>
#include <set>

#include "base/units.h"
#include "egress/host_port.h"
#include "egress/policy.h"
#include "engine/mounts.h"
#include "spec/spec_json.h"

namespace isb::spec {
namespace {

Error Invalid(const std::string& msg) { return Error::Of(Code::kInvalidArgument, msg); }

std::string Index(const char* field, size_t i) { return std::string(field) + "[" + std::to_string(i) + "]"; }

bool IsIpAddress(const std::string& text) {
  in6_addr any{};
  return ::inet_pton(AF_INET, text.c_str(), &any) == 1 || ::inet_pton(AF_INET6, text.c_str(), &any) == 1;
}

// A path inside the sandbox: absolute, in its lexically normal form (so "//proc" or "/x/../dev" cannot pass for
// another path), and not under the kernel's own trees (the engine resolves symlinks inside the sandbox's root and
// refuses those too).
Status ValidateInsidePath(const std::string& field, const std::string& path) {
  ISB_ASSIGN_OR_RETURN(std::string normal, NormalizeInsidePath(field, path));
  if (normal != path) return Invalid(field + ": must be in its normal form, '" + normal + "'");
  return {};
}

bool SameAddress(const std::string& a, const std::string& b) {
  in6_addr x{}, y{};
  if (::inet_pton(AF_INET6, a.c_str(), &x) == 1 && ::inet_pton(AF_INET6, b.c_str(), &y) == 1)
    return std::memcmp(&x, &y, sizeof x) == 0;
  return a == b;
}

Status ValidateMounts(const std::vector<SpecMount>& mounts) {
  for (size_t i = 0; i < mounts.size(); ++i) {
    const std::string field = Index("mounts", i);
    const SpecMount& m = mounts[i];
    if (m.source.find('\0') != std::string::npos) return Invalid(field + ".source: must not contain a NUL character");
    if (m.source.empty() || m.source[0] != '/') return Invalid(field + ".source: must be an absolute path");
    ISB_TRY(ValidateInsidePath(field + ".target", m.target));
    if (m.target == "/") return Invalid(field + ".target: must not be /");
  }
  return {};
}

Status ValidateSecretFiles(const std::vector<SpecSecretFile>& files) {
  if (files.size() > kMaxSecretFiles) return Invalid("secrets: at most " + std::to_string(kMaxSecretFiles) + " files");
  std::set<std::string> targets;
  const std::string dir = std::string(kSecretsDir) + "/";
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string field = Index("secrets", i);
    const SpecSecretFile& f = files[i];
    if (!egress::IsValidSecretName(f.name))
      return Invalid(field + ".name: a name is 1 to 128 letters, digits, '_', '-' or '.', got '" +
                     egress::Printable(f.name) + "'");
    const std::string file = f.target.starts_with(dir) ? f.target.substr(dir.size()) : "";
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..")
      return Invalid(field + ".target: must be a file directly in " + kSecretsDir + ", got '" +
                     egress::Printable(f.target) + "'");
    if (f.mode > 0777) return Invalid(field + ".mode: must be an octal mode of at most 0777");
    if (!targets.insert(f.target).second) return Invalid(field + ".target: '" + f.target + "' is given twice");
  }
  return {};
}

Status ValidatePorts(const std::vector<SpecPort>& ports) {
  for (size_t i = 0; i < ports.size(); ++i) {
    const std::string field = Index("ports", i);
    const SpecPort& p = ports[i];
    if (!IsIpAddress(p.host_address))
      return Invalid(field + ".host_address: '" + p.host_address + "' is not an IP address");
    if (p.sandbox_port == 0 || p.host_port == 0) return Invalid(field + ": ports are 1 to 65535");
    for (size_t j = 0; j < i; ++j)
      if (ports[j].host_port == p.host_port && SameAddress(ports[j].host_address, p.host_address))
        return Invalid(field + ": " + p.host_address + ":" + std::to_string(p.host_port) + " is published twice");
  }
  return {};
}

Status ValidateLimits(const SandboxSpec& s) {
  if (!(s.cpus >= kMinCpus && s.cpus <= kMaxCpus)) return Invalid("cpus: must be between 0.001 and 1024");
  ISB_TRY(CheckSize("mem_limit", s.mem_limit, kMinMemLimit, kMaxMemLimit));
  ISB_TRY(CheckSize("disk", s.disk, kMinDisk, kMaxDisk));
  if (s.expires.count() < 1 || s.expires.count() > kMaxExpiresS) return Invalid("expires: must be between 1s and 30d");
  if (s.idle_timeout.count() < 1) return Invalid("idle_timeout: must be at least 1s");
  return {};
}

}  // namespace

Status ValidateName(const std::string& name) {
  if (name.empty()) return {};
  // The name is the sandbox's host name too: one DNS label.
  bool ok = name.size() <= kMaxNameLength && name.front() != '-' && name.back() != '-';
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-');
  if (!ok) return Invalid("name: use 1-63 letters, digits and inner hyphens, got '" + name + "'");
  if (name.starts_with("sb-")) return Invalid("name: must not start with \"sb-\" (reserved for ids)");
  return {};
}

Result<std::pair<uint32_t, uint32_t>> ParseUser(const std::string& user) {
  auto ids = ParseIds(user);
  if (!ids.ok())
    return Invalid("user: expected UID[:GID] with numeric ids below 65536, e.g. \"1000:1000\", got '" + user + "'");
  return *ids;
}

Status ValidateVariableName(const std::string& field, const std::string& name) {
  if (name.empty() || name.find('=') != std::string::npos || name.find('\0') != std::string::npos)
    return Invalid(field + ": invalid variable name '" + name + "'");
  return {};
}

std::string SizeText(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t unit = 0;
  while (bytes != 0 && bytes % 1024 == 0 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + " " + kUnits[unit];
}

Status CheckSize(const std::string& field, uint64_t bytes, uint64_t min, uint64_t max) {
  if (bytes < min)
    return Invalid(field + ": must be at least " + SizeText(min) + " (" + std::to_string(min) + " bytes)");
  if (bytes > max) return Invalid(field + ": must be at most " + SizeText(max));
  return {};
}

Status CheckCallerLabels(const std::map<std::string, std::string>& labels) {
  for (const auto& [key, value] : labels)
    if (key.starts_with("isb."))
      return Error::Of(Code::kForbidden, "label '" + key + "': labels starting with isb. are reserved");
  return {};
}

Status Validate(const SandboxSpec& s) {
  ISB_TRY(ValidateName(s.name));
  if (!s.image.empty()) {
    if (s.image.find('\0') != std::string::npos) return Invalid("image: must not contain a NUL character");
    if (s.image[0] != '/' && s.image.size() > 512) return Invalid("image: a reference is at most 512 characters");
    if (s.image[0] != '/' && s.image.find_first_of(" \t\n\r") != std::string::npos)
      return Invalid("image: an image reference has no white space (\"python:3.12\", \"host:5000/team/app:tag\")");
    if (s.image[0] == '/' && s.image.find_first_of(engine::kOverlaySpecialChars) != std::string::npos)
      return Invalid("image: a path with ':', ',' or '\\' cannot be an overlay layer (overlayfs would split it)");
  }
  ISB_TRY(ValidateMounts(s.mounts));
  ISB_TRY(ValidatePorts(s.ports));
  ISB_TRY(ValidateSecretFiles(s.secrets));
  ISB_TRY(ValidateLimits(s));
  for (const auto& [k, v] : s.environment) {
    ISB_TRY(ValidateVariableName("environment", k));
    if (v.find('\0') != std::string::npos) return Invalid("environment." + k + ": must not contain a NUL character");
  }
  ISB_TRY(ValidateInsidePath("working_dir", s.working_dir));
  ISB_TRY(ParseUser(s.user));
  ISB_TRY(engine::ValidateIdMappings(s.idmap, s.privileged));
  // isb.org and isb.owner come from the tools (OrgSandboxes), which refuse any isb.* label a caller sends.
  for (const auto& [k, v] : s.labels)
    if (k.starts_with("isb.") && k != kOrgLabel && k != kOwnerLabel)
      return Invalid("labels: '" + k + "' is reserved (isb.* labels are set by isb)");
  return {};
}

}  // namespace isb::spec
