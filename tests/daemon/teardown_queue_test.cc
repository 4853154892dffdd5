// The teardown queue runs its work in order, off the caller's thread, at the lowest priority, and finishes it all.
#include "daemon/teardown_queue.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <vector>

namespace isb::daemon {
namespace {

using namespace std::chrono_literals;

TEST(TeardownQueueTest, RunsInOrderOffTheCallersThreadAtTheLowestPriority) {
  const pid_t caller = static_cast<pid_t>(::syscall(SYS_gettid));
  const int caller_nice = ::getpriority(PRIO_PROCESS, 0);
  std::vector<int> order;
  pid_t worker = 0;
  int worker_nice = 0;
  TeardownQueue queue;
  for (int i = 0; i < static_cast<int>(TeardownQueue::kMaxPending); ++i)
    queue.Add([&, i] {
      order.push_back(i);
      worker = static_cast<pid_t>(::syscall(SYS_gettid));
      worker_nice = ::getpriority(PRIO_PROCESS, 0);
    });
  queue.Settle();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(worker, caller);
  EXPECT_EQ(worker_nice, 19);
  EXPECT_EQ(::getpriority(PRIO_PROCESS, 0), caller_nice) << "the caller's own priority changed";
  EXPECT_EQ(queue.Pending(), 0u);
}

TEST(TeardownQueueTest, AddReturnsBeforeTheWorkRunsAndSettleWaitsForIt) {
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::atomic<bool> ran{false};
  TeardownQueue queue;
  queue.Add([go] { go.wait(); });
  queue.Add([&ran] { ran = true; });
  EXPECT_EQ(queue.Pending(), 2u);
  auto settled = std::async(std::launch::async, [&queue] { queue.Settle(); });
  EXPECT_EQ(settled.wait_for(100ms), std::future_status::timeout) << "Settle returned while work was still queued";
  EXPECT_FALSE(ran);
  release.set_value();
  EXPECT_EQ(settled.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(ran);
  EXPECT_EQ(queue.Pending(), 0u);
}

TEST(TeardownQueueTest, ACallerWhoseWorkWouldExceedTheLimitRunsItItself) {
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  const pid_t caller = static_cast<pid_t>(::syscall(SYS_gettid));
  std::promise<void> started;
  TeardownQueue queue;
  queue.Add([go, &started] {  // taken by the queue's thread, which then waits
    started.set_value();
    go.wait();
  });
  started.get_future().wait();
  std::vector<pid_t> ran_on(TeardownQueue::kMaxPending + 1, 0);
  for (size_t i = 0; i <= TeardownQueue::kMaxPending; ++i)
    queue.Add([&ran_on, i] { ran_on[i] = static_cast<pid_t>(::syscall(SYS_gettid)); });
  // kMaxPending wait behind the first; the one after them ran at once, here.
  EXPECT_EQ(queue.Pending(), 1u + TeardownQueue::kMaxPending);
  EXPECT_EQ(ran_on[TeardownQueue::kMaxPending], caller);
  for (size_t i = 0; i < TeardownQueue::kMaxPending; ++i) EXPECT_EQ(ran_on[i], 0) << i;
  release.set_value();
  queue.Settle();
  for (size_t i = 0; i < TeardownQueue::kMaxPending; ++i) {
    EXPECT_NE(ran_on[i], 0) << i;
    EXPECT_NE(ran_on[i], caller) << i;
  }
}

TEST(TeardownQueueTest, TheDestructorFinishesEverythingQueued) {
  std::atomic<int> ran{0};
  {
    TeardownQueue queue;
    for (int i = 0; i < 20; ++i)
      queue.Add([&ran] {
        std::this_thread::sleep_for(1ms);
        ++ran;
      });
  }
  EXPECT_EQ(ran, 20);
}

}  // namespace
}  // namespace isb::daemon
