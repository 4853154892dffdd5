// The usage store: each sandbox's sampled CPU, memory, pids and network bytes, at 2 s for an hour and 1 min for a day.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/mutex.h"

namespace isb::api {

// One reading of a sandbox's cgroup and of the egress proxy's counters for it.
struct UsageSample {
  int64_t at_ms = 0;          // unix milliseconds
  uint64_t cpu_usec = 0;      // CPU time used since the sandbox started (cumulative)
  uint64_t memory_bytes = 0;  // memory.current (v2) or memory.usage_in_bytes (v1)
  uint64_t pids = 0;          // pids.current
  // Bytes the egress proxy relayed to the sandbox (rx) and from it (tx) since this daemon began counting it
  // (cumulative; 0 without a network).
  uint64_t net_rx_bytes = 0;
  uint64_t net_tx_bytes = 0;
};

// A point of a series as sandbox_usage returns it: the CPU as cores used on average since the point before; the
// network bytes as the cumulative counts they were read as (a rate is the difference of two points over their time).
struct UsagePoint {
  int64_t at_ms = 0;
  double cpu_cores = 0;  // 0 for the first point of a series
  uint64_t memory_bytes = 0;
  uint64_t pids = 0;
  uint64_t net_rx_bytes = 0;
  uint64_t net_tx_bytes = 0;
};

enum class UsageResolution { kFine, kCoarse };  // 2 s for the last hour; 1 min for the last day

// Thread-safe. Bounded: kFinePoints and kCoarsePoints per sandbox, for the sandboxes sampled in the last pass.
class UsageStore {
 public:
  static constexpr size_t kFinePoints = 1800;    // an hour at 2 s
  static constexpr size_t kCoarsePoints = 1440;  // a day at 1 min
  static constexpr int64_t kCoarseMs = 60'000;

  // Appends a reading: to the fine series always, to the coarse one when it starts a new minute.
  void Add(const std::string& sandbox, const UsageSample& sample);
  // Forgets every sandbox not in `live` (removed ones).
  void Retain(const std::set<std::string>& live);
  // The series at `resolution`, oldest first, from `since_ms` on (0: all of it).
  std::vector<UsagePoint> Series(const std::string& sandbox, UsageResolution resolution, int64_t since_ms = 0) const;

 private:
  struct Rings {
    std::deque<UsageSample> fine, coarse;
  };
  mutable Mutex mu_;
  std::map<std::string, Rings> series_ ISB_GUARDED_BY(mu_);
};

}  // namespace isb::api
