// Org quotas at sandbox creation.
#include "api/quota_gate.h"

#include "api/org_sandboxes.h"

namespace isb::api {

Result<SandboxInfo> QuotaGate::Create(Sandboxes& org_sandboxes, const std::string& org, const SandboxSpec& spec) {
  ISB_ASSIGN_OR_RETURN(identity::Quota q, lookup_(org));
  if (!(q.cpus || q.memory || q.instances || q.disk || q.pids)) return org_sandboxes.Create(spec);
  MutexLock lock(mu_);
  ISB_ASSIGN_OR_RETURN(std::vector<SandboxInfo> existing, org_sandboxes.List());
  const uint64_t image_bytes = q.disk && image_bytes_ ? image_bytes_(org) : 0;
  ISB_TRY(CheckQuota(org, q, existing, spec, image_bytes));
  return org_sandboxes.Create(spec);
}

}  // namespace isb::api
