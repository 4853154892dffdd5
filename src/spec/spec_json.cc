// The sandbox spec's JSON forms: the caller's parser, the answered form, and the stored row's codec.
#include "spec/spec_json.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/units.h"

namespace isb::spec {
namespace {

using nlohmann::json;

Error Invalid(const std::string& msg) { return Error::Of(Code::kInvalidArgument, msg); }

std::map<std::string, std::string> StringMap(const json& in, const char* field) {
  std::map<std::string, std::string> out;
  if (auto it = in.find(field); it != in.end() && it->is_object())
    for (auto e = it->begin(); e != it->end(); ++e)
      if (e.value().is_string()) out[e.key()] = e.value().get<std::string>();
  return out;
}

Result<std::vector<SpecMount>> MountsFromCaller(const json& in) {
  std::vector<SpecMount> out;
  auto it = in.find("mounts");
  if (it == in.end()) return out;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    SpecMount mount{m["source"].get<std::string>(), "", m.value("read_only", true)};
    ISB_ASSIGN_OR_RETURN(
        mount.target, NormalizeInsidePath("mounts[" + std::to_string(i) + "].target", m["target"].get<std::string>()));
    out.push_back(std::move(mount));
  }
  return out;
}

std::vector<SpecPort> PortsFromCaller(const json& in) {
  std::vector<SpecPort> out;
  if (auto it = in.find("ports"); it != in.end())
    for (const json& p : *it) {
      SpecPort port{p["sandbox_port"].get<uint16_t>(), p["host_port"].get<uint16_t>()};
      port.host_address = p.value("host_address", port.host_address);
      out.push_back(std::move(port));
    }
  return out;
}

// "NAME" or {"name", "target", "mode": "0400"}: the target's default is /run/secrets/NAME, the mode's 0400.
Result<std::vector<SpecSecretFile>> SecretFilesFromCaller(const json& in) {
  std::vector<SpecSecretFile> out;
  auto it = in.find("secrets");
  if (it == in.end()) return out;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& f = (*it)[i];
    const std::string field = "secrets[" + std::to_string(i) + "]";
    SpecSecretFile file;
    file.name = f.is_string() ? f.get<std::string>() : f.value("name", "");
    std::string target = std::string(kSecretsDir) + "/" + file.name;
    if (f.is_object()) {
      target = f.value("target", target);
      if (auto mode = f.find("mode"); mode != f.end()) {
        const std::string text = mode->get<std::string>();
        if (text.empty() || text.size() > 4 || text.find_first_not_of("01234567") != std::string::npos)
          return Invalid(field + ".mode: an octal mode such as \"0400\", got '" + text + "'");
        file.mode = static_cast<uint32_t>(std::stoul(text, nullptr, 8));
      }
    }
    ISB_ASSIGN_OR_RETURN(file.target, NormalizeInsidePath(field + ".target", target));
    out.push_back(std::move(file));
  }
  return out;
}

// A stored field as `T`, or `fallback` when the row has none or one of another type: a row is read whatever it
// holds, never thrown on.
template <class T>
T Stored(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

// "auto" and "none" (and no field) are the sandbox's own range alone; otherwise a list of mappings.
Result<std::vector<engine::IdMapping>> IdMapFromCaller(const json& in) {
  auto it = in.find("idmap");
  if (it == in.end()) return std::vector<engine::IdMapping>{};
  if (it->is_string()) {
    if (*it != "auto" && *it != "none") return Invalid("idmap: expected \"auto\", \"none\" or a list of mappings");
    return std::vector<engine::IdMapping>{};
  }
  return it->get<std::vector<engine::IdMapping>>();
}

}  // namespace

void to_json(json& j, const SpecMount& m) {
  j = {{"source", m.source}, {"target", m.target}, {"read_only", m.read_only}};
}
void from_json(const json& j, SpecMount& m) {
  m = {j.value("source", ""), j.value("target", ""), j.value("read_only", true)};
}
void to_json(json& j, const SpecSecretFile& f) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", f.mode);
  j = {{"name", f.name}, {"target", f.target}, {"mode", mode}};
}
void from_json(const json& j, SpecSecretFile& f) {
  f.name = j.value("name", "");
  f.target = j.value("target", "");
  f.mode = static_cast<uint32_t>(std::strtoul(j.value("mode", "0400").c_str(), nullptr, 8));
}
void to_json(json& j, const SpecPort& p) {
  j = {{"sandbox_port", p.sandbox_port}, {"host_port", p.host_port}, {"host_address", p.host_address}};
}
void from_json(const json& j, SpecPort& p) {
  p = {j.value("sandbox_port", uint16_t{0}), j.value("host_port", uint16_t{0}),
       j.value("host_address", std::string(egress::kDefaultPublishAddress))};
}

Result<std::string> NormalizeInsidePath(const std::string& field, const std::string& path) {
  if (path.find('\0') != std::string::npos) return Invalid(field + ": must not contain a NUL character");
  if (path.empty() || path[0] != '/') return Invalid(field + ": must be an absolute path, got '" + path + "'");
  std::vector<std::string_view> parts;
  std::string_view rest = path;
  while (!rest.empty()) {
    size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  std::string out;
  for (auto p : parts) out.append("/").append(p);
  if (out.empty()) out = "/";
  for (std::string_view refused : {"/proc", "/sys", "/dev"}) {
    if (out == refused || out.starts_with(std::string(refused) + "/"))
      return Invalid(field + ": paths under " + std::string(refused) + " are refused");
  }
  return out;
}

Result<uint64_t> SizeFromJson(const std::string& field, const json& v, uint64_t min, uint64_t max) {
  uint64_t bytes = 0;
  if (v.is_string()) {
    auto parsed = ParseSize(v.get<std::string>());
    if (!parsed.ok()) return Invalid(field + ": " + parsed.error().message);
    bytes = *parsed;
  } else if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
    bytes = v.get<uint64_t>();
  } else if (v.is_number_float() && v.get<double>() >= 0) {
    // (The schema lets through integral values below 2^63 only.)
    bytes = static_cast<uint64_t>(v.get<double>());
  }  // a negative number reads as 0, below every minimum
  ISB_TRY(CheckSize(field, bytes, min, max));
  return bytes;
}

