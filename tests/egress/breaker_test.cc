// The circuit breaker's states on explicit times.
#include "egress/breaker.h"

#include <gtest/gtest.h>

namespace isb::egress {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using State = CircuitBreaker::State;

SteadyTime At(int64_t ms) { return SteadyTime(milliseconds(ms)); }

void Fail(CircuitBreaker& b, int times, int64_t ms) {
  for (int i = 0; i < times; ++i) {
    auto t = b.Admit(At(ms));
    ASSERT_TRUE(t.admitted);
    b.Record(t, false, At(ms));
  }
}

TEST(Breaker, OpensAfterConsecutiveFailuresOnly) {
  CircuitBreaker b(5, seconds(30));
  Fail(b, 4, 0);
  auto ok = b.Admit(At(0));
  b.Record(ok, true, At(0));  // a success resets the count
  Fail(b, 4, 0);
  EXPECT_EQ(b.state(), State::kClosed);
  Fail(b, 1, 100);
  EXPECT_EQ(b.state(), State::kOpen);
  EXPECT_FALSE(b.Admit(At(100)).admitted);
  EXPECT_FALSE(b.Admit(At(30'099)).admitted);
}

TEST(Breaker, OneProbeThenClosedOrOpenAgain) {
  CircuitBreaker b(5, seconds(30));
  Fail(b, 5, 0);
  auto probe = b.Admit(At(30'000));
  EXPECT_TRUE(probe.admitted);
  EXPECT_TRUE(probe.probe);
  EXPECT_EQ(b.state(), State::kHalfOpen);
  EXPECT_FALSE(b.Admit(At(30'001)).admitted);
  EXPECT_FALSE(b.Admit(At(90'000)).admitted) << "half-open waits for its probe, however long";
  b.Record(probe, false, At(31'000));
  EXPECT_EQ(b.state(), State::kOpen);
  EXPECT_FALSE(b.Admit(At(60'999)).admitted) << "reopened from the probe's failure";
  probe = b.Admit(At(61'000));
  ASSERT_TRUE(probe.probe);
  b.Record(probe, true, At(61'000));
  EXPECT_EQ(b.state(), State::kClosed);
  auto t = b.Admit(At(61'000));
  EXPECT_TRUE(t.admitted);
  EXPECT_FALSE(t.probe);
}

TEST(Breaker, StaleOutcomesAreIgnored) {
  CircuitBreaker b(2, seconds(30));
  auto early = b.Admit(At(0));  // admitted while closed, lands after the breaker opened
  Fail(b, 2, 0);
  ASSERT_EQ(b.state(), State::kOpen);
  b.Record(early, true, At(1));
  EXPECT_EQ(b.state(), State::kOpen);
  auto probe = b.Admit(At(30'000));
  b.Record(early, false, At(30'001));
  EXPECT_EQ(b.state(), State::kHalfOpen);
  b.Record(probe, true, At(30'002));
  EXPECT_EQ(b.state(), State::kClosed);
  // A refused ticket records nothing.
  b.Record(CircuitBreaker::Ticket{}, false, At(30'003));
  Fail(b, 1, 30'004);
  EXPECT_EQ(b.state(), State::kClosed);
}

}  // namespace
}  // namespace isb::egress
