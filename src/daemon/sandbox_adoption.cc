// Adoption at start-up (every sandbox the state dir knows, running or not, taken over by this daemon) and the
// reaper (expired and idle sandboxes removed).
#include "daemon/sandbox_manager.h"

#include "api/org_sandboxes.h"
#include "base/metric_families.h"

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

Result<std::string> SandboxManager::Adopt() {
  SandboxLocks::Held all = locks_.LockAll();
  int adopted = 0, died = 0, undone = 0, orphans = 0;
  ISB_ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT id, state FROM sandboxes"));
  std::set<std::string> known;
  for (const auto& r : rows) {
    std::string id = AsText(r[0]), state = AsText(r[1]);
    known.insert(id);
    if (state == "creating") {
      // The previous daemon died mid-create: nobody was told of this sandbox. Undo it.
      (void)runtime_->Release(id);
      RemoveDir(id);
      (void)db_->Exec("DELETE FROM sandboxes WHERE id = ?1", {id});
      ++undone;
      continue;
    }
    auto rec = Load(id);
    if (!rec.ok()) continue;
    // What opens its network namespace, when it runs (none when its runtime has no record of it).
    NetnsOpener attached;
    if (rec->state == "running" && !Handle(*rec).record.empty()) attached = NetnsOf(*rec);
    // Its address and rules, running or stopped: a stopped sandbox gets them back when it starts.
    if (auto slot = isb::ReadFile(Dir(id) + "/net_slot"); slot.ok() && options_.egress != nullptr) {
      Result<egress::EgressSpec> spec = ParseSandboxEgress(rec->spec.egress);
      std::string_view text = *slot;
      while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
      // nullopt: a file a crash left empty or cut short.
      std::optional<uint32_t> index = ParseDecimal<uint32_t>(text);
      Status st = !spec.ok() ? Status(spec.error())
                  : !index   ? Status(Error::Msg("its net_slot file does not hold a slot number"))
                             : options_.egress->Adopt(id, *index, *spec, api::OrgOf(rec->spec), attached);
      // A new daemon has a new CA for the sandbox (CAs are kept in memory only): its trust store follows.
      if (st.ok() && std::filesystem::exists(Dir(id) + "/" + kTrustBundleFile)) {
        Result<std::string> ca = options_.egress->SandboxCaPem(id);
        st = ca.ok() ? WriteTrustBundle(*rec, *ca) : Status(ca.error());
      }
      if (!st.ok())
        std::fprintf(stderr, "isb: sandbox %s: egress not restored: %s\n", id.c_str(), st.error().message.c_str());
    }
    if (rec->state != "running") {
      // A daemon killed in the middle of a start may have left its sandbox running with the row not yet saying so,
      // and one killed in the middle of a stop its layer mounted: nothing of a stopped sandbox may live on.
      (void)runtime_->Release(id);
      (void)Layer(id).Detach();
      continue;
    }
    if (!rec->runtime.empty() && rec->runtime != runtime_->Name()) {
      // Another runtime's sandbox (a daemon built without it): not found here is not dead, and it is left as it is.
      std::fprintf(stderr, "isb: sandbox %s left alone: its runtime '%s' is not this daemon's\n", id.c_str(),
                   rec->runtime.c_str());
      continue;
    }
    if (rec->state == "running" && !Handle(*rec).record.empty() && runtime_->Adopt(Handle(*rec))) {
      // One made before isb kept its own directories out, and mounting one, is stopped rather than left seeing it.
      if (Status kept = KeepIsbOut(rec->spec); !kept.ok()) {
        std::fprintf(stderr, "isb: sandbox %s stopped: %s\n", id.c_str(), kept.error().message.c_str());
        (void)Halt(*rec, "stopped", kept.error().message);
        continue;
      }
      // A port taken while no daemon ran is another program's: the sandbox is halted as a start that could not
      // publish is, rather than run while that program answers on its port.
      Status p = PortsApartFromIsb(rec->spec);
      if (p.ok()) p = PublishPorts(*rec);
      if (!p.ok()) {
        std::fprintf(stderr, "isb: sandbox %s stopped: %s\n", id.c_str(), p.error().message.c_str());
        (void)Halt(*rec, "failed", p.error().message);
        continue;
      }
      Event(*rec, "adopted");
      ++adopted;
    } else {
      (void)Halt(*rec, "died", "exited while no daemon was running");
      ++died;
    }
  }
  // cgroups of this daemon's sandboxes that the database no longer knows (their state dir is still here): kill
  // and remove. Other daemons' sandboxes and isb run's (run-*) are not this daemon's to touch.
  for (const std::string& name : runtime_->Held()) {
    if (known.count(name) || !std::filesystem::exists(Dir(name))) continue;
    (void)runtime_->Release(name);
    RemoveDir(name);
    ++orphans;
  }
  // State dirs the database does not know and no cgroup led to (a pooled sandbox's layer made before its launch):
  // their layers are unmounted and their images removed.
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(options_.state_dir + "/sandboxes", ec)) {
    std::string name = e.path().filename().string();
    if (!name.starts_with("sb-") || known.count(name)) continue;
    RemoveDir(name);
  }
  // Id ranges whose holder is gone.
  runtime_->Sweep();
  const bool pooling = options_.pool_size > 0 || (options_.egress != nullptr && options_.net_pool_size > 0);
  if (pooling && !pool_thread_.joinable()) pool_thread_ = std::thread([this] { FillPool(); });
  return std::to_string(adopted) + " adopted, " + std::to_string(died) + " found dead, " + std::to_string(undone) +
         " unfinished creates undone, " + std::to_string(orphans) + " orphaned cgroups removed";
}

