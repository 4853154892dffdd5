// FakeSandboxes: enough behaviour (ids, names, states, files) to drive every tool through every surface.
#include "api/fake_sandboxes.h"

#include <cstdio>

namespace isb::api {

SandboxInfo* FakeSandboxes::Find(const std::string& id_or_name) {
  for (auto& [id, info] : sandboxes) {
    if (id == id_or_name || (!info.name.empty() && info.name == id_or_name)) return &info;
  }
  return nullptr;
}

#define FAKE_FIND(var, ref)     \
  SandboxInfo* var = Find(ref); \
  if (var == nullptr) return Error::Of(Code::kNotFound, "no sandbox '" + ref + "'")

void FakeSandboxes::Asked(const std::string& call, const CallOrigin& origin) {
  origins.push_back(call + " " + origin.actor + " " + origin.actor_kind + " " + origin.request_id);
}

Result<SandboxInfo> FakeSandboxes::Create(const SandboxSpec& spec, const CallOrigin& origin) {
  std::lock_guard lock(mu);
  Asked("create", origin);
  for (const auto& [id, info] : sandboxes) {
    if (!spec.name.empty() && info.name == spec.name && OrgOf(info) == OrgOf(spec)) {
      return Error::Of(Code::kConflict, "name: '" + spec.name + "' is in use");
    }
  }
  char id[32];
  snprintf(id, sizeof id, "sb-%016x", next++);
  SandboxInfo info;
  info.id = id;
  info.name = spec.name;
  info.state = "running";
  info.spec = spec;
  info.created_at = 1000;
  info.expires_at = 1000 + spec.expires.count();
  sandboxes[id] = info;
  return info;
}

Result<SandboxInfo> FakeSandboxes::Get(const std::string& ref) {
  std::lock_guard lock(mu);
  FAKE_FIND(s, ref);
  return *s;
}

Result<std::vector<SandboxInfo>> FakeSandboxes::List() {
  std::lock_guard lock(mu);
  std::vector<SandboxInfo> out;
  for (auto& [id, info] : sandboxes) out.push_back(info);
  return out;
}

Result<ExecResult> FakeSandboxes::Exec(const std::string& ref, const ExecRequest& req, const OutputSink& sink) {
  {
    std::lock_guard lock(mu);
    FAKE_FIND(s, ref);
    if (s->state != "running") return Error::Of(Code::kConflict, "sandbox is stopped");
    last_exec = req;
    last_exec_id = s->id;
  }
  if (exec_fn) return exec_fn(req, sink);
  std::string out = "out:";
  for (const auto& a : req.argv) out += " " + a;
  if (sink) {
    sink(1, out.substr(0, 4));
    sink(1, out.substr(4));
    sink(2, "err");
  }
  ExecResult r;
  r.stdout_data = out;
  r.stderr_data = "err";
  r.duration_ms = 1.5;
  return r;
}

Result<DetachedExec> FakeSandboxes::ExecDetached(const std::string& ref, const ExecRequest& req) {
  std::lock_guard lock(mu);
  FAKE_FIND(s, ref);
  if (s->state != "running") return Error::Of(Code::kConflict, "sandbox is stopped");
  last_exec = req;
  last_exec_id = s->id;
  last_detached = true;
  return DetachedExec{++detached};
}

Result<LogRead> FakeSandboxes::Logs(const std::string& ref, uint64_t after, size_t limit_bytes) {
  std::lock_guard lock(mu);
  FAKE_FIND(s, ref);
  last_after = after;
  last_limit = limit_bytes;
  auto it = logs.find(s->id);
  return it == logs.end() ? LogRead{} : it->second;
}

Result<SandboxInfo> FakeSandboxes::Stop(const std::string& ref, const CallOrigin& origin) {
  std::lock_guard lock(mu);
  Asked("stop", origin);
  FAKE_FIND(s, ref);
  s->state = "stopped";
  return *s;
}

Result<SandboxInfo> FakeSandboxes::Start(const std::string& ref, const CallOrigin& origin) {
  std::lock_guard lock(mu);
  Asked("start", origin);
  FAKE_FIND(s, ref);
  s->state = "running";
  return *s;
}

Result<SandboxInfo> FakeSandboxes::Extend(const std::string& ref, std::chrono::seconds by, const CallOrigin& origin) {
  std::lock_guard lock(mu);
  Asked("extend", origin);
  FAKE_FIND(s, ref);
  s->expires_at += by.count();
  return *s;
}

Result<SandboxInfo> FakeSandboxes::SetEgress(const std::string& ref, const nlohmann::json& egress) {
  std::lock_guard lock(mu);
  FAKE_FIND(s, ref);
  s->spec.egress = egress;
  return *s;
}

Status FakeSandboxes::Remove(const std::string& ref, const CallOrigin& origin) {
  std::lock_guard lock(mu);
  Asked("remove", origin);
  FAKE_FIND(s, ref);
  sandboxes.erase(s->id);
  return {};
}

Result<FileData> FakeSandboxes::ReadFile(const std::string& ref, const std::string& path) {
  std::lock_guard lock(mu);
  FAKE_FIND(s, ref);
  last_path = path;
  auto it = files.find(s->id + ":" + path);
  if (it == files.end()) return Error::Of(Code::kNotFound, path + ": no such file");
  return it->second;
}

Status FakeSandboxes::WriteFile(const std::string& ref, const std::string& path, const FileData& data) {
  std::lock_guard lock(mu);
  FAKE_FIND(s, ref);
  last_path = path;
  files[s->id + ":" + path] = data;
  return {};
}

}  // namespace isb::api
