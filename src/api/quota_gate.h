// Org quotas at sandbox creation: the check and the create as one step, so concurrent creates cannot both fit.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "api/sandboxes.h"
#include "base/mutex.h"
#include "base/result.h"
#include "identity/orgs.h"

namespace isb::api {

// One per daemon, shared by every surface's sandbox_create (SandboxToolOptions::quotas).
// Thread-safe: creates of orgs with a quota are serialized; those of orgs without one are not held up.
class QuotaGate {
 public:
  using Lookup = std::function<Result<identity::Quota>(const std::string& org)>;
  // The bytes an org's images take on disk (ImageStore::OrgBytes), counted against its disk quota.
  using ImageBytes = std::function<uint64_t(const std::string& org)>;
  explicit QuotaGate(Lookup lookup, ImageBytes image_bytes = nullptr)
      : lookup_(std::move(lookup)), image_bytes_(std::move(image_bytes)) {}

  // Bytes a create is about to write to the org's disk before its sandbox is made (a flattened image layer): OK, or
  // kForbidden when they would pass the org's disk quota (CheckFlattenQuota).
  using DiskCheck = std::function<Status(uint64_t bytes)>;
  // What a create does to its spec once the quota let it through and before the sandbox is made (its image
  // resolved); `may_write` is null for an org without a quota.
  using Prepare = std::function<Status(SandboxSpec& spec, const DiskCheck& may_write)>;

  // Creates `spec` through `org_sandboxes` (the org's own view) if it fits `org`'s quota beside what the org has,
  // running or stopped; else kForbidden naming the quota (CheckQuota). `prepare`, when set, runs after that check and
  // before the create, without the gate held (a flatten takes long, and no other create waits for it): what it is
  // let write is reserved for the org until it returns, so concurrent creates of the org cannot together pass the
  // quota, and the check is made again with the create, in one step.
  Result<SandboxInfo> Create(Sandboxes& org_sandboxes, const std::string& org, const SandboxSpec& spec,
                             const Prepare& prepare = nullptr);

 private:
  Lookup lookup_;
  ImageBytes image_bytes_;
  // The org's image bytes, with what its creates being prepared may still write (reserved).
  uint64_t ImageBytesLocked(const std::string& org, const identity::Quota& q) ISB_REQUIRES(mu_);

  Mutex mu_;  // held for a quota's check, a reservation, and the last check with its create
  std::map<std::string, uint64_t> reserved_ ISB_GUARDED_BY(mu_);  // by org
};

}  // namespace isb::api
