// IdleWatch: the last activity as one atomic time point.
#include "daemon/idle_watch.h"

#include <string>
#include <utility>

namespace isb::daemon {

IdleWatch::IdleWatch(std::chrono::milliseconds limit, Clock now)
    : limit_(limit), now_(std::move(now)), last_(now_().time_since_epoch().count()) {}

void IdleWatch::Touch() { last_.store(now_().time_since_epoch().count(), std::memory_order_relaxed); }

bool IdleWatch::Expired() const {
  const std::chrono::steady_clock::time_point last{
      std::chrono::steady_clock::duration(last_.load(std::memory_order_relaxed))};
  return now_() - last >= limit_;
}

Error IdleEnded(std::chrono::milliseconds limit) {
  const std::string span =
      limit.count() % 1000 == 0 ? std::to_string(limit.count() / 1000) + " s" : std::to_string(limit.count()) + " ms";
  return Error::Of(Code::kTimeout,
                   "the terminal had no input for " + span + " (its idle_timeout) and was ended; open a new one");
}

}  // namespace isb::daemon
