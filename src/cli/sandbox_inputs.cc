// The tool inputs the sandbox commands build from their flags (create, exec, extend, cp's two sides), refused as a
// usage error naming the flag before anything is sent.
#include "cli/sandbox_cmds.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "base/units.h"
#include "cli/bind_spec.h"
#include "cli/sandbox_cmds_internal.h"
#include "engine/id_mapping.h"

namespace isb::cli {

Result<std::pair<std::string, std::string>> ParseKeyValue(const std::string& flag, const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return Usage(flag + " '" + text + "': use KEY=VALUE");
  return std::pair{text.substr(0, eq), text.substr(eq + 1)};
}

Result<int64_t> ParseSeconds(const std::string& flag, const std::string& text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return Usage(flag + ": " + d.error().message);
  if (d->count() % 1000 != 0) return Usage(flag + " '" + text + "': use whole seconds");
  return static_cast<int64_t>(d->count() / 1000);
}

// What the daemon's egress parser would misread: a URL (its scheme read as a host and its "//" as a port), and a
// comma typed for a dot ("pypi,org": two one-word names). `given` is the `flag` value the parts came from.
Status CheckEgressEntries(const std::string& flag, const std::string& given, const std::vector<std::string>& parts) {
  for (const std::string& p : parts) {
    size_t scheme = p.find("://");
    if (scheme == std::string::npos) continue;
    std::string host = p.substr(scheme + 3);
    host = host.substr(0, host.find_first_of("/?#"));
    return Usage(
        flag + " '" + p + "': give a host name, not a URL: " + host +
        (host.find(':') == std::string::npos && p.starts_with("https://") ? " (port 443 is the default)" : ""));
  }
  if (parts.size() < 2) return {};
  std::string dotted;
  for (const std::string& p : parts) {
    const bool word = p != "none" && p != "open" && p.find_first_of(".:[*") == std::string::npos;
    if (!word) return {};
    dotted += (dotted.empty() ? "" : ".") + p;
  }
  return Usage(flag + " '" + given + "': a comma separates entries, and '" + parts[0] +
               "' alone is no host name; did you mean " + dotted + "?");
}

// "[ADDR:]HOSTPORT:PORT" (ADDR may be an IPv6 address in brackets) as a ports entry.
Result<json> PublishedPort(const std::string& spec) {
  auto bad = [&] { return Usage("--publish '" + spec + "': use [ADDR:]HOSTPORT:PORT, e.g. 8080:80"); };
  size_t last = spec.rfind(':');
  if (last == std::string::npos) return bad();
  std::string head = spec.substr(0, last), address;
  size_t mid = head.rfind(':');
  if (mid != std::string::npos) {
    address = head.substr(0, mid);
    head = head.substr(mid + 1);
    if (address.size() > 2 && address.front() == '[' && address.back() == ']')
      address = address.substr(1, address.size() - 2);
    if (address.empty()) return bad();
  }
  auto number = [](const std::string& s) -> int {
    if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string::npos) return 0;
    int n = std::stoi(s);
    return n <= 65535 ? n : 0;
  };
  int host_port = number(head), port = number(spec.substr(last + 1));
  if (host_port == 0 || port == 0) return bad();
  json out = {{"sandbox_port", port}, {"host_port", host_port}};
  if (!address.empty()) out["host_address"] = address;
  return out;
}

Result<json> EgressEntries(const std::string& flag, const std::vector<std::string>& values) {
  json hosts = json::array();
  for (const auto& e : values) {
    std::vector<std::string> parts;
    for (size_t at = 0; at <= e.size();) {
      size_t comma = std::min(e.find(',', at), e.size());
      if (comma > at) parts.push_back(e.substr(at, comma - at));
      at = comma + 1;
    }
    ISB_TRY(CheckEgressEntries(flag, e, parts));
    for (std::string& p : parts) hosts.push_back(std::move(p));
  }
  return hosts;
}

