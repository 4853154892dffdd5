// An in-memory Sandboxes for the api tests: records what the tools asked for, scriptable exec.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "api/sandboxes.h"

namespace isb::api {

class FakeSandboxes : public Sandboxes {
 public:
  // The lifecycle calls record who asked in `origins`.
  Result<SandboxInfo> Create(const SandboxSpec& spec, const CallOrigin& origin = {}) override;
  Result<SandboxInfo> Get(const std::string& id_or_name) override;
  Result<std::vector<SandboxInfo>> List() override;
  Result<ExecResult> Exec(const std::string& id_or_name, const ExecRequest& req, const OutputSink& sink) override;
  // Records the request in last_exec (and last_detached); log ids count from 1.
  Result<DetachedExec> ExecDetached(const std::string& id_or_name, const ExecRequest& req) override;
  // The sandbox's entry in `logs` (an empty read when it has none), after recording last_after and last_limit.
  Result<LogRead> Logs(const std::string& id_or_name, uint64_t after, size_t limit_bytes) override;
  Result<SandboxInfo> Stop(const std::string& id_or_name, const CallOrigin& origin = {}) override;
  Result<SandboxInfo> Start(const std::string& id_or_name, const CallOrigin& origin = {}) override;
  Result<SandboxInfo> Extend(const std::string& id_or_name, std::chrono::seconds by,
                             const CallOrigin& origin = {}) override;
  Result<SandboxInfo> SetEgress(const std::string& id_or_name, const nlohmann::json& egress) override;
  Status Remove(const std::string& id_or_name, const CallOrigin& origin = {}) override;
  Result<FileData> ReadFile(const std::string& id_or_name, const std::string& path) override;
  Status WriteFile(const std::string& id_or_name, const std::string& path, const FileData& data) override;

  // Default exec: writes "out:" + argv joined by ' ' to stdout (through the sink, in two chunks) and "err" to
  // stderr, exit code 0.
  std::function<Result<ExecResult>(const ExecRequest&, const OutputSink&)> exec_fn;

  std::mutex mu;
  std::map<std::string, SandboxInfo> sandboxes;  // by id
  std::map<std::string, FileData> files;         // by "id:path"
  ExecRequest last_exec;
  std::string last_exec_id;  // the id of the sandbox last_exec ran in
  std::string last_path;
  bool last_detached = false;
  int detached = 0;
  std::map<std::string, LogRead> logs;  // by id
  uint64_t last_after = 0;
  size_t last_limit = 0;
  int next = 1;
  std::vector<std::string> origins;  // "CALL ACTOR ACTOR_KIND REQUEST_ID" per lifecycle call, CALL as "create"

 private:
  SandboxInfo* Find(const std::string& id_or_name);               // REQUIRES: mu held
  void Asked(const std::string& call, const CallOrigin& origin);  // REQUIRES: mu held
};

}  // namespace isb::api
