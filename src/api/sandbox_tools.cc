// The sandbox tools: each declares its schemas once; handlers enforce the limits and translate JSON <-> Sandboxes.
#include "api/sandbox_tools.h"

#include <cctype>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "api/json_schema.h"
#include "api/json_util.h"
#include "api/org_sandboxes.h"
#include "api/schema.h"
#include "api/spec_policy.h"
#include "base/units.h"

namespace isb::api {
namespace {

Error Invalid(const std::string& msg) { return Error::Of(Code::kInvalidArgument, msg); }

// The "sandbox" field every per-sandbox tool requires (the schema guarantees a string).
std::string Ref(const json& in) { return in["sandbox"].get<std::string>(); }

// Who a terminal session belongs to: only the same org and identity may drive it.
std::string Caller(const CallContext& ctx) { return ctx.org + "/" + ctx.identity.Subject(); }

json SandboxRef() {
  return Str("The sandbox: its id (\"sb-\" and 16 hex digits) or its name.", 128, 1);
}

json EncodingField(const char* what, const char* dflt) {
  return {{"type", "string"},
          {"enum", {"utf-8", "base64"}},
          {"default", dflt},
          {"description", std::string("How ") + what +
                              " is carried in JSON: \"base64\" (field *_base64, any bytes) or \"utf-8\" (plain "
                              "text; invalid UTF-8 is replaced by U+FFFD)."}};
}

json EgressSchema() {
  return {{"type", json::array({"string", "array", "object"})},
          {"default", "none"},
          {"description",
           "Where the sandbox may connect. \"none\" (the default): loopback only. A list of \"host[:port]\" "
           "(port 443 unless given; \"*.example.com\" means names below example.com): only those, through isb's "
           "proxy. {\"allow\": [...]} the same; {\"block\": [...]}: every public host but those. \"open\": any "
           "public address, never the host, the LAN or other sandboxes."}};
}

json MountsSchema() {
  return {{"type", "array"},
          {"maxItems", 32},
          {"description",
           "Host paths bound into the sandbox. A remote caller's sources must lie under a --bind-root of the daemon, "
           "judged by their real path."},
          {"items", Object({{"source", Str("Absolute host path (a directory or a file).", 4096, 1)},
                            {"target", Str("Absolute path inside the sandbox; not /, /proc, /sys or /dev.", 4096, 1)},
                            {"read_only", Bool("Bound read-only (the default) or writable.")}},
                           {"source", "target"})}};
}

json PortsSchema() {
  return {{"type", "array"},
          {"maxItems", 16},
          {"description",
           "TCP ports inside the sandbox published on the host while it runs: host_address:host_port reaches "
           "127.0.0.1:sandbox_port inside. host_address defaults to 127.0.0.2; never 127.0.0.1, ::1, 0.0.0.0, :: "
           "or the daemon's own address (a browser signed in to isb there would send the sandbox its session "
           "cookie); a remote caller needs the daemon's --publish-address for any address but loopback."},
          {"items", Object({{"sandbox_port", Int("The port inside the sandbox (on its loopback).", 1, 65535)},
                            {"host_port", Int("The port on the host.", 1, 65535)},
                            {"host_address", Str("An IP address of the host; default 127.0.0.2.", 64, 1)}},
                           {"sandbox_port", "host_port"})}};
}

json IdMapSchema() {
  json entry = Object({{"kind", {{"type", "string"}, {"enum", {"uid", "gid", "both"}},
                                 {"description", "Which ids: uid, gid or both."}}},
                       {"host", Int("The first host id mapped in.", 0, 4294967294)},
                       {"sandbox", Int("The id it appears as inside (0-65535).", 0, 65535)},
                       {"count", Int("How many consecutive ids; default 1.", 1, 65536)}},
                      {"kind", "host", "sandbox"});
  return {{"type", json::array({"string", "array"})},
          {"default", "auto"},
          {"maxItems", engine::kMaxIdMapLines},
          {"items", std::move(entry)},
          {"description",
           "The sandbox's user namespace: \"auto\" (the default) or \"none\", its own 65536 ids and no host id; "
           "or a list of host ids mapped in, e.g. [{\"kind\": \"both\", \"host\": 1000, \"sandbox\": 1000}], "
           "the rest of 0-65535 staying its own. A remote caller needs the daemon's --allow-raw for a list. Not "
           "with privileged."}};
}

Result<std::vector<engine::IdMapping>> IdMapFromJson(const json& in) {
  auto it = in.find("idmap");
  if (it == in.end()) return std::vector<engine::IdMapping>{};
  if (it->is_string()) {
    if (*it != "auto" && *it != "none") return Invalid("idmap: expected \"auto\", \"none\" or a list of mappings");
    return std::vector<engine::IdMapping>{};
  }
  return it->get<std::vector<engine::IdMapping>>();
}

json SpecSchema() {
  json spec = Object(
      {{"name", Str("Optional name, unique in the org (other orgs may use it too): letters, digits, '.', '_', '-'; at "
                    "most 63; not starting with \"sb-\".",
                    63)},
       {"image", Str("A directory on the host used as the root filesystem; empty or absent: the default view of "
                     "the host.",
                     4096)},
       {"cpus", {{"type", "number"}, {"minimum", 0.001}, {"maximum", 1024}, {"default", 2},
                 {"description", "CPU quota in cores, e.g. 0.5 or 2."}}},
       {"mem_limit", {{"type", {"integer", "string"}}, {"default", 512 << 20},
                      {"description", "Memory limit, swap included: bytes (integer, at least 1048576) or a size "
                                      "such as \"512M\" or \"2G\"."}}},
       {"disk", {{"type", {"integer", "string"}}, {"default", kDefaultDisk},
                 {"description", "Size of the filesystem the sandbox writes to (its root outside /tmp and the "
                                 "mounts); writing beyond it fails with ENOSPC: bytes (integer, 16 MiB to 1 TiB) or "
                                 "a size such as \"64M\" or \"10G\"; default 2G. Counts toward the org's disk "
                                 "quota."}}},
       {"pids", Int("Maximum number of processes.", 1, 65536)},
       {"environment", StringMap("Environment variables of every process in the sandbox.", 256)},
       {"working_dir", Str("Absolute working directory inside the sandbox; default \"/\".", 4096)},
       {"user", Str("UID[:GID] inside the sandbox, e.g. \"1000:1000\"; default \"0:0\".", 32)},
       {"labels", StringMap("Free-form labels; sandbox_list can filter on them.", 64)},
       {"mounts", MountsSchema()},
       {"ports", PortsSchema()},
       {"egress", EgressSchema()},
       {"privileged", Bool("No user namespace of its own: the sandbox's root is the host's root, its ids the host's "
                           "(still its own mount, pid, network, uts and ipc namespaces, cgroup, capabilities and "
                           "seccomp). Default false; a remote caller needs the daemon's --allow-privileged.")},
       {"idmap", IdMapSchema()},
       {"expires", Int("Lifetime in seconds from creation; default 86400 (24h), at most 2592000 (30d).", 1,
                       kMaxExpiresS)},
       {"idle_timeout", Int("Seconds without exec and under 2% of one core after which the sandbox is removed; "
                            "default 7200 (2h).",
                            1, kMaxExpiresS)}},
      {});
  spec["properties"]["pids"]["default"] = 64;
  spec["properties"]["expires"]["default"] = kDefaultExpiresS;
  spec["properties"]["idle_timeout"]["default"] = kDefaultIdleTimeoutS;
  return spec;
}

// sandbox_create's input: a spec and the vars its ${NAME}s are filled from.
json CreateSchema() {
  json create = SpecSchema();
  create["properties"]["vars"] = StringMap(
      "Values for ${NAME} in name, image, working_dir, user and the values of environment and labels; \"$$\" is "
      "a literal \"$\". Only these fill a ${NAME} (never the daemon's environment); a remote caller's ${NAME} "
      "missing from vars is refused.",
      256);
  return create;
}

json InfoSchema() {
  json spec = SpecSchema();
  spec.erase("additionalProperties");
  spec["properties"]["mem_limit"] = {{"type", "integer"}, {"description", "Memory limit in bytes."}};
  spec["properties"]["disk"] = {{"type", "integer"},
                                {"description", "Size of the writable layer's filesystem, bytes."}};
  // What a caller may send is bounded; what the daemon returns also holds what it adds (the isb.org and isb.owner
  // labels, the proxy and trust-store variables of a sandbox with egress).
  for (const char* added : {"labels", "environment"}) spec["properties"][added].erase("maxProperties");
  json usage = {{"type", "object"},
                {"properties",
                 {{"cpu_usec", {{"type", "integer"}, {"description", "CPU time used, microseconds."}}},
                  {"memory_bytes", {{"type", "integer"}}},
                  {"pids", {{"type", "integer"}}}}}};
  return {{"type", "object"},
          {"required", {"id", "state", "spec", "created_at", "expires_at"}},
          {"properties",
           {{"id", {{"type", "string"}}},
            {"name", {{"type", "string"}}},
            {"state", {{"type", "string"}, {"enum", {"running", "stopped"}}}},
            {"spec", std::move(spec)},
            {"created_at", {{"type", "integer"}, {"description", "Unix seconds."}}},
            {"expires_at", {{"type", "integer"}, {"description", "Unix seconds."}}},
            {"last_active_at", {{"type", "integer"}, {"description", "Unix seconds."}}},
            {"usage", std::move(usage)},
            {"timing",
             {{"type", "object"},
              {"description", "In a create's result only: how it was served."},
              {"properties",
               {{"path", {{"type", "string"}, {"enum", {"pool", "cold"}},
                          {"description", "pool: a sandbox launched ahead, fitted to the spec; cold: launched for "
                                          "the call (another image, mounts, a disk size, larger limits than the "
                                          "defaults, open egress, or an empty pool)."}}},
                {"create_ms", {{"type", "number"}, {"description", "The create's time in the daemon."}}}}}}}}}};
}

// ---- input checks the schema subset cannot express ----

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

Status CheckName(const std::string& name) {
  if (name.empty()) return {};
  if (name.rfind("sb-", 0) == 0) return Invalid("name: must not start with \"sb-\" (reserved for ids)");
  if (!std::isalnum(static_cast<unsigned char>(name[0]))) return Invalid("name: must start with a letter or digit");
  for (char c : name) {
    if (!IsNameChar(c)) return Invalid("name: only letters, digits, '.', '_' and '-' are allowed");
  }
  return {};
}

Status CheckUser(const std::string& user) {
  size_t colon = user.find(':');
  auto digits = [](std::string_view s) {
    if (s.empty() || s.size() > 10) return false;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
    }
    return true;
  };
  if (!digits(std::string_view(user).substr(0, colon)) ||
      (colon != std::string::npos && !digits(std::string_view(user).substr(colon + 1)))) {
    return Invalid("user: expected UID[:GID] with numeric ids, e.g. \"1000:1000\", got '" + SanitizeUtf8(user) + "'");
  }
  return {};
}

Status CheckNoNul(const std::string& field, const std::string& value) {
  if (value.find('\0') != std::string::npos) return Invalid(field + ": must not contain a NUL character");
  return {};
}

Result<std::map<std::string, std::string>> EnvMap(const json& in, const std::string& field) {
  std::map<std::string, std::string> out;
  auto it = in.find(field);
  if (it == in.end()) return out;
  for (auto e = it->begin(); e != it->end(); ++e) {
    const std::string& key = e.key();
    if (key.empty() || key.find('=') != std::string::npos || key.find('\0') != std::string::npos) {
      return Invalid(field + ": invalid variable name '" + SanitizeUtf8(key) + "'");
    }
    std::string value = e.value().get<std::string>();
    ISB_TRY(CheckNoNul(field + "." + key, value));
    out[key] = std::move(value);
  }
  return out;
}

Result<std::map<std::string, std::string>> LabelMap(const json& in) {
  std::map<std::string, std::string> out;
  if (auto it = in.find("labels"); it != in.end()) {
    for (auto e = it->begin(); e != it->end(); ++e) out[e.key()] = e.value().get<std::string>();
  }
  return out;
}

// Lexical normalisation of an absolute path: ".", ".." and repeated slashes removed.
Result<std::string> NormalizePath(const std::string& field, const std::string& path) {
  ISB_TRY(CheckNoNul(field, path));
  if (path.empty() || path[0] != '/') return Invalid(field + ": must be an absolute path, got '" + SanitizeUtf8(path) + "'");
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
  // The engine resolves symlinks inside the sandbox root and refuses these too; this catches the plain case early.
  for (const char* refused : {"/proc", "/sys", "/dev"}) {
    std::string_view r = refused;
    if (out == r || out.rfind(std::string(r) + "/", 0) == 0) {
      return Invalid(field + ": paths under " + std::string(r) + " are refused");
    }
  }
  return out;
}

// A size field: bytes (an integer) or a size such as "512M"; `min` and `max` are what ValidateSpec allows.
Result<uint64_t> SizeField(const std::string& field, const json& v, uint64_t min, const std::string& min_text,
                           uint64_t max, const std::string& max_text) {
  uint64_t bytes = 0;
  if (v.is_string()) {
    auto parsed = ParseSize(v.get<std::string>());
    if (!parsed.ok()) return Invalid(field + ": " + parsed.error().message);
    bytes = *parsed;
  } else if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
    bytes = v.get<uint64_t>();
  } else if (v.is_number_float() && v.get<double>() >= 0) {
    // (The schema lets through integral values below 2^63 only; a negative one would not convert.)
    bytes = static_cast<uint64_t>(v.get<double>());
  } else {
    return Invalid(field + ": must be >= " + std::to_string(min));
  }
  if (bytes < min) return Invalid(field + ": must be at least " + min_text + " (" + std::to_string(min) + " bytes)");
  if (bytes > max) return Invalid(field + ": must be at most " + max_text);
  return bytes;
}

