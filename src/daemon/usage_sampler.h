// The usage sampler: every 2 s, each running sandbox's cgroup and network bytes read into the usage store
// (api/usage_store.h).
#pragma once

#include <chrono>
#include <thread>

#include "api/usage_store.h"
#include "base/mutex.h"
#include "daemon/egress_service.h"
#include "engine/cgroup.h"
#include "store/db.h"

namespace isb::daemon {

// Reads what engine::Cgroup::ReadStats exposes, cgroup v1 and v2 alike: CPU time, memory in use, pids; and the
// bytes the egress proxy relayed for the sandbox (EgressService::NetworkBytes).
class UsageSampler {
 public:
  static constexpr std::chrono::milliseconds kPeriod{2000};
  // `db`, `store` and `egress` outlive the sampler. Without `egress` the network bytes are 0.
  UsageSampler(store::Db* db, engine::CgroupLayout layout, api::UsageStore* store, const EgressService* egress,
               std::chrono::milliseconds period = kPeriod);
  ~UsageSampler();  // stops and joins
  UsageSampler(const UsageSampler&) = delete;
  UsageSampler& operator=(const UsageSampler&) = delete;

  void Start();
  // One pass: every running sandbox read once; the store forgets sandboxes that are gone.
  void SampleOnce();

 private:
  store::Db* db_;
  engine::CgroupLayout layout_;
  api::UsageStore* store_;
  const EgressService* egress_;
  const std::chrono::milliseconds period_;
  Mutex mu_;
  CondVar cv_;
  bool stop_ ISB_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace isb::daemon
