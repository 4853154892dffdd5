// OrgSandboxes: resolve, check the org, then act on the sandbox by id (never again by name, which could by then
// name another sandbox).
#include "api/org_sandboxes.h"

#include <cstdio>

namespace isb::api {

namespace {

std::string Cores(double cpus) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", cpus);
  return buf;
}

}  // namespace

std::string MiB(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

Status CheckQuota(const std::string& org, const identity::Quota& quota, const std::vector<SandboxInfo>& existing,
                  const SandboxSpec& spec, uint64_t image_bytes) {
  double cpus = 0;
  uint64_t memory = 0, disk = 0, pids = 0;
  for (const SandboxInfo& s : existing) {
    cpus += s.spec.cpus;
    memory += s.spec.mem_limit;
    disk += s.spec.disk;
    pids += s.spec.pids;
  }
  const std::string who = "quota: org '" + org + "' ";
  if (quota.instances && static_cast<int64_t>(existing.size()) + 1 > *quota.instances) {
    return Error::Of(Code::kForbidden, who + "may have " + std::to_string(*quota.instances) + " sandboxes and has " +
                                           std::to_string(existing.size()));
  }
  if (quota.cpus && cpus + spec.cpus > *quota.cpus + 1e-9) {
    return Error::Of(Code::kForbidden, who + "may be allocated " + Cores(*quota.cpus) + " cpus; it has " + Cores(cpus) +
                                           " and this sandbox asks for " + Cores(spec.cpus));
  }
  if (quota.memory && memory + spec.mem_limit > static_cast<uint64_t>(*quota.memory)) {
    return Error::Of(Code::kForbidden, who + "may be allocated " + MiB(*quota.memory) + " of memory; it has " +
                                           MiB(memory) + " and this sandbox asks for " + MiB(spec.mem_limit));
  }
  if (quota.disk && disk + image_bytes + spec.disk > static_cast<uint64_t>(*quota.disk)) {
    const std::string has =
        image_bytes == 0 ? MiB(disk)
                         : MiB(disk + image_bytes) + " (sandboxes " + MiB(disk) + ", images " + MiB(image_bytes) + ")";
    return Error::Of(Code::kForbidden, who + "may be allocated " + MiB(*quota.disk) + " of disk; it has " + has +
                                           " and this sandbox asks for " + MiB(spec.disk));
  }
  if (quota.pids && pids + spec.pids > static_cast<uint64_t>(*quota.pids)) {
    return Error::Of(Code::kForbidden, who + "may be allocated " + std::to_string(*quota.pids) + " pids; it has " +
                                           std::to_string(pids) + " and this sandbox asks for " +
                                           std::to_string(spec.pids));
  }
  return {};
}

Status CheckFlattenQuota(const std::string& org, const identity::Quota& quota, const std::vector<SandboxInfo>& existing,
                         const SandboxSpec& spec, uint64_t image_bytes, uint64_t flatten_bytes) {
  if (!quota.disk) return {};
  uint64_t disk = 0;
  for (const SandboxInfo& s : existing) disk += s.spec.disk;
  const uint64_t limit = static_cast<uint64_t>(*quota.disk);
  const uint64_t used = disk + image_bytes + spec.disk;
  if (used <= limit && flatten_bytes <= limit - used) return {};
  return Error::Of(Code::kForbidden, "quota: org '" + org + "' may be allocated " + MiB(limit) + " of disk; it has " +
                                         MiB(disk + image_bytes) + " (sandboxes " + MiB(disk) + ", images " +
                                         MiB(image_bytes) + "), this sandbox asks for " + MiB(spec.disk) +
                                         " and flattening the lowest layers of image '" + spec.image +
                                         "' would write up to " + MiB(flatten_bytes) +
                                         " more: remove images or sandboxes first");
}

CallOrigin OrgSandboxes::Origin() const {
  return {ctx_.identity.Subject(), std::string(identity::PrincipalKindName(ctx_.identity.kind)), ctx_.request_id};
}

Result<SandboxInfo> OrgSandboxes::Create(const SandboxSpec& spec, const CallOrigin&) {
  ISB_TRY(spec::CheckCallerLabels(spec.labels));
  // An org other than default is a tenant boundary no spec crosses, whoever sends it (flags, the host and
  // superadmins included): no sandbox there runs as the host's root, privileged or through an id mapping.
  if (ctx_.org != identity::kDefaultOrg) {
    const std::string in =
        " in org '" + ctx_.org + "': only the default org may have sandboxes that run as the host's root";
    if (spec.privileged) return Error::Of(Code::kForbidden, "privileged: true is refused" + in);
    for (size_t i = 0; i < spec.idmap.size(); ++i) {
      if (spec.idmap[i].host == 0)
        return Error::Of(Code::kForbidden,
                         "idmap[" + std::to_string(i) + "].host: mapping the host's id 0 is refused" + in);
    }
  }
  SandboxSpec owned = spec;
  owned.labels[kOrgLabel] = ctx_.org;
  owned.labels[kOwnerLabel] = ctx_.surface + ":" + ctx_.identity.Subject();
  return all_.Create(owned, Origin());
}

Result<SandboxInfo> OrgSandboxes::Get(const std::string& id_or_name) {
  ISB_ASSIGN_OR_RETURN(std::string id, Own(id_or_name));
  Result<SandboxInfo> info = all_.Get(id);
  // Removed meanwhile, or (never by Resolve's contract) another org's: the caller's reference is not found.
  if ((!info.ok() && info.error().code == Code::kNotFound) || (info.ok() && OrgOf(*info) != ctx_.org)) {
    return Error::Of(Code::kNotFound, "no sandbox '" + id_or_name + "'");
  }
  return info;
}

Result<std::string> OrgSandboxes::Own(const std::string& id_or_name) { return all_.Resolve(ctx_.org, id_or_name); }

Result<std::vector<SandboxInfo>> OrgSandboxes::List() {
  ISB_ASSIGN_OR_RETURN(std::vector<SandboxInfo> all, all_.List());
  std::vector<SandboxInfo> mine;
  for (SandboxInfo& info : all) {
    if (OrgOf(info) == ctx_.org) mine.push_back(std::move(info));
  }
  return mine;
}

Result<ExecResult> OrgSandboxes::Exec(const std::string& id_or_name, const ExecRequest& req, const OutputSink& sink) {
  ISB_ASSIGN_OR_RETURN(std::string id, Own(id_or_name));
  return all_.Exec(id, req, sink);
}

Result<DetachedExec> OrgSandboxes::ExecDetached(const std::string& id_or_name, const ExecRequest& req) {
  ISB_ASSIGN_OR_RETURN(std::string id, Own(id_or_name));
  return all_.ExecDetached(id, req);
}

Result<LogRead> OrgSandboxes::Logs(const std::string& id_or_name, uint64_t after, size_t limit_bytes) {
  ISB_ASSIGN_OR_RETURN(std::string id, Own(id_or_name));
  return all_.Logs(id, after, limit_bytes);
}

Status OrgSandboxes::ExecInput(const std::string& id_or_name, const std::string& session, const std::string& caller,
                               const std::string& data, bool eof) {
  ISB_ASSIGN_OR_RETURN(std::string id, Own(id_or_name));
  return all_.ExecInput(id, session, caller, data, eof);
}

Status OrgSandboxes::ExecResize(const std::string& id_or_name, const std::string& session, const std::string& caller,
                                uint16_t rows, uint16_t cols) {
  ISB_ASSIGN_OR_RETURN(std::string id, Own(id_or_name));
  return all_.ExecResize(id, session, caller, rows, cols);
}

Result<SandboxInfo> OrgSandboxes::Stop(const std::string& id_or_name, const CallOrigin&) {
  ISB_ASSIGN_OR_RETURN(std::string id, Own(id_or_name));
  return all_.Stop(id, Origin());
}

Result<SandboxInfo> OrgSandboxes::Start(const std::string& id_or_name, const CallOrigin&) {
  ISB_ASSIGN_OR_RETURN(std::string id, Own(id_or_name));
  return all_.Start(id, Origin());
}

Result<SandboxInfo> OrgSandboxes::Extend(const std::string& id_or_name, std::chrono::seconds by, const CallOrigin&) {
  ISB_ASSIGN_OR_RETURN(std::string id, Own(id_or_name));
  return all_.Extend(id, by, Origin());
}

Result<SandboxInfo> OrgSandboxes::SetEgress(const std::string& id_or_name, const nlohmann::json& egress) {
  ISB_ASSIGN_OR_RETURN(std::string id, Own(id_or_name));
  return all_.SetEgress(id, egress);
}

Status OrgSandboxes::Remove(const std::string& id_or_name, const CallOrigin&) {
  ISB_ASSIGN_OR_RETURN(std::string id, Own(id_or_name));
  return all_.Remove(id, Origin());
}

Result<FileData> OrgSandboxes::ReadFile(const std::string& id_or_name, const std::string& path) {
  ISB_ASSIGN_OR_RETURN(std::string id, Own(id_or_name));
  return all_.ReadFile(id, path);
}

Status OrgSandboxes::WriteFile(const std::string& id_or_name, const std::string& path, const FileData& data) {
  ISB_ASSIGN_OR_RETURN(std::string id, Own(id_or_name));
  return all_.WriteFile(id, path, data);
}

}  // namespace isb::api