// The text or base64 field of an input, decoded; exactly one of them may be present.
Result<std::string> BytesField(const json& in, const std::string& text_field, const std::string& b64_field,
                               size_t max_bytes) {
  bool has_text = in.contains(text_field), has_b64 = in.contains(b64_field);
  if (has_text && has_b64) return Invalid("give either " + text_field + " or " + b64_field + ", not both");
  std::string data;
  if (has_b64) {
    auto decoded = Base64Decode(in[b64_field].get<std::string>());
    if (!decoded.ok()) return Invalid(b64_field + ": " + decoded.error().message);
    data = std::move(*decoded);
  } else if (has_text) {
    data = in[text_field].get<std::string>();
  }
  if (data.size() > max_bytes) {
    return Invalid((has_b64 ? b64_field : text_field) + ": at most " + std::to_string(max_bytes) + " bytes, got " +
                   std::to_string(data.size()));
  }
  return data;
}

// Puts `data` under `field` (utf-8) or `field`_base64.
void PutBytes(json& out, const std::string& field, const std::string& data, bool base64) {
  if (base64) out[field + "_base64"] = Base64Encode(data);
  else out[field] = SanitizeUtf8(data);
}

Result<uint32_t> FileMode(const json& in) {
  auto it = in.find("mode");
  if (it == in.end()) return 0644u;
  uint64_t mode = 0;
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (s.empty() || s.size() > 5) return Invalid("mode: expected octal digits such as \"0644\"");
    for (char c : s) {
      if (c < '0' || c > '7') return Invalid("mode: expected octal digits such as \"0644\"");
      mode = mode * 8 + static_cast<uint64_t>(c - '0');
    }
  } else {
    mode = it->get<uint64_t>();
  }
  if (mode > 0777) return Invalid("mode: must be at most 0777 (permission bits only)");
  return static_cast<uint32_t>(mode);
}

