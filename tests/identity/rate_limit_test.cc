#include "identity/rate_limit.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace isb::identity {
namespace {

class RateLimitTest : public ::testing::Test {
 protected:
  Clock clock() {
    return [this] { return now_; };
  }
  int64_t now_ = 1000;
};

TEST_F(RateLimitTest, FiveFailuresPerAccountThenRetryAfterTheWindow) {
  SignInLimiter limiter(clock());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(limiter.RetryAfter("alice", "10.0.0.1"), 0) << i;
    limiter.RecordFailure("alice", "10.0.0.1");
    now_ += 10;
  }
  // First failure at 1000, window 900 s: it drops out at 1900; now is 1050.
  EXPECT_EQ(limiter.RetryAfter("alice", "10.0.0.1"), 850);
  EXPECT_EQ(limiter.RetryAfter("alice", "10.0.0.2"), 850);  // per account, whatever the address
  EXPECT_EQ(limiter.RetryAfter("bob", "10.0.0.1"), 0);
  now_ = 1899;
  EXPECT_EQ(limiter.RetryAfter("alice", "10.0.0.1"), 1);
  now_ = 1900;  // the oldest failure left the window: one attempt allowed
  EXPECT_EQ(limiter.RetryAfter("alice", "10.0.0.1"), 0);
  limiter.RecordFailure("alice", "10.0.0.1");
  EXPECT_EQ(limiter.RetryAfter("alice", "10.0.0.1"), 10);  // the next oldest, at 1010, leaves at 1910
}

TEST_F(RateLimitTest, TwentyFailuresPerAddressAcrossAccounts) {
  SignInLimiter limiter(clock());
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(limiter.RetryAfter("user" + std::to_string(i), "10.0.0.9"), 0) << i;
    limiter.RecordFailure("user" + std::to_string(i), "10.0.0.9");
  }
  EXPECT_EQ(limiter.RetryAfter("fresh", "10.0.0.9"), 900);
  EXPECT_EQ(limiter.RetryAfter("fresh", "10.0.0.8"), 0);
}

TEST_F(RateLimitTest, SuccessClearsTheAccountNotTheAddress) {
  SignInLimiter limiter(clock(), {2, 60, 100}, {3, 60, 100});
  limiter.RecordFailure("alice", "ip");
  limiter.RecordFailure("alice", "ip");
  EXPECT_EQ(limiter.RetryAfter("alice", "other"), 60);
  limiter.RecordSuccess("alice");
  EXPECT_EQ(limiter.RetryAfter("alice", "other"), 0);
  limiter.RecordFailure("bob", "ip");
  EXPECT_EQ(limiter.RetryAfter("carol", "ip"), 60);  // 3 failures from "ip"
}

TEST_F(RateLimitTest, MemoryIsBoundedByEvictingTheIdlest) {
  RateLimiter limiter({1, 60, 3}, clock());
  limiter.RecordFailure("a");
  limiter.RecordFailure("b");
  limiter.RecordFailure("c");
  EXPECT_EQ(limiter.RetryAfter("a"), 60);
  limiter.RecordFailure("a");  // touches a: b is now the idlest
  limiter.RecordFailure("d");
  EXPECT_EQ(limiter.keys(), 3u);
  EXPECT_EQ(limiter.RetryAfter("b"), 0);  // forgotten
  EXPECT_EQ(limiter.RetryAfter("a"), 60);
  EXPECT_EQ(limiter.RetryAfter("c"), 60);
  EXPECT_EQ(limiter.RetryAfter("d"), 60);
  for (int i = 0; i < 1000; ++i) limiter.RecordFailure("k" + std::to_string(i));
  EXPECT_EQ(limiter.keys(), 3u);
}

TEST_F(RateLimitTest, FailuresKeptPerKeyAreBounded) {
  RateLimiter limiter({5, 60, 10}, clock());
  for (int i = 0; i < 1000; ++i) limiter.RecordFailure("a");
  EXPECT_EQ(limiter.RetryAfter("a"), 60);
  now_ += 60;
  EXPECT_EQ(limiter.RetryAfter("a"), 0);
}

TEST(SignInLimiterTest, ConcurrentAttemptsShareTheLimit) {
  // 40 attempts at once for one account, each checked before any is judged: exactly the 5 the account allows go
  // ahead (a check and a count apart would let every one of them through).
  SignInLimiter limiter([] { return int64_t{1000}; });
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 40; ++i)
    threads.emplace_back([&, i] {
      if (limiter.Begin("bob", "10.0.1." + std::to_string(i)) == 0) ++allowed;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(allowed.load(), 5);
  EXPECT_EQ(limiter.Begin("bob", "10.0.2.1"), 900);
}

TEST(SignInLimiterTest, AGoodAttemptIsTakenBack) {
  SignInLimiter limiter([] { return int64_t{1000}; });
  // 30 good sign-ins from one address: the address's charges are taken back, the account's failures cleared.
  for (int i = 0; i < 30; ++i) {
    ASSERT_EQ(limiter.Begin("alice", "10.0.0.1"), 0) << i;
    limiter.Succeeded("alice", "10.0.0.1");
  }
  for (int i = 0; i < 5; ++i) EXPECT_EQ(limiter.Begin("alice", "10.0.0.1"), 0) << i;
  EXPECT_EQ(limiter.Begin("alice", "10.0.0.1"), 900);
}

}  // namespace
}  // namespace isb::identity
