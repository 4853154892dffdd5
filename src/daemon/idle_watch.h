// IdleWatch: when an interactive command last had input or a resize, and whether it has been left alone too long.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>

#include "base/result.h"

namespace isb::daemon {

class IdleWatch {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // Quiet from now on; Expired once `limit` passes without a Touch. `now` is the clock (a test's own).
  explicit IdleWatch(std::chrono::milliseconds limit, Clock now = std::chrono::steady_clock::now);
  // Input typed or a resize (never output: a person is at the terminal only when they act): from any thread.
  void Touch();
  bool Expired() const;
  std::chrono::milliseconds limit() const { return limit_; }

 private:
  const std::chrono::milliseconds limit_;
  const Clock now_;
  // The last Touch, as the clock's ticks since its epoch: one atomic word shared by the exec's thread and callers'.
  std::atomic<std::chrono::steady_clock::rep> last_;
};

// What an interactive command ended by its IdleWatch returns: kTimeout, naming the limit.
Error IdleEnded(std::chrono::milliseconds limit);

}  // namespace isb::daemon