std::string ModeString(uint32_t mode) {
  char buf[8];
  snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

// Forwards exec output to the progress callback, holding back an incomplete UTF-8 sequence at a chunk's end so
// each forwarded piece is whole characters.
class Utf8Forwarder {
 public:
  explicit Utf8Forwarder(const ProgressFn& progress) : progress_(progress) {}
  void operator()(int stream, std::string_view data) {
    std::string& carry = carry_[stream == 2 ? 1 : 0];
    std::string text = carry + std::string(data);
    size_t keep = IncompleteTail(text);
    carry = text.substr(text.size() - keep);
    text.resize(text.size() - keep);
    if (!text.empty()) progress_(stream == 2 ? "stderr" : "stdout", text);
  }
  void Flush() {
    for (int i = 0; i < 2; ++i) {
      if (!carry_[i].empty()) progress_(i == 1 ? "stderr" : "stdout", carry_[i]);
      carry_[i].clear();
    }
  }

 private:
  // Bytes at the end that start a multi-byte sequence not yet complete (0..3).
  static size_t IncompleteTail(std::string_view s) {
    for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
      auto c = static_cast<unsigned char>(s[s.size() - back]);
      if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
      size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      return need > back ? back : 0;
    }
    return 0;
  }
  const ProgressFn& progress_;
  std::string carry_[2];
};

