#include "daemon/teardown_queue.h"

#include <sys/resource.h>

namespace isb::daemon {

namespace {
constexpr int kLowestNice = 19;
}  // namespace

TeardownQueue::TeardownQueue() : thread_([this] { Run(); }) {}

TeardownQueue::~TeardownQueue() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void TeardownQueue::Add(std::function<void()> work) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() < kMaxPending) {
      queue_.push_back(std::move(work));
      ++added_;
      cv_.notify_one();
      return;
    }
  }
  work();
}

void TeardownQueue::Settle() {
  std::unique_lock lock(mu_);
  const uint64_t target = added_;
  done_cv_.wait(lock, [&] { return finished_ >= target; });
}

size_t TeardownQueue::Pending() {
  std::lock_guard lock(mu_);
  return static_cast<size_t>(added_ - finished_);
}

void TeardownQueue::Run() {
  // This thread only (a nice value is per thread on Linux): what is left of a removal yields the CPU to the calls
  // being served. A failure leaves it at the daemon's priority, which is only slower for others.
  (void)::setpriority(PRIO_PROCESS, 0, kLowestNice);
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued has run
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    work();
    lock.lock();
    ++finished_;
    done_cv_.notify_all();
  }
}

}  // namespace isb::daemon
