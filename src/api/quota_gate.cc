// Org quotas at sandbox creation.
#include "api/quota_gate.h"

#include "api/org_sandboxes.h"

namespace isb::api {

Result<SandboxInfo> QuotaGate::Create(Sandboxes& org_sandboxes, const std::string& org, const SandboxSpec& given,
                                      const Prepare& prepare) {
  ISB_ASSIGN_OR_RETURN(identity::Quota q, lookup_(org));
  SandboxSpec spec = given;
  if (!(q.cpus || q.memory || q.instances || q.disk || q.pids)) {
    if (prepare) ISB_TRY(prepare(spec, nullptr));
    return org_sandboxes.Create(spec);
  }
  if (prepare) {
    {
      // Before anything is written for it (a flattened layer of its image): a create past the quota writes nothing.
      MutexLock lock(mu_);
      ISB_ASSIGN_OR_RETURN(std::vector<SandboxInfo> existing, org_sandboxes.List());
      ISB_TRY(CheckQuota(org, q, existing, spec, ImageBytesLocked(org, q)));
    }
    uint64_t reserved = 0;
    struct Unreserve {  // what this create reserved, given back however prepare ends
      QuotaGate& gate;
      const std::string& org;
      const uint64_t& bytes;
      ~Unreserve() {
        if (bytes == 0) return;
        MutexLock lock(gate.mu_);
        if ((gate.reserved_[org] -= bytes) == 0) gate.reserved_.erase(org);
      }
    } unreserve{*this, org, reserved};
    const SandboxSpec asked = spec;
    const DiskCheck may_write = [&](uint64_t bytes) -> Status {
      MutexLock lock(mu_);
      ISB_ASSIGN_OR_RETURN(std::vector<SandboxInfo> existing, org_sandboxes.List());
      ISB_TRY(CheckFlattenQuota(org, q, existing, asked, ImageBytesLocked(org, q), bytes));
      if (bytes == 0) return {};
      reserved_[org] += bytes;
      reserved += bytes;
      return {};
    };
    ISB_TRY(prepare(spec, may_write));
  }
  // What the images take now (a flattened layer this create or another made is the org's to pay for too), checked
  // with the create in one step.
  MutexLock lock(mu_);
  ISB_ASSIGN_OR_RETURN(std::vector<SandboxInfo> existing, org_sandboxes.List());
  ISB_TRY(CheckQuota(org, q, existing, spec, ImageBytesLocked(org, q)));
  return org_sandboxes.Create(spec);
}

uint64_t QuotaGate::ImageBytesLocked(const std::string& org, const identity::Quota& q) {
  if (!q.disk) return 0;
  auto it = reserved_.find(org);
  return (image_bytes_ ? image_bytes_(org) : 0) + (it == reserved_.end() ? 0 : it->second);
}

}  // namespace isb::api
