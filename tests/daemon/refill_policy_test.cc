// The pool's refill: at once when empty, never when full, else in the first quiet moment, at most a second late.
#include "daemon/refill_policy.h"

#include <gtest/gtest.h>

namespace isb::daemon {
namespace {

using namespace std::chrono_literals;
using Time = PoolState::Time;

const Time kT0 = Time{} + 1000s;

TEST(RefillPolicyTest, AnEmptyPoolIsRefilledAtOnceAndAFullOneNever) {
  EXPECT_EQ(NextRefill({.waiting = 0, .target = 2, .busy = 3, .last_take = kT0, .last_quiet = kT0}), Time::min());
  EXPECT_EQ(NextRefill({.waiting = 2, .target = 2, .busy = 0, .last_take = kT0, .last_quiet = kT0}), Time::max());
  EXPECT_EQ(NextRefill({.waiting = 0, .target = 0, .busy = 0, .last_take = kT0, .last_quiet = kT0}), Time::max());
}

TEST(RefillPolicyTest, WhileASandboxWaitsTheLaunchWaitsForAQuietMoment) {
  // A create took one at kT0 and its first exec is running: wait, at most until a second after the take.
  EXPECT_EQ(NextRefill({.waiting = 1, .target = 2, .busy = 1, .last_take = kT0, .last_quiet = kT0 - 20ms}),
            kT0 + kRefillMaxDelay);
  // The exec ended at kT0 + 6 ms: the launch may start 5 ms later, unless another call comes first.
  EXPECT_EQ(NextRefill({.waiting = 1, .target = 2, .busy = 0, .last_take = kT0, .last_quiet = kT0 + 6ms}),
            kT0 + 6ms + kRefillQuiet);
  // Quiet long since (the pool filling at start-up, or a take after a long pause): at once.
  EXPECT_LT(NextRefill({.waiting = 1, .target = 2, .busy = 0, .last_take = kT0, .last_quiet = kT0 - 10s}), kT0);
  // Calls that never stop leave the pool at most a second behind its last take.
  EXPECT_EQ(NextRefill({.waiting = 1, .target = 2, .busy = 0, .last_take = kT0, .last_quiet = kT0 + 2s}),
            kT0 + kRefillMaxDelay);
}

}  // namespace
}  // namespace isb::daemon