// ---- handlers ----

Result<std::vector<SpecMount>> MountsFromJson(const json& in) {
  std::vector<SpecMount> out;
  auto it = in.find("mounts");
  if (it == in.end()) return out;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string field = "mounts[" + std::to_string(i) + "]";
    SpecMount mount;
    mount.source = m["source"].get<std::string>();
    ISB_TRY(CheckNoNul(field + ".source", mount.source));
    if (mount.source[0] != '/') return Invalid(field + ".source: must be an absolute path");
    ISB_ASSIGN_OR_RETURN(mount.target, NormalizePath(field + ".target", m["target"].get<std::string>()));
    if (mount.target == "/") return Invalid(field + ".target: must not be /");
    mount.read_only = m.value("read_only", true);
    out.push_back(std::move(mount));
  }
  return out;
}

Result<std::vector<SpecPort>> PortsFromJson(const json& in) {
  std::vector<SpecPort> out;
  auto it = in.find("ports");
  if (it == in.end()) return out;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& p = (*it)[i];
    SpecPort port;
    port.sandbox_port = p["sandbox_port"].get<uint16_t>();
    port.host_port = p["host_port"].get<uint16_t>();
    port.host_address = p.value("host_address", port.host_address);
    for (size_t j = 0; j < out.size(); ++j)
      if (out[j].host_port == port.host_port && out[j].host_address == port.host_address)
        return Invalid("ports[" + std::to_string(i) + "]: " + port.host_address + ":" +
                       std::to_string(port.host_port) + " is published twice");
    out.push_back(std::move(port));
  }
  return out;
}

