// Org quotas at sandbox creation.
#include "api/quota_gate.h"

#include "api/org_sandboxes.h"

namespace isb::api {

Result<SandboxInfo> QuotaGate::Create(Sandboxes& org_sandboxes, const std::string& org, const SandboxSpec& spec) {
  ISB_ASSIGN_OR_RETURN(identity::Quota q, lookup_(org));
  if (!(q.cpus || q.memory || q.instances || q.disk || q.pids)) return org_sandboxes.Create(spec);
  MutexLock lock(mu_);
  ISB_ASSIGN_OR_RETURN(std::vector<SandboxInfo> existing, org_sandboxes.List());
  ISB_TRY(CheckQuota(org, q, existing, spec));
  return org_sandboxes.Create(spec);
}

}  // namespace isb::api
