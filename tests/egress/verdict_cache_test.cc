// The verdict cache: expiry on a fake clock, LRU bounds, what is remembered, and the single flight.
#include "egress/verdict_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <thread>
#include <vector>

namespace isb::egress {
namespace {

using std::chrono::milliseconds;

struct Counter {
  int calls = 0;
  VerdictCache::Answer answer{{true, "yes"}, true};
  std::function<VerdictCache::Answer()> Ask() {
    return [this] {
      ++calls;
      return answer;
    };
  }
};

TEST(VerdictCache, RemembersUntilExpiry) {
  int64_t now = 0;
  VerdictCache cache(10, milliseconds(1000), [&] { return SteadyTime(milliseconds(now)); });
  Counter c;
  EXPECT_EQ(cache.Get("k", c.Ask()).reason, "yes");
  now = 999;
  EXPECT_EQ(cache.Get("k", c.Ask()).reason, "yes");
  EXPECT_EQ(c.calls, 1);
  now = 1000;
  cache.Get("k", c.Ask());
  EXPECT_EQ(c.calls, 2);
}

TEST(VerdictCache, FailuresAreNotRemembered) {
  VerdictCache cache(10, milliseconds(1000), [] { return SteadyTime(); });
  Counter c;
  c.answer = {{false, "failed"}, false};
  EXPECT_EQ(cache.Get("k", c.Ask()).reason, "failed");
  cache.Get("k", c.Ask());
  EXPECT_EQ(c.calls, 2);
  EXPECT_EQ(cache.size(), 0u);
}

// One owner (an org) asking ever new questions evicts its own verdicts, never another's that holds fewer.
TEST(VerdictCache, AnOwnerAskingNewQuestionsEvictsItsOwnVerdicts) {
  VerdictCache cache(3, milliseconds(1000), [] { return SteadyTime(); });
  Counter x, y;
  cache.Get("x1", "org-x", x.Ask());
  for (const char* k : {"y1", "y2", "y3", "y4"}) cache.Get(k, "org-y", y.Ask());
  EXPECT_EQ(cache.size(), 3u);
  cache.Get("x1", "org-x", x.Ask());
  EXPECT_EQ(x.calls, 1) << "org-y's questions evicted org-x's verdict";
  cache.Get("y4", "org-y", y.Ask());
  EXPECT_EQ(y.calls, 4);
  cache.Get("y1", "org-y", y.Ask());  // its own oldest went
  EXPECT_EQ(y.calls, 5);
}

TEST(VerdictCache, EvictsTheLeastRecentlyUsed) {
  VerdictCache cache(2, milliseconds(1000), [] { return SteadyTime(); });
  Counter a, b, c;
  cache.Get("a", a.Ask());
  cache.Get("b", b.Ask());
  cache.Get("a", a.Ask());  // a is now the most recent
  cache.Get("c", c.Ask());  // evicts b
  EXPECT_EQ(cache.size(), 2u);
  cache.Get("a", a.Ask());
  cache.Get("b", b.Ask());
  EXPECT_EQ(a.calls, 1);
  EXPECT_EQ(b.calls, 2);
}

TEST(VerdictCache, IdenticalConcurrentQuestionsShareOneCall) {
  VerdictCache cache(0, milliseconds(0), [] { return SteadyTime(); });  // nothing remembered
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> calls{0};
  auto ask = [&] {
    ++calls;
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return release; });
    return VerdictCache::Answer{{false, "shared"}, true};
  };
  constexpr int kThreads = 16;
  std::vector<std::string> got(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back([&, i] { got[i] = cache.Get("k", ask).reason; });
  for (int i = 0; i < 2000 && cache.waiting() < kThreads - 1; ++i) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(cache.waiting(), static_cast<size_t>(kThreads - 1));
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls, 1);
  for (const std::string& r : got) EXPECT_EQ(r, "shared");
  // Another key is another flight.
  cache.Get("other", ask);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace isb::egress
