// When the sandbox pool's next launch may start. A launch beside a create and its first exec slows both (on a host
// of few cores anything beside an exec takes CPU it needs, whatever its priority), so while a sandbox still waits
// in the pool the refill waits for a quiet moment: no create or exec running for kRefillQuiet. It never waits past
// kRefillMaxDelay after the last take, and an empty pool is refilled at once.
#pragma once

#include <chrono>
#include <cstddef>

namespace isb::daemon {

inline constexpr std::chrono::milliseconds kRefillQuiet{5};
inline constexpr std::chrono::milliseconds kRefillMaxDelay{1000};

struct PoolState {
  using Time = std::chrono::steady_clock::time_point;
  size_t waiting = 0;  // launched sandboxes in the pool
  size_t target = 0;   // how many it keeps
  int busy = 0;        // creates and execs running now
  Time last_take{};    // when a create last took a pooled sandbox
  Time last_quiet{};   // when the last running create or exec ended
};

// The time from which the next launch may start: Time::max() when the pool is full, Time::min() (at once) when it
// is empty, else the quiet moment or the latest allowed. A waiter is woken early when `busy` drops to 0.
PoolState::Time NextRefill(const PoolState& s);

}  // namespace isb::daemon
