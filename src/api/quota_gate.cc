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
  MutexLock lock(mu_);
  ISB_ASSIGN_OR_RETURN(std::vector<SandboxInfo> existing, org_sandboxes.List());
  const uint64_t image_bytes = q.disk && image_bytes_ ? image_bytes_(org) : 0;
  // Before anything is written for it (a flattened layer of its image): a create past the quota writes nothing.
  ISB_TRY(CheckQuota(org, q, existing, spec, image_bytes));
  if (prepare) {
    const SandboxSpec asked = spec;
    ISB_TRY(prepare(spec, [&](uint64_t bytes) {
      return CheckFlattenQuota(org, q, existing, asked, image_bytes, bytes);
    }));
    // What the images take now: a flattened layer another create made meanwhile is the org's to pay for too.
    if (q.disk && image_bytes_) ISB_TRY(CheckQuota(org, q, existing, spec, image_bytes_(org)));
  }
  return org_sandboxes.Create(spec);
}

}  // namespace isb::api
