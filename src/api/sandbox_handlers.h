// The sandbox tools' handlers, one named function each: JSON in, a call on the caller's org's sandboxes, JSON out.
// Their schemas and registration are in sandbox_tools.cc.
#pragma once

#include <nlohmann/json.hpp>

#include "api/registry.h"
#include "api/sandbox_tools.h"
#include "api/sandboxes.h"

namespace isb::api {

// Every handler acts through OrgSandboxes: a sandbox of another org is one that does not exist.
// REQUIRES: `all` and the options' objects outlive the handlers. Thread-safe as `all` is.
class SandboxHandlers {
 public:
  using json = nlohmann::json;
  SandboxHandlers(Sandboxes& all, SandboxToolOptions options, json create_schema)
      : all_(all), options_(options), create_schema_(std::move(create_schema)) {}

  Result<json> Create(const json& in, const CallContext& ctx);
  Result<json> Get(const json& in, const CallContext& ctx);
  Result<json> List(const json& in, const CallContext& ctx);
  Result<json> Stop(const json& in, const CallContext& ctx);
  Result<json> Start(const json& in, const CallContext& ctx);
  Result<json> SetEgress(const json& in, const CallContext& ctx);
  Result<json> Extend(const json& in, const CallContext& ctx);
  Result<json> Remove(const json& in, const CallContext& ctx);
  Result<json> Exec(const json& in, const CallContext& ctx);
  // sandbox_exec's precheck: a sandbox that is not there is told before a stream begins (404); one that stops
  // meanwhile ends the stream with an error event.
  Status ExecFindsSandbox(const json& in, const CallContext& ctx);
  Result<json> Logs(const json& in, const CallContext& ctx);
  Result<json> ExecInput(const json& in, const CallContext& ctx);
  Result<json> ExecResize(const json& in, const CallContext& ctx);
  Result<json> FileRead(const json& in, const CallContext& ctx);
  Result<json> FileWrite(const json& in, const CallContext& ctx);

 private:
  // Resolves spec.image, a reference, among `org`'s images: its layers, digest and config into `spec`, where `given`
  // (the caller's fields) has none.
  Status ApplyImage(SandboxSpec& spec, const json& given, const std::string& org,
                    const std::function<Status(uint64_t)>& may_flatten) const;
  // Exec without its count and latency (isb_sandbox_execs_total, isb_sandbox_exec_seconds).
  Result<json> ExecUntimed(const json& in, const CallContext& ctx);
  // sandbox_exec with detach: the command started, its handle returned.
  Result<json> ExecDetached(const json& in, const CallContext& ctx);
  Sandboxes& all_;
  const SandboxToolOptions options_;
  const json create_schema_;  // what a filled-in ${NAME} is judged by again
};

}  // namespace isb::api
