// A circuit breaker over calls to one upstream (the judge, per policy): after `threshold` consecutive failures it
// opens for `open_for`, refusing at once; then it lets exactly one probe through (half-open), whose outcome closes
// it or opens it again.
#pragma once

#include <chrono>
#include <cstdint>

#include "base/mutex.h"

namespace isb::egress {

using SteadyTime = std::chrono::steady_clock::time_point;

class CircuitBreaker {
 public:
  enum class State { kClosed, kOpen, kHalfOpen };

  // What Admit said about one call; hand it back to Record.
  struct Ticket {
    bool admitted = false;
    bool probe = false;       // the one call of a half-open breaker
    uint64_t generation = 0;  // outcomes of calls admitted before the breaker last changed state are ignored
  };

  CircuitBreaker(int threshold, std::chrono::milliseconds open_for) : threshold_(threshold), open_for_(open_for) {}

  // Thread-safe. Closed: admitted. Open: refused until `open_for` has passed since it opened; then the first caller
  // is admitted as the probe and the breaker is half-open, refusing others until the probe's outcome is recorded.
  Ticket Admit(SteadyTime now);
  // The outcome of an admitted call. A failure of the probe reopens the breaker from `now`.
  void Record(const Ticket& ticket, bool success, SteadyTime now);

  State state() const;

 private:
  void Open(SteadyTime now) ISB_REQUIRES(mu_);

  const int threshold_;
  const std::chrono::milliseconds open_for_;
  mutable Mutex mu_;
  State state_ ISB_GUARDED_BY(mu_) = State::kClosed;
  int failures_ ISB_GUARDED_BY(mu_) = 0;
  SteadyTime opened_at_ ISB_GUARDED_BY(mu_){};
  uint64_t generation_ ISB_GUARDED_BY(mu_) = 0;
};

}  // namespace isb::egress
