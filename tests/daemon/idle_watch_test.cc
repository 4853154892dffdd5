// IdleWatch on a clock the test moves: quiet for exactly its limit ends it; any touch starts the wait again.
#include "daemon/idle_watch.h"

#include <gtest/gtest.h>

namespace isb::daemon {
namespace {

using namespace std::chrono_literals;

TEST(IdleWatchTest, ExpiresExactlyWhenItsLimitPassesWithoutATouch) {
  std::chrono::steady_clock::time_point now{1000s};
  IdleWatch idle(30min, [&] { return now; });
  EXPECT_EQ(idle.limit(), 30min);
  now += 30min - 1ms;
  EXPECT_FALSE(idle.Expired());
  now += 1ms;
  EXPECT_TRUE(idle.Expired());
}

TEST(IdleWatchTest, ATouchStartsTheWaitAgain) {
  std::chrono::steady_clock::time_point now{1000s};
  IdleWatch idle(2s, [&] { return now; });
  for (int i = 0; i < 10; ++i) {  // active for 10 s, five times the limit
    now += 1s;
    idle.Touch();
    EXPECT_FALSE(idle.Expired()) << i;
  }
  now += 2s - 1ms;
  EXPECT_FALSE(idle.Expired());
  now += 1ms;
  EXPECT_TRUE(idle.Expired());
  idle.Touch();  // a touch after expiry counts too: the caller decides what expiry ended
  EXPECT_FALSE(idle.Expired());
}

TEST(IdleWatchTest, TheEndNamesTheLimit) {
  EXPECT_EQ(IdleEnded(30min).code, Code::kTimeout);
  EXPECT_EQ(IdleEnded(30min).message,
            "the terminal had no input for 1800 s (its idle_timeout) and was ended; open a new one");
  EXPECT_EQ(IdleEnded(300ms).message,
            "the terminal had no input for 300 ms (its idle_timeout) and was ended; open a new one");
}

}  // namespace
}  // namespace isb::daemon