json SpecJson(const SandboxSpec& s) {
  return {{"name", s.name},
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
}

Result<SandboxSpec> SpecFromJson(const json& in) {
  SandboxSpec spec;
  spec.name = in.value("name", "");
  ISB_TRY(CheckName(spec.name));
  spec.image = in.value("image", "");
  ISB_TRY(CheckNoNul("image", spec.image));
  spec.cpus = in.value("cpus", spec.cpus);
  if (auto it = in.find("mem_limit"); it != in.end()) {
    ISB_ASSIGN_OR_RETURN(spec.mem_limit, SizeField("mem_limit", *it, 1u << 20, "1 MiB", 1ull << 40, "1 TiB"));
  }
  if (auto it = in.find("disk"); it != in.end()) {
    ISB_ASSIGN_OR_RETURN(spec.disk, SizeField("disk", *it, kMinDisk, "16 MiB", kMaxDisk, "1 TiB"));
  }
  spec.pids = in.value("pids", spec.pids);
  ISB_ASSIGN_OR_RETURN(spec.environment, EnvMap(in, "environment"));
  if (in.contains("working_dir")) {
    ISB_ASSIGN_OR_RETURN(spec.working_dir, NormalizePath("working_dir", in["working_dir"].get<std::string>()));
  }
  spec.user = in.value("user", spec.user);
  ISB_TRY(CheckUser(spec.user));
  ISB_ASSIGN_OR_RETURN(spec.labels, LabelMap(in));
  ISB_ASSIGN_OR_RETURN(spec.mounts, MountsFromJson(in));
  ISB_ASSIGN_OR_RETURN(spec.ports, PortsFromJson(in));
  if (auto it = in.find("egress"); it != in.end()) spec.egress = *it;
  spec.privileged = in.value("privileged", false);
  ISB_ASSIGN_OR_RETURN(spec.idmap, IdMapFromJson(in));
  ISB_TRY(engine::ValidateIdMappings(spec.idmap, spec.privileged));
  spec.expires = std::chrono::seconds(in.value("expires", int64_t{kDefaultExpiresS}));
  spec.idle_timeout = std::chrono::seconds(in.value("idle_timeout", int64_t{kDefaultIdleTimeoutS}));
  return spec;
}

Result<ExecRequest> ExecFromJson(const json& in) {
  ExecRequest req;
  const json& argv = in["argv"];
  for (size_t i = 0; i < argv.size(); ++i) {
    req.argv.push_back(argv[i].get<std::string>());
    ISB_TRY(CheckNoNul("argv[" + std::to_string(i) + "]", req.argv.back()));
  }
  if (req.argv.empty() || req.argv[0].empty()) return Invalid("argv[0]: must not be empty");
  ISB_ASSIGN_OR_RETURN(req.stdin_data, BytesField(in, "stdin", "stdin_base64", kMaxStdinBytes));
  ISB_ASSIGN_OR_RETURN(req.env, EnvMap(in, "env"));
  if (in.contains("workdir")) {
    ISB_ASSIGN_OR_RETURN(req.workdir, NormalizePath("workdir", in["workdir"].get<std::string>()));
  }
  req.timeout = std::chrono::seconds(in.value("timeout", int64_t{kDefaultExecTimeoutS}));
  req.tty = in.value("tty", false);
  for (const char* field : {"rows", "cols"}) {
    if (in.contains(field) && !req.tty) return Invalid(std::string(field) + ": only with \"tty\": true");
  }
  req.rows = static_cast<uint16_t>(in.value("rows", kDefaultRows));
  req.cols = static_cast<uint16_t>(in.value("cols", kDefaultCols));
  return req;
}

json ExecResultJson(ExecResult r, bool base64) {
  // The engine caps output; cap again so a misbehaving implementation cannot blow up a response.
  for (auto [data, flag] : {std::pair{&r.stdout_data, &r.stdout_truncated}, {&r.stderr_data, &r.stderr_truncated}}) {
    if (data->size() > kMaxOutputBytes) {
      data->resize(kMaxOutputBytes);
      *flag = true;
    }
  }
  json out = {{"exit_code", r.exit_code},
              {"signal", r.signal},
              {"timed_out", r.timed_out},
              {"stdout_truncated", r.stdout_truncated},
              {"stderr_truncated", r.stderr_truncated},
              {"duration_ms", r.duration_ms}};
  PutBytes(out, "stdout", r.stdout_data, base64);
  PutBytes(out, "stderr", r.stderr_data, base64);
  return out;
}

Status AddLifecycleTools(Registry& reg, Sandboxes& all) {
  json info = InfoSchema();
  json ref_only = Object({{"sandbox", SandboxRef()}}, {"sandbox"});
  auto info_result = [](Result<SandboxInfo> r) -> Result<json> {
    if (!r.ok()) return r.error();
    return SandboxInfoJson(*r);
  };

  ISB_TRY(reg.Add(Tool{
      "sandbox_get", "Get a sandbox",
      "State, spec, limits and usage (cpu, memory, pids) of one sandbox.", ref_only, info,
      ToolAnnotations{.read_only = true, .idempotent = true}, false,
      [&all, info_result](const json& in, const CallContext& ctx) {
        OrgSandboxes sb(all, ctx); return info_result(sb.Get(Ref(in))); }}));

  ISB_TRY(reg.Add(Tool{
      "sandbox_list", "List sandboxes",
      "All sandboxes, optionally only those carrying every given label.",
      Object({{"labels", StringMap("Only sandboxes whose labels include all of these.", 64)}}, {}),
      {{"type", "object"}, {"required", {"sandboxes"}},
       {"properties", {{"sandboxes", {{"type", "array"}, {"items", info}}}}}},
      ToolAnnotations{.read_only = true, .idempotent = true}, false,
      [&all](const json& in, const CallContext& ctx) -> Result<json> {
        OrgSandboxes sb(all, ctx);
        ISB_ASSIGN_OR_RETURN(auto listed, sb.List());
        ISB_ASSIGN_OR_RETURN(auto want, LabelMap(in));
        json list = json::array();
        for (const SandboxInfo& s : listed) {
          bool match = true;
          for (const auto& [k, v] : want) {
            auto it = s.spec.labels.find(k);
            match = match && it != s.spec.labels.end() && it->second == v;
          }
          if (match) list.push_back(SandboxInfoJson(s));
        }
        return json{{"sandboxes", std::move(list)}};
      }}));

  ISB_TRY(reg.Add(Tool{
      "sandbox_stop", "Stop a sandbox",
      "Stops every process in the sandbox; its files are kept (except /tmp, a tmpfs) and sandbox_start runs it again.", ref_only, info,
      ToolAnnotations{.destructive = true, .idempotent = true}, false,
      [&all, info_result](const json& in, const CallContext& ctx) {
        OrgSandboxes sb(all, ctx); return info_result(sb.Stop(Ref(in))); }}));

  ISB_TRY(reg.Add(Tool{
      "sandbox_start", "Start a stopped sandbox", "Starts a sandbox that sandbox_stop stopped.", ref_only, info,
      ToolAnnotations{.idempotent = true}, false,
      [&all, info_result](const json& in, const CallContext& ctx) {
        OrgSandboxes sb(all, ctx); return info_result(sb.Start(Ref(in))); }}));

  ISB_TRY(reg.Add(Tool{
      "sandbox_egress_set", "Change a sandbox's egress",
      "Replaces the hosts a running sandbox may reach; new connections follow the new list at once. Lists change "
      "to lists; a sandbox created with none or open keeps that.",
      Object({{"sandbox", SandboxRef()}, {"egress", EgressSchema()}}, {"sandbox", "egress"}), info,
      ToolAnnotations{.idempotent = true}, false,
      [&all, info_result](const json& in, const CallContext& ctx) {
        OrgSandboxes sb(all, ctx); return info_result(sb.SetEgress(Ref(in), in["egress"])); }}));

  ISB_TRY(reg.Add(Tool{
      "sandbox_extend", "Extend a sandbox's lifetime",
      "Moves the sandbox's expiry later by `by` seconds; the lifetime stays at most 30 days.",
      Object({{"sandbox", SandboxRef()},
              {"by", Int("Seconds to add to the expiry (1 to 2592000).", 1, kMaxExpiresS)}},
             {"sandbox", "by"}),
      info, ToolAnnotations{}, false,
      [&all, info_result](const json& in, const CallContext& ctx) {
        OrgSandboxes sb(all, ctx);
        return info_result(sb.Extend(Ref(in), std::chrono::seconds(in["by"].get<int64_t>())));
      }}));

  return reg.Add(Tool{
      "sandbox_remove", "Remove a sandbox",
      "Kills every process in the sandbox and deletes it with its files. Cannot be undone.", ref_only,
      {{"type", "object"}, {"required", {"sandbox", "removed"}},
       {"properties", {{"sandbox", {{"type", "string"}}}, {"removed", {{"type", "boolean"}}}}}},
      ToolAnnotations{.destructive = true, .idempotent = true}, false,
      [&all](const json& in, const CallContext& ctx) -> Result<json> {
        OrgSandboxes sb(all, ctx);
        std::string ref = Ref(in);
        ISB_TRY(sb.Remove(ref));
        return json{{"sandbox", ref}, {"removed", true}};
      }});
}

Status AddCreateAndExec(Registry& reg, Sandboxes& all, const SandboxToolOptions& options) {
  ISB_TRY(reg.Add(Tool{
      "sandbox_create", "Create a sandbox",
      "Creates a long-lived sandbox and returns once it is ready. Every field is optional. Durations are whole "
      "seconds; expires defaults to 86400 (24h, at most 30 days) and idle_timeout to 7200 (2h).",
      CreateSchema(), InfoSchema(), ToolAnnotations{}, false,
      [&all, remote = options.remote, quota = options.quota, schema = CreateSchema()](
          const json& in, const CallContext& ctx) -> Result<json> {
        OrgSandboxes sb(all, ctx);
        // ${NAME} comes from the caller's vars alone: always for a remote caller, for the host when it sends vars.
        // What was filled is judged by the schema again (a field's length).
        json filled = in;
        if (!ctx.identity.superadmin || in.contains("vars")) {
          std::map<std::string, std::string> vars;
          if (auto it = in.find("vars"); it != in.end()) vars = it->get<std::map<std::string, std::string>>();
          ISB_ASSIGN_OR_RETURN(filled, ExpandSpecVars(in, vars));
          if (Status judged = Validate(schema, filled); !judged.ok()) return judged.error();
        }
        ISB_ASSIGN_OR_RETURN(SandboxSpec spec, SpecFromJson(filled));
        // Every caller but the host and superadmins: only what the operator's flags allow, and an image by the real
        // path that was checked, not the one sent.
        if (remote != nullptr && !ctx.identity.superadmin) {
          if (Status allowed = CheckRemoteSpec(spec, *remote, ctx.org); !allowed.ok()) return allowed.error();
          if (!spec.image.empty()) {
            ISB_ASSIGN_OR_RETURN(spec.image, ResolveUnderBindRoot("image", spec.image, *remote, ctx.org));
          }
          for (size_t i = 0; i < spec.mounts.size(); ++i) {
            ISB_ASSIGN_OR_RETURN(spec.mounts[i].source,
                                 ResolveUnderBindRoot("mounts[" + std::to_string(i) + "].source",
                                                      spec.mounts[i].source, *remote, ctx.org));
          }
          spec.paths_checked = true;
        }
        // An image the host chose is seen through the sandbox's id mapping: its root's files are the sandbox
        // root's. A remote caller's image is a directory below a bind root, whose files it may see only as others.
        spec.image_idmapped = !spec.image.empty() && !spec.paths_checked;
        // The quota's check and the create are one step per daemon, so concurrent creates cannot both squeeze in.
        static std::mutex quota_mu;
        std::unique_lock<std::mutex> quota_lock;
        if (quota) {
          ISB_ASSIGN_OR_RETURN(identity::Quota q, quota(ctx.org));
          if (q.cpus || q.memory || q.instances || q.disk || q.pids) {
            quota_lock = std::unique_lock(quota_mu);
            ISB_ASSIGN_OR_RETURN(std::vector<SandboxInfo> existing, sb.List());
            if (Status fits = CheckQuota(ctx.org, q, existing, spec); !fits.ok()) return fits.error();
          }
        }
        ISB_ASSIGN_OR_RETURN(SandboxInfo info, sb.Create(spec));
        return SandboxInfoJson(info);
      }}));

  json exec_in = Object(
      {{"sandbox", SandboxRef()},
       {"argv", {{"type", "array"}, {"minItems", 1}, {"maxItems", 4096},
                 {"items", {{"type", "string"}, {"maxLength", 131072}}},
                 {"description", "The program and its arguments; never run through a shell. Use "
                                 "[\"sh\", \"-c\", \"...\"] for shell syntax."}}},
       {"stdin", Str("Standard input as UTF-8 text (at most 1 MiB).", kMaxStdinBytes)},
       {"stdin_base64", Str("Standard input as base64 (at most 1 MiB decoded); instead of stdin.",
                            kMaxStdinBytes / 3 * 4 + 4)},
       {"env", StringMap("Extra environment variables for this command.", 256)},
       {"workdir", Str("Absolute working directory; default: the sandbox's working_dir.", 4096)},
       {"timeout", Int("Seconds before the command is killed; default 60, at most 900 (15 minutes).", 1,
                       kMaxExecTimeoutS)},
       {"encoding", EncodingField("output", "utf-8")},
       {"tty", {{"type", "boolean"}, {"default", false},
                {"description", "Run the command on a terminal (a pty inside the sandbox): stderr merges into "
                                "stdout. Streaming calls only; the first event names the session that "
                                "sandbox_exec_input and sandbox_exec_resize act on."}}},
       {"rows", Int("With tty: the terminal's height; default 24.", 1, kMaxTerminalSide)},
       {"cols", Int("With tty: the terminal's width; default 80.", 1, kMaxTerminalSide)}},
      {"sandbox", "argv"});
  exec_in["properties"]["timeout"]["default"] = kDefaultExecTimeoutS;
  exec_in["properties"]["rows"]["default"] = kDefaultRows;
  exec_in["properties"]["cols"]["default"] = kDefaultCols;
  json exec_out = {
      {"type", "object"},
      {"required", {"exit_code", "timed_out", "duration_ms"}},
      {"properties",
       {{"exit_code", {{"type", "integer"}, {"description", "The command's exit status; 128+N when killed by signal N."}}},
        {"signal", {{"type", "integer"}, {"description", "The signal that killed it, or 0."}}},
        {"timed_out", {{"type", "boolean"}}},
        {"stdout", {{"type", "string"}}},
        {"stderr", {{"type", "string"}}},
        {"stdout_base64", {{"type", "string"}}},
        {"stderr_base64", {{"type", "string"}}},
        {"stdout_truncated", {{"type", "boolean"}, {"description", "stdout exceeded 256 KiB and was cut."}}},
        {"stderr_truncated", {{"type", "boolean"}, {"description", "stderr exceeded 256 KiB and was cut."}}},
        {"duration_ms", {{"type", "number"}}},
        {"session", {{"type", "string"}, {"description", "With tty: the terminal session's id."}}}}}};
  Tool exec{
      "sandbox_exec", "Run a command in a sandbox",
      "Runs argv in the sandbox and returns its exit code, stdout and stderr (each capped at 256 KiB, with a "
      "truncated flag) and duration. timeout is in seconds (default 60, at most 900). Streaming callers (REST "
      "?stream=1, MCP with a progressToken) also receive output as it is produced. With tty (streaming only) the "
      "command runs on a terminal: a \"session\" event (REST) or a progress notification with _meta "
      "isb/stream \"session\" (MCP) names the session first; send keystrokes with sandbox_exec_input and window "
      "sizes with sandbox_exec_resize while it runs. The session ends with the command or when the caller goes "
      "away.",
      std::move(exec_in), std::move(exec_out), ToolAnnotations{.destructive = true}, true,
      [&all](const json& in, const CallContext& ctx) -> Result<json> {
        OrgSandboxes sb(all, ctx);
        ISB_ASSIGN_OR_RETURN(ExecRequest req, ExecFromJson(in));
        bool base64 = in.value("encoding", "utf-8") == "base64";
        if (req.tty && !ctx.progress) {
          return Invalid("tty: needs a streaming call (REST ?stream=1 or Accept: text/event-stream; MCP with a "
                         "progressToken), which announces the session to send input to");
        }
        req.cancelled = ctx.cancelled;  // the caller's cancel (MCP's notifications/cancelled), or its going away
        if (!ctx.progress) {
          ISB_ASSIGN_OR_RETURN(ExecResult r, sb.Exec(Ref(in), req, nullptr));
          return ExecResultJson(std::move(r), base64);
        }
        Utf8Forwarder forward(ctx.progress);
        std::string session;
        if (req.tty) {
          req.caller = Caller(ctx);
          req.on_session = [&](const std::string& id) {
            session = id;
            ctx.progress("session", id);
          };
        }
        auto result = sb.Exec(Ref(in), req, [&forward](int stream, std::string_view data) {
          forward(stream, data);
        });
        forward.Flush();
        if (!result.ok()) return result.error();
        json out = ExecResultJson(std::move(*result), base64);
        if (!session.empty()) out["session"] = session;
        return out;
      }};
  // A sandbox that is not there is told before a stream begins (404); one that stops meanwhile ends the stream with
  // an error event.
  exec.precheck = [&all](const json& in, const CallContext& ctx) -> Status {
    OrgSandboxes sb(all, ctx);
    if (auto found = sb.Get(Ref(in)); !found.ok()) return found.error();
    return {};
  };
  return reg.Add(std::move(exec));
}

Status AddTerminalTools(Registry& reg, Sandboxes& all) {
  json session = Str("The terminal session's id, as the streaming sandbox_exec with tty announced it.", 64, 1);
  ISB_TRY(reg.Add(Tool{
      "sandbox_exec_input", "Type into a terminal session",
      "Sends input to a running sandbox_exec with tty, as keystrokes: data as UTF-8 text or data_base64 (at most "
      "64 KiB per call). eof then types the terminal's end-of-file character (Ctrl-D). Only the caller that "
      "started the session may use it.",
      Object({{"sandbox", SandboxRef()},
              {"session", session},
              {"data", Str("Input as UTF-8 text (at most 64 KiB).", kMaxTerminalInputBytes)},
              {"data_base64", Str("Input as base64 (at most 64 KiB decoded); instead of data.",
                                  kMaxTerminalInputBytes / 3 * 4 + 4)},
              {"eof", {{"type", "boolean"}, {"default", false},
                       {"description", "After the data, type end-of-file (Ctrl-D)."}}}},
             {"sandbox", "session"}),
      {{"type", "object"},
       {"required", {"session", "written"}},
       {"properties", {{"session", {{"type", "string"}}}, {"written", {{"type", "integer"}}}, {"eof", {{"type", "boolean"}}}}}},
      ToolAnnotations{.destructive = true}, false,
      [&all](const json& in, const CallContext& ctx) -> Result<json> {
        OrgSandboxes sb(all, ctx);
        ISB_ASSIGN_OR_RETURN(std::string data, BytesField(in, "data", "data_base64", kMaxTerminalInputBytes));
        bool eof = in.value("eof", false);
        std::string id = in["session"].get<std::string>();
        // (not ISB_TRY: this lambda sits inside one)
        if (Status st = sb.ExecInput(Ref(in), id, Caller(ctx), data, eof); !st.ok()) return st.error();
        return json{{"session", id}, {"written", data.size()}, {"eof", eof}};
      }}));

  return reg.Add(Tool{
      "sandbox_exec_resize", "Resize a terminal session",
      "Sets the window size of a running sandbox_exec with tty; the command receives SIGWINCH. Only the caller "
      "that started the session may use it.",
      Object({{"sandbox", SandboxRef()},
              {"session", session},
              {"rows", Int("Height in rows.", 1, kMaxTerminalSide)},
              {"cols", Int("Width in columns.", 1, kMaxTerminalSide)}},
             {"sandbox", "session", "rows", "cols"}),
      {{"type", "object"},
       {"required", {"session", "rows", "cols"}},
       {"properties", {{"session", {{"type", "string"}}}, {"rows", {{"type", "integer"}}}, {"cols", {{"type", "integer"}}}}}},
      ToolAnnotations{.idempotent = true}, false,
      [&all](const json& in, const CallContext& ctx) -> Result<json> {
        OrgSandboxes sb(all, ctx);
        std::string id = in["session"].get<std::string>();
        auto rows = in["rows"].get<uint16_t>(), cols = in["cols"].get<uint16_t>();
        ISB_TRY(sb.ExecResize(Ref(in), id, Caller(ctx), rows, cols));
        return json{{"session", id}, {"rows", rows}, {"cols", cols}};
      }});
}

Status AddFileTools(Registry& reg, Sandboxes& all) {
  json path = Str("Absolute path inside the sandbox; /proc, /sys and /dev are refused.", 4096, 1);
  ISB_TRY(reg.Add(Tool{
      "sandbox_file_read", "Read a file from a sandbox",
      "Returns a file's content (at most 4 MiB) as content_base64, or as content when encoding is \"utf-8\" "
      "(refused if the file is not valid UTF-8). Symlinks resolve inside the sandbox.",
      Object({{"sandbox", SandboxRef()}, {"path", path}, {"encoding", EncodingField("the content", "base64")}},
             {"sandbox", "path"}),
      {{"type", "object"},
       {"required", {"path", "size", "mode"}},
       {"properties",
        {{"path", {{"type", "string"}}},
         {"size", {{"type", "integer"}}},
         {"mode", {{"type", "string"}, {"description", "Permission bits in octal, e.g. \"0644\"."}}},
         {"content", {{"type", "string"}}},
         {"content_base64", {{"type", "string"}}}}}},
      ToolAnnotations{.read_only = true, .idempotent = true}, false,
      [&all](const json& in, const CallContext& ctx) -> Result<json> {
        OrgSandboxes sb(all, ctx);
        ISB_ASSIGN_OR_RETURN(std::string p, NormalizePath("path", in["path"].get<std::string>()));
        ISB_ASSIGN_OR_RETURN(FileData data, sb.ReadFile(Ref(in), p));
        if (data.content.size() > kMaxFileReadBytes) {
          return Error::Of(Code::kTooLarge, "file " + p + " is " + std::to_string(data.content.size()) +
                                                " bytes; sandbox_file_read returns at most 4 MiB (4194304)");
        }
        bool base64 = in.value("encoding", "base64") == "base64";
        if (!base64 && !IsValidUtf8(data.content)) {
          return Invalid("file " + p + " is not valid UTF-8; read it with encoding \"base64\"");
        }
        json out = {{"path", p}, {"size", data.content.size()}, {"mode", ModeString(data.mode)}};
        PutBytes(out, "content", data.content, base64);
        return out;
      }}));

  return reg.Add(Tool{
      "sandbox_file_write", "Write a file into a sandbox",
      "Creates or replaces a file (at most 2 MiB) from content_base64, or from content as UTF-8 text. mode is "
      "octal in a string (\"0755\") or an integer (default 0644). Symlinks resolve inside the sandbox.",
      Object({{"sandbox", SandboxRef()},
              {"path", path},
              {"content", Str("The content as UTF-8 text.", kMaxFileWriteBytes)},
              {"content_base64", Str("The content as base64; instead of content.", kMaxFileWriteBytes / 3 * 4 + 4)},
              {"mode", {{"type", {"string", "integer"}}, {"minimum", 0}, {"maximum", 0777},
                        {"description", "Permission bits: \"0644\" (octal string) or an integer; default 0644."}}}},
             {"sandbox", "path"}),
      {{"type", "object"},
       {"required", {"path", "size", "mode"}},
       {"properties", {{"path", {{"type", "string"}}}, {"size", {{"type", "integer"}}}, {"mode", {{"type", "string"}}}}}},
      ToolAnnotations{.destructive = true, .idempotent = true}, false,
      [&all](const json& in, const CallContext& ctx) -> Result<json> {
        OrgSandboxes sb(all, ctx);
        ISB_ASSIGN_OR_RETURN(std::string p, NormalizePath("path", in["path"].get<std::string>()));
        if (!in.contains("content") && !in.contains("content_base64")) {
          return Invalid("missing required field 'content_base64' (or 'content')");
        }
        FileData data;
        ISB_ASSIGN_OR_RETURN(data.content, BytesField(in, "content", "content_base64", kMaxFileWriteBytes));
        ISB_ASSIGN_OR_RETURN(data.mode, FileMode(in));
        ISB_TRY(sb.WriteFile(Ref(in), p, data));
        return json{{"path", p}, {"size", data.content.size()}, {"mode", ModeString(data.mode)}};
      }});
}

}  // namespace

json SandboxInfoJson(const SandboxInfo& info) {
  json out = {{"id", info.id},
              {"name", info.name},
              {"state", info.state},
              {"spec", SpecJson(info.spec)},
              {"created_at", info.created_at},
              {"expires_at", info.expires_at},
              {"last_active_at", info.last_active_at},
              {"usage",
               {{"cpu_usec", info.usage.cpu_usec}, {"memory_bytes", info.usage.memory_bytes}, {"pids", info.usage.pids}}}};
  if (!info.create_path.empty()) out["timing"] = {{"path", info.create_path}, {"create_ms", info.create_ms}};
  return out;
}

Status AddSandboxTools(Registry& registry, Sandboxes& sandboxes, SandboxToolOptions options) {
  ISB_TRY(AddCreateAndExec(registry, sandboxes, options));
  ISB_TRY(AddTerminalTools(registry, sandboxes));
  ISB_TRY(AddFileTools(registry, sandboxes));
  return AddLifecycleTools(registry, sandboxes);
}

}  // namespace isb::api
