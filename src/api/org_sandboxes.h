// One caller's view of the sandboxes: those of the org the call acts in, and no other. Every sandbox tool works
// through it, so a sandbox of another org is, to the caller, a sandbox that does not exist.
#pragma once

#include <string>
#include <vector>

#include "api/registry.h"
#include "api/sandboxes.h"
#include "identity/orgs.h"

namespace isb::api {

// OK when `spec` fits `org`'s quota beside the sandboxes it has (`existing`, running or stopped: a budget of what
// is allocated) and its images (`image_bytes` on disk, counted against its disk quota); else kForbidden naming the
// quota, the org's current use and what the spec asks for.
Status CheckQuota(const std::string& org, const identity::Quota& quota, const std::vector<SandboxInfo>& existing,
                  const SandboxSpec& spec, uint64_t image_bytes = 0);

// OK when `flatten_bytes` more on disk for `spec`'s image (the most a flatten of its lowest layers writes, made
// before the sandbox) fit `org`'s disk quota beside its sandboxes' disks, its images and `spec`'s disk; else
// kForbidden naming the quota, as CheckQuota does.
Status CheckFlattenQuota(const std::string& org, const identity::Quota& quota, const std::vector<SandboxInfo>& existing,
                         const SandboxSpec& spec, uint64_t image_bytes, uint64_t flatten_bytes);

// "100 MiB": bytes as quota messages show them.
std::string MiB(uint64_t bytes);

class OrgSandboxes final : public Sandboxes {
 public:
  // REQUIRES: `all` and `ctx` outlive this view (it lives for one call).
  OrgSandboxes(Sandboxes& all, const CallContext& ctx) : all_(all), ctx_(ctx) {}

  // Who asked, for what `all` records of a lifecycle call, is always the view's caller (Origin()): the `origin`
  // these calls take is not used.

  // Labels the sandbox with the org and the owner; a spec carrying isb.* labels itself is refused (kForbidden).
  Result<SandboxInfo> Create(const SandboxSpec& spec, const CallOrigin& origin = {}) override;
  // A name is looked up among the org's sandboxes only (another org may use the same one); another org's sandbox,
  // by id, is kNotFound "no sandbox 'REF'", exactly as one that does not exist.
  Result<SandboxInfo> Get(const std::string& id_or_name) override;
  Result<std::vector<SandboxInfo>> List() override;
  Result<ExecResult> Exec(const std::string& id_or_name, const ExecRequest& req, const OutputSink& sink) override;
  Result<DetachedExec> ExecDetached(const std::string& id_or_name, const ExecRequest& req) override;
  Result<LogRead> Logs(const std::string& id_or_name, uint64_t after, size_t limit_bytes) override;
  Status ExecInput(const std::string& id_or_name, const std::string& session, const std::string& caller,
                   const std::string& data, bool eof) override;
  Status ExecResize(const std::string& id_or_name, const std::string& session, const std::string& caller, uint16_t rows,
                    uint16_t cols) override;
  Result<SandboxInfo> Stop(const std::string& id_or_name, const CallOrigin& origin = {}) override;
  Result<SandboxInfo> Start(const std::string& id_or_name, const CallOrigin& origin = {}) override;
  Result<SandboxInfo> Extend(const std::string& id_or_name, std::chrono::seconds by,
                             const CallOrigin& origin = {}) override;
  Result<SandboxInfo> SetEgress(const std::string& id_or_name, const nlohmann::json& egress) override;
  Status Remove(const std::string& id_or_name, const CallOrigin& origin = {}) override;
  Result<FileData> ReadFile(const std::string& id_or_name, const std::string& path) override;
  Status WriteFile(const std::string& id_or_name, const std::string& path, const FileData& data) override;

 private:
  // The sandbox's id when it is the caller's org's.
  Result<std::string> Own(const std::string& id_or_name);
  // The call's caller and request, for the history.
  CallOrigin Origin() const;

  Sandboxes& all_;
  const CallContext& ctx_;
};

}  // namespace isb::api
