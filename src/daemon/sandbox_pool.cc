// The warm pools: sandboxes launched ahead (plain, and with a network for egress lists), taken by the creates they
// can serve and fitted to the spec before the create returns.
#include "daemon/sandbox_manager.h"

#include "base/metric_families.h"
#include "api/org_sandboxes.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <utility>
#include <nlohmann/json.hpp>

#include "base/fd.h"
#include "base/file.h"
#include "base/random.h"
#include "base/units.h"
#include "engine/cgroup.h"
#include "engine/contain.h"
#include "engine/exec_client.h"
#include "engine/idmap.h"
#include "engine/launch.h"
#include "engine/namespaces.h"
#include "daemon/sandbox_record.h"

namespace isb::daemon {

using nlohmann::json;
using store::AsInt;
using store::AsText;

SandboxManager::PoolKind SandboxManager::PoolFor(const api::SandboxSpec& spec, const egress::EgressSpec& egress) const {
  // What a pooled sandbox was launched with and cannot change: the default view on a layer of the default size, its
  // user namespace (never privileged, no idmap), and limits that may only come down (sandbox_fit.h). The rest of
  // a spec (name, environment, user, working_dir, labels, lifetimes, ports) is applied to it afterwards. Secret
  // files need a tmpfs of the sandbox's own mounted at its start.
  const api::SandboxSpec pooled;
  if (!spec.image.empty() || spec.image_idmapped || !spec.mounts.empty() || !spec.secrets.empty() ||
      spec.disk != pooled.disk || spec.privileged || !spec.idmap.empty() || spec.cpus > pooled.cpus ||
      spec.mem_limit > pooled.mem_limit || spec.pids > pooled.pids)
    return PoolKind::kCold;
  if (egress.mode == egress::EgressMode::kNone) return PoolKind::kPlain;
  if (egress.mode == egress::EgressMode::kAllowlist && options_.egress != nullptr) return PoolKind::kNet;
  return PoolKind::kCold;  // open egress routes its sandbox differently; a block list takes every port's rules
}

std::optional<SandboxManager::Pooled> SandboxManager::TakeReady(PoolKind kind) {
  if (kind == PoolKind::kCold) return std::nullopt;
  std::vector<Pooled>& pool = kind == PoolKind::kNet ? net_pool_ : pool_;
  MutexLock lock(pool_mu_);
  while (!pool.empty()) {
    Pooled p = std::move(pool.back());
    pool.pop_back();
    last_take_ = std::chrono::steady_clock::now();
    pool_cv_.NotifyAll();
    if (runtime_->Running(Handle(p.rec))) {
      metrics::PoolHits().With({kind == PoolKind::kNet ? "net" : "plain"}).Inc();
      return p;
    }
    lock.Unlock();
    Discard(p.rec);  // died while waiting (say, killed from outside)
    lock.Lock();
  }
  return std::nullopt;
}

// The net pool's sandboxes wait with a list of one name on the default port: their rules are then those of the
// usual list (port 443 and the proxy's), which a create's list of the same ports takes without applying rules again.
constexpr char kPooledListName[] = "pooled.invalid";

Result<SandboxManager::Pooled> SandboxManager::LaunchPooled(PoolKind kind) {
  Pooled p;
  p.rec.id = NewId();
  if (p.rec.id.empty()) return Error::Msg("no randomness for a sandbox id");
  if (kind == PoolKind::kNet) {
    p.rec.spec.egress = json::array({kPooledListName});
    // No org's until a create takes it (EgressService::Assign names the org): its network's events are nobody's.
    p.rec.spec.labels[api::kOrgLabel] = "";
    ISB_ASSIGN_OR_RETURN(egress::EgressSpec placeholder, Egress(p.rec.spec));
    p.net.emplace();
    if (Status st = PrepareNetwork(p.rec, placeholder, &*p.net); !st.ok()) {
      Discard(p.rec);
      return st.error();
    }
  }
  if (Status st = LaunchProcess(p.rec, true); !st.ok()) {
    Discard(p.rec);
    return st.error();
  }
  return p;
}

void SandboxManager::FillPool() {
  MutexLock lock(pool_mu_);
  while (!pool_stop_) {
    // refill_policy.h: at once when empty, else in a quiet moment (the create's first exec goes first). The pool
    // due first is filled first.
    auto due = NextRefill({pool_.size(), options_.pool_size, busy_, last_take_, last_quiet_});
    PoolKind kind = PoolKind::kPlain;
    if (options_.egress != nullptr) {
      const auto net_due = NextRefill({net_pool_.size(), options_.net_pool_size, busy_, last_take_, last_quiet_});
      if (net_due < due) {
        due = net_due;
        kind = PoolKind::kNet;
      }
    }
    if (due == PoolState::Time::max()) {
      pool_cv_.Wait(pool_mu_);
      continue;
    }
    if (std::chrono::steady_clock::now() < due) {
      pool_cv_.WaitUntil(pool_mu_, due);
      continue;
    }
    lock.Unlock();
    Result<Pooled> launched = LaunchPooled(kind);
    if (!launched.ok()) {
      std::fprintf(stderr, "isb: the pool could not launch a sandbox: %s\n", launched.error().message.c_str());
      lock.Lock();
      pool_cv_.WaitForFlag(pool_mu_, pool_stop_, std::chrono::seconds(5));
      continue;
    }
    lock.Lock();
    // The destructor discards it if stopping.
    (kind == PoolKind::kNet ? net_pool_ : pool_).push_back(std::move(*launched));
  }
}

size_t SandboxManager::PoolSize() {
  MutexLock lock(pool_mu_);
  return pool_.size();
}

size_t SandboxManager::NetPoolSize() {
  MutexLock lock(pool_mu_);
  return net_pool_.size();
}

Result<api::SandboxInfo> SandboxManager::CreateFromPool(Pooled ready, Record rec, const egress::EgressSpec& egress,
                                                        const api::CallOrigin& origin) {
  // Its own lock from before its row is seen until its creation is recorded (as a cold create's).
  SandboxLocks::Held held = locks_.Lock(ready.rec.id);
  rec.id = ready.rec.id;
  rec.runtime = ready.rec.runtime;
  rec.runtime_record = ready.rec.runtime_record;
  rec.uid_base = ready.rec.uid_base;
  rec.state = "running";
  // Everything a cold launch would have given it from the spec, before the create returns; on failure it was never
  // created, and goes.
  Status fitted = [&]() -> Status {
    ISB_TRY(AddSecrets(rec, egress));
    if (ready.net) {
      ISB_TRY(options_.egress->Assign(rec.id, egress, api::OrgOf(rec.spec)));
      AddNetworkEnvironment(rec.spec, *ready.net);
    }
    const api::SandboxSpec launched;
    engine::Refit fit;
    fit.limits.memory_bytes = rec.spec.mem_limit;
    fit.limits.millicpus = static_cast<uint32_t>(rec.spec.cpus * 1000 + 0.5);
    fit.limits.pids = rec.spec.pids;
    fit.set_limits =
        rec.spec.mem_limit != launched.mem_limit || rec.spec.cpus != launched.cpus || rec.spec.pids != launched.pids;
    fit.hostname = rec.name;
    if (rec.spec.mem_limit != launched.mem_limit) fit.scratch_bytes = rec.spec.mem_limit;
    if (fit.set_limits || !fit.hostname.empty() || fit.scratch_bytes != 0) ISB_TRY(runtime_->Fit(Handle(rec), fit));
    return PublishPorts(rec);
  }();
  // Created once its row is written (running, with its pid): a daemon killed before then leaves an orphan that the
  // next Adopt removes.
  Status ins = fitted;
  // An init that died since it was taken (nothing else notices when there was nothing to fit) is not created.
  if (ins.ok() && !Alive(rec))
    ins = Error::Of(Code::kUnavailable, "the pooled sandbox " + rec.id + " died; create it again");
  if (ins.ok()) {
    const engine::HostProcess shown = runtime_->Process(Handle(rec));
    ins = db_->Exec(
        "INSERT INTO sandboxes(id, name, spec, state, created_at, expires_at, last_active_at, runtime, handle, "
        "uid_base, org, pid, start_time, lease_index) "
        "VALUES(?1, ?2, ?3, 'running', ?4, ?5, ?4, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        {rec.id, rec.name, spec::ToStoredJson(rec.spec), rec.created_at, rec.expires_at, rec.runtime,
         rec.runtime_record, static_cast<int64_t>(rec.uid_base), api::OrgOf(rec.spec), static_cast<int64_t>(shown.pid),
         static_cast<int64_t>(shown.start_time), shown.lease_index});
    if (!ins.ok() && ins.error().code == Code::kConflict)
      ins = Error::Of(Code::kConflict, "name: '" + rec.name + "' is in use");
  }
  if (!ins.ok()) {
    Discard(rec);
    return ins.error();
  }
  return Created(rec, "pool", origin);
}

}  // namespace isb::daemon