int SandboxManager::ReapOnce() {
  auto rows = db_->Query("SELECT id FROM sandboxes WHERE state != 'creating'");
  if (!rows.ok()) return 0;
  int removed = 0;
  for (const auto& r : *rows) {
    std::string id = AsText(r[0]);
    std::string why, forgotten;
    {
      SandboxLocks::Held held = locks_.Lock(id);
      // Whether an exec runs is looked at before the row is read (and again below): an exec that ends between the
      // two has written its activity before it stops counting as running, so the row read after shows it.
      bool exec_ran;
      {
        MutexLock exec_lock(execs_mu_);
        exec_ran = execs_running_.count(id) != 0;
      }
      auto rec = Load(id);  // re-checked under the lock: an exec or extend may have come in meanwhile
      if (!rec.ok()) continue;
      // One that died (its command crashed it, the OOM killer) is recorded as such and frees its ports, layer
      // and range now, not when someone next asks for it.
      if (rec->state == "running" && !Alive(*rec)) {
        metrics::ReaperActions().With({"died"}).Inc();
        (void)Halt(*rec, "died", "its init exited");
        continue;
      }
      const int64_t now = Now();
      uint64_t cpu = 0;
      if (rec->state == "running")
        if (auto st = runtime_->Usage(Handle(*rec)); st.ok()) cpu = st->cpu_usec;
      // Idle needs a measured share under 2% since the last pass: on a daemon's first pass there is none yet, and
      // an exec running now (however quiet) is activity.
      bool busy = true, measured_busy = false;
      {
        MutexLock samples_lock(samples_mu_);
        auto prev = cpu_samples_.find(id);
        if (prev != cpu_samples_.end() && now > prev->second.first && cpu >= prev->second.second) {
          double share =
              static_cast<double>(cpu - prev->second.second) / 1e6 / static_cast<double>(now - prev->second.first);
          busy = measured_busy = share >= 0.02;
        }
        cpu_samples_[id] = {now, cpu};
      }
      // A share of 2% or more is activity, as an exec is: idle means under 2% for the whole idle_timeout, so a
      // sandbox whose background work has just ended is not removed at the first quiet pass.
      if (measured_busy && rec->last_active_at < now) {
        rec->last_active_at = now;
        (void)db_->Exec("UPDATE sandboxes SET last_active_at = ?2 WHERE id = ?1 AND last_active_at < ?2", {id, now});
      }
      {
        MutexLock exec_lock(execs_mu_);
        if (exec_ran || execs_running_.count(id)) busy = true;
      }
      // A detached command running (a server started with exec -d) is activity too: its sandbox goes at its expiry.
      if (detached_.Running(id) > 0) busy = true;
      if (now >= rec->expires_at) {
        why = "expired";
      } else if (now - rec->last_active_at >= rec->spec.idle_timeout.count() && !busy) {
        why = "idle for " + std::to_string(now - rec->last_active_at) + "s (no exec, under 2% of a core)";
      }
      if (why.empty()) continue;
      metrics::ReaperActions().With({why == "expired" ? "expired" : "idle"}).Inc();
      (void)Retire(*rec, "reaped", why, /*origin=*/{}, &forgotten);  // the daemon's own
      ++removed;
    }
    TearDown(forgotten);
  }
  return removed;
}

}  // namespace isb::daemon
