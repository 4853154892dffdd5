#include "daemon/refill_policy.h"

#include <algorithm>

namespace isb::daemon {

PoolState::Time NextRefill(const PoolState& s) {
  using Time = PoolState::Time;
  if (s.waiting >= s.target) return Time::max();
  if (s.waiting == 0) return Time::min();
  const Time latest = s.last_take + kRefillMaxDelay;
  if (s.busy > 0) return latest;
  return std::min(s.last_quiet + kRefillQuiet, latest);
}

}  // namespace isb::daemon
