#include "daemon/teardown_queue.h"

#include <sys/resource.h>

namespace isb::daemon {

namespace {
constexpr int kLowestNice = 19;
}  // namespace

TeardownQueue::TeardownQueue() : thread_([this] { Run(); }) {}

TeardownQueue::~TeardownQueue() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  thread_.join();
}

void TeardownQueue::Add(std::function<void()> work) {
  {
    MutexLock lock(mu_);
    if (queue_.size() < kMaxPending) {
      queue_.push_back(std::move(work));
      ++added_;
      cv_.NotifyOne();
      return;
    }
  }
  work();
}

void TeardownQueue::Settle() {
  MutexLock lock(mu_);
  const uint64_t target = added_;
  while (finished_ < target) done_cv_.Wait(mu_);
}

size_t TeardownQueue::Pending() {
  MutexLock lock(mu_);
  return static_cast<size_t>(added_ - finished_);
}

void TeardownQueue::Run() {
  // This thread only (a nice value is per thread on Linux): what is left of a removal yields the CPU to the calls
  // being served. A failure leaves it at the daemon's priority, which is only slower for others.
  (void)::setpriority(PRIO_PROCESS, 0, kLowestNice);
  MutexLock lock(mu_);
  for (;;) {
    while (!stop_ && queue_.empty()) cv_.Wait(mu_);
    if (queue_.empty()) return;  // stopping, and everything queued has run
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.Unlock();
    work();
    lock.Lock();
    ++finished_;
    done_cv_.NotifyAll();
  }
}

}  // namespace isb::daemon
