// The usage sampler's pass and its thread.
#include "daemon/usage_sampler.h"

#include <set>

namespace isb::daemon {

UsageSampler::UsageSampler(store::Db* db, engine::CgroupLayout layout, api::UsageStore* store,
                           const EgressService* egress, std::chrono::milliseconds period)
    : db_(db), layout_(std::move(layout)), store_(store), egress_(egress), period_(period) {}

UsageSampler::~UsageSampler() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void UsageSampler::Start() {
  thread_ = std::thread([this] {
    MutexLock lock(mu_);
    while (!cv_.WaitForFlag(mu_, stop_, period_)) {
      lock.Unlock();
      SampleOnce();
      lock.Lock();
    }
  });
}

void UsageSampler::SampleOnce() {
  auto rows = db_->Query("SELECT id, state FROM sandboxes");
  if (!rows.ok()) return;
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::set<std::string> known;
  for (const auto& r : *rows) {
    const std::string id = store::AsText(r[0]);
    known.insert(id);
    if (store::AsText(r[1]) != "running") continue;
    engine::Cgroup cg = engine::Cgroup::Adopt(layout_, id);
    Result<engine::CgroupStats> st = cg.ReadStats();
    cg.Release();
    if (!st.ok()) continue;  // stopped between the query and the read
    api::UsageSample sample{
        .at_ms = now_ms, .cpu_usec = st->cpu_usec, .memory_bytes = st->memory_bytes, .pids = st->pids};
    if (egress_ != nullptr) {
      if (std::optional<egress::TrafficTotals> net = egress_->NetworkBytes(id)) {
        sample.net_rx_bytes = net->down;
        sample.net_tx_bytes = net->up;
      }
    }
    store_->Add(id, sample);
  }
  store_->Retain(known);
}

}  // namespace isb::daemon