Result<SandboxSpec> FromCallerJson(const json& in) {
  SandboxSpec spec;
  spec.name = in.value("name", "");
  spec.image = in.value("image", "");
  spec.cpus = in.value("cpus", spec.cpus);
  if (auto it = in.find("mem_limit"); it != in.end()) {
    ISB_ASSIGN_OR_RETURN(spec.mem_limit, SizeFromJson("mem_limit", *it, kMinMemLimit, kMaxMemLimit));
  }
  if (auto it = in.find("disk"); it != in.end()) {
    ISB_ASSIGN_OR_RETURN(spec.disk, SizeFromJson("disk", *it, kMinDisk, kMaxDisk));
  }
  spec.pids = in.value("pids", spec.pids);
  spec.environment = StringMap(in, "environment");
  if (auto it = in.find("working_dir"); it != in.end()) {
    ISB_ASSIGN_OR_RETURN(spec.working_dir, NormalizeInsidePath("working_dir", it->get<std::string>()));
  }
  spec.user = in.value("user", spec.user);
  spec.labels = StringMap(in, "labels");
  ISB_TRY(CheckCallerLabels(spec.labels));
  ISB_ASSIGN_OR_RETURN(spec.mounts, MountsFromCaller(in));
  spec.ports = PortsFromCaller(in);
  ISB_ASSIGN_OR_RETURN(spec.secrets, SecretFilesFromCaller(in));
  if (auto it = in.find("egress"); it != in.end()) spec.egress = *it;
  spec.privileged = in.value("privileged", false);
  ISB_ASSIGN_OR_RETURN(spec.idmap, IdMapFromCaller(in));
  spec.expires = std::chrono::seconds(in.value("expires", kDefaultExpiresS));
  spec.idle_timeout = std::chrono::seconds(in.value("idle_timeout", kDefaultIdleTimeoutS));
  ISB_TRY(Validate(spec));
  return spec;
}

json ToJson(const SandboxSpec& s) {
  json j = {{"name", s.name},
            {"image", s.image},
            {"cpus", s.cpus},
            {"mem_limit", s.mem_limit},
            {"disk", s.disk},
            {"pids", s.pids},
            {"environment", s.environment},
            {"working_dir", s.working_dir},
            {"user", s.user},
            {"labels", s.labels},
            {"mounts", s.mounts},
            {"ports", s.ports},
            {"egress", s.egress},
            {"privileged", s.privileged},
            {"idmap", s.idmap.empty() ? json("auto") : json(s.idmap)},
            {"expires", s.expires.count()},
            {"idle_timeout", s.idle_timeout.count()}};
  // Names and places of files, never values; only when there are any, as specs before them read.
  if (!s.secrets.empty()) j["secrets"] = s.secrets;
  return j;
}

std::string ToStoredJson(const SandboxSpec& s) {
  json j = ToJson(s);
  // Stored rows omit what is at its default and rare, as rows written before these fields existed did.
  for (const char* rare : {"mounts", "ports", "idmap"}) j.erase(rare);
  j.erase("privileged");
  if (!s.mounts.empty()) j["mounts"] = s.mounts;
  if (!s.ports.empty()) j["ports"] = s.ports;
  if (s.privileged) j["privileged"] = true;
  if (!s.idmap.empty()) j["idmap"] = s.idmap;
  if (s.image_idmapped) j["image_idmapped"] = true;
  if (!s.image_layers.empty()) j["image_layers"] = s.image_layers;
  if (!s.image_digest.empty()) j["image_digest"] = s.image_digest;
  return j.dump();
}

SandboxSpec FromStoredJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  SandboxSpec s;
  if (!j.is_object()) return s;
  s.name = Stored<std::string>(j, "name", "");
  s.image = Stored<std::string>(j, "image", "");
  s.cpus = Stored(j, "cpus", kDefaultCpus);
  s.mem_limit = Stored(j, "mem_limit", kDefaultMemLimit);
  s.disk = Stored(j, "disk", kDefaultDisk);
  s.pids = Stored(j, "pids", kDefaultPids);
  s.environment = StringMap(j, "environment");
  s.working_dir = Stored<std::string>(j, "working_dir", kDefaultWorkingDir);
  s.user = Stored<std::string>(j, "user", kDefaultUser);
  s.labels = StringMap(j, "labels");
  s.mounts = Stored(j, "mounts", std::vector<SpecMount>{});
  s.ports = Stored(j, "ports", std::vector<SpecPort>{});
  s.secrets = Stored(j, "secrets", std::vector<SpecSecretFile>{});
  s.egress = j.contains("egress") ? j["egress"] : json("none");
  s.privileged = Stored(j, "privileged", false);
  s.image_idmapped = Stored(j, "image_idmapped", false);
  s.image_layers = Stored(j, "image_layers", std::vector<std::string>{});
  s.image_digest = Stored<std::string>(j, "image_digest", "");
  s.idmap = Stored(j, "idmap", std::vector<engine::IdMapping>{});
  s.expires = std::chrono::seconds(Stored(j, "expires", kDefaultExpiresS));
  s.idle_timeout = std::chrono::seconds(Stored(j, "idle_timeout", kDefaultIdleTimeoutS));
  return s;
}

}  // namespace isb::spec