Result<json> CreateInput(const CreateFlags& f) {
  json in = json::object();
  if (!f.name.empty()) in["name"] = f.name;
  if (!f.image.empty()) in["image"] = f.image;
  if (!f.cpus.empty()) {
    auto m = ParseCpus(f.cpus);
    if (!m.ok()) return Usage("--cpus: " + m.error().message);
    in["cpus"] = static_cast<double>(*m) / 1000.0;
  }
  for (auto [value, flag, field] : {std::tuple{&f.memory, "--memory", "mem_limit"}, {&f.disk, "--disk", "disk"}}) {
    if (value->empty()) continue;
    auto bytes = ParseSize(*value);
    if (!bytes.ok()) return Usage(std::string(flag) + ": " + bytes.error().message);
    in[field] = *bytes;
  }
  if (!f.pids.empty()) {
    char* end = nullptr;
    unsigned long long pids = std::strtoull(f.pids.c_str(), &end, 10);
    if (f.pids[0] < '0' || f.pids[0] > '9' || *end != '\0' || pids < spec::kMinPids || pids > 65536) {
      return Usage("--pids '" + f.pids + "': use a whole number from 2 to 65536");
    }
    in["pids"] = pids;
  }
  for (const auto& e : f.env) {
    ISB_ASSIGN_OR_RETURN(auto kv, ParseKeyValue("--env", e));
    in["environment"][kv.first] = kv.second;
  }
  if (!f.workdir.empty()) in["working_dir"] = f.workdir;
  if (!f.user.empty()) in["user"] = f.user;
  for (const auto& l : f.labels) {
    ISB_ASSIGN_OR_RETURN(auto kv, ParseKeyValue("--label", l));
    in["labels"][kv.first] = kv.second;
  }
  for (const auto& m : f.mounts) {
    auto bind = ParseBindSpec("--mount", m);
    if (!bind.ok()) return Usage(bind.error().message);
    in["mounts"].push_back({{"source", bind->source}, {"target", bind->target}, {"read_only", bind->read_only}});
  }
  for (const auto& p : f.publish) {
    ISB_ASSIGN_OR_RETURN(json port, PublishedPort(p));
    in["ports"].push_back(std::move(port));
  }
  if (!f.egress.empty()) {
    ISB_ASSIGN_OR_RETURN(json hosts, EgressEntries("--egress", f.egress));
    // "none" and "open" are words of their own; the daemon refuses them combined with anything.
    if (hosts.size() == 1 && (hosts[0] == "none" || hosts[0] == "open"))
      in["egress"] = hosts[0];
    else
      in["egress"] = hosts;
  }
  if (!f.secrets.empty()) {
    // Secrets ride in the egress object: the list (none: no host but the secrets' own), and each secret with the
    // variable that holds its placeholder.
    json allow = in.contains("egress") ? in["egress"] : json::array();
    if (allow == "open")
      return Usage(
          "--secret: a sandbox with secrets reaches a list of hosts, not open egress; give --egress HOST... "
          "or leave it out (the secrets' own hosts)");
    if (allow == "none") allow = json::array();
    json secrets = json::array();
    for (const std::string& s : f.secrets) {
      const size_t eq = s.find('=');
      if (eq == 0 || eq + 1 == s.size())
        return Usage("--secret '" + s + "': NAME, or NAME=ENV (the variable that holds its placeholder)");
      if (eq == std::string::npos)
        secrets.push_back(s);
      else
        secrets.push_back({{"name", s.substr(0, eq)}, {"env", s.substr(eq + 1)}});
    }
    in["egress"] = {{"allow", std::move(allow)}, {"secrets", std::move(secrets)}};
  }
  if (f.privileged) in["privileged"] = true;
  for (const auto& m : f.idmap) {
    ISB_ASSIGN_OR_RETURN(engine::IdMapping mapping, engine::ParseIdMapping("--idmap", m));
    in["idmap"].push_back(mapping);
  }
  if (!f.expires.empty()) {
    ISB_ASSIGN_OR_RETURN(in["expires"], ParseSeconds("--expires", f.expires));
  }
  if (!f.idle_timeout.empty()) {
    ISB_ASSIGN_OR_RETURN(in["idle_timeout"], ParseSeconds("--idle-timeout", f.idle_timeout));
  }
  return in;
}

Result<json> ExecInput(const ExecFlags& f, const std::string& stdin_data) {
  if (f.command.empty()) return Usage("exec needs a command: isb exec SANDBOX -- CMD ARGS...");
  if (f.detach && (f.interactive || f.tty))
    return Usage("-d cannot be combined with -i or -t: a detached command's stdin is /dev/null");
  json in = {{"sandbox", f.sandbox}, {"argv", f.command}};
  if (f.detach) in["detach"] = true;
  for (const auto& e : f.env) {
    ISB_ASSIGN_OR_RETURN(auto kv, ParseKeyValue("--env", e));
    in["env"][kv.first] = kv.second;
  }
  if (!f.workdir.empty()) in["workdir"] = f.workdir;
  if (!f.timeout.empty()) {
    ISB_ASSIGN_OR_RETURN(int64_t seconds, ParseSeconds("--timeout", f.timeout));
    if (seconds < 1) return Usage("--timeout: at least 1s");
    in["timeout"] = seconds;
  } else if (f.tty) {
    in["timeout"] = kMaxExecTimeoutS;  // a terminal is for people, who take longer than the 60 s default
  }
  // base64 always: stdin may be any bytes, and the "stdin" text field would mangle invalid UTF-8.
  if (f.interactive && !f.tty) in["stdin_base64"] = Base64Encode(stdin_data);
  return in;
}

Result<json> ExtendInput(const std::string& sandbox, const std::string& duration) {
  ISB_ASSIGN_OR_RETURN(int64_t seconds, ParseSeconds("extend", duration));
  if (seconds > spec::kMaxExpiresS)
    return Usage("extend " + duration + ": a sandbox expires at most 30d from now; give at most 30d");
  return json{{"sandbox", sandbox}, {"by", seconds}};
}

namespace {

// "SANDBOX:/path" is remote when SANDBOX holds no '/'; anything else is a local path.
Result<CpSide> ParseCpSide(const std::string& arg) {
  CpSide side;
  size_t colon = arg.find(':');
  bool named = colon != std::string::npos && colon > 0 && arg.substr(0, colon).find('/') == std::string::npos;
  if (!named) {
    side.path = arg;
    return side;
  }
  std::string path = arg.substr(colon + 1);
  if (path.empty() || path[0] != '/') {
    return Usage("'" + arg +
                 "': the path inside a sandbox must be absolute (SANDBOX:/path); for a local file "
                 "whose name holds ':', write ./" +
                 arg);
  }
  side.sandbox = arg.substr(0, colon);
  side.path = std::move(path);
  return side;
}

}  // namespace

Result<CpPlan> ParseCpArgs(const std::string& src, const std::string& dst) {
  CpPlan plan;
  ISB_ASSIGN_OR_RETURN(plan.src, ParseCpSide(src));
  ISB_ASSIGN_OR_RETURN(plan.dst, ParseCpSide(dst));
  if (plan.src.remote() && plan.dst.remote()) {
    return Usage("copying between sandboxes is not supported; copy out to a local file, then in");
  }
  if (!plan.src.remote() && !plan.dst.remote()) {
    return Usage("one side of isb cp must be SANDBOX:/path (the other a local path or '-')");
  }
  if (plan.src.path.empty() || plan.dst.path.empty()) return Usage("isb cp: empty path");
  return plan;
}

}  // namespace isb::cli
