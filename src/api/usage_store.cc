// The usage store's rings and the CPU rate computed from cumulative readings.
#include "api/usage_store.h"

namespace isb::api {

void UsageStore::Add(const std::string& sandbox, const UsageSample& sample) {
  MutexLock lock(mu_);
  Rings& s = series_[sandbox];
  s.fine.push_back(sample);
  if (s.fine.size() > kFinePoints) s.fine.pop_front();
  if (s.coarse.empty() || sample.at_ms / kCoarseMs != s.coarse.back().at_ms / kCoarseMs) {
    s.coarse.push_back(sample);
    if (s.coarse.size() > kCoarsePoints) s.coarse.pop_front();
  }
}

void UsageStore::Retain(const std::set<std::string>& live) {
  MutexLock lock(mu_);
  std::erase_if(series_, [&live](const auto& kv) { return live.count(kv.first) == 0; });
}

std::vector<UsagePoint> UsageStore::Series(const std::string& sandbox, UsageResolution resolution,
                                           int64_t since_ms) const {
  MutexLock lock(mu_);
  std::vector<UsagePoint> out;
  auto it = series_.find(sandbox);
  if (it == series_.end()) return out;
  const std::deque<UsageSample>& samples = resolution == UsageResolution::kFine ? it->second.fine : it->second.coarse;
  const UsageSample* prev = nullptr;
  for (const UsageSample& s : samples) {
    UsagePoint p{.at_ms = s.at_ms,
                 .memory_bytes = s.memory_bytes,
                 .pids = s.pids,
                 .net_rx_bytes = s.net_rx_bytes,
                 .net_tx_bytes = s.net_tx_bytes};
    // A restart begins the count again: no rate across it.
    if (prev != nullptr && s.at_ms > prev->at_ms && s.cpu_usec >= prev->cpu_usec)
      p.cpu_cores =
          static_cast<double>(s.cpu_usec - prev->cpu_usec) / 1000.0 / static_cast<double>(s.at_ms - prev->at_ms);
    prev = &s;
    if (s.at_ms >= since_ms) out.push_back(p);
  }
  return out;
}

}  // namespace isb::api
