// TeardownQueue: work that finishes a removal after its caller has been answered, on a thread of its own at the
// lowest priority, in the order it was added.
#pragma once

#include <deque>
#include <functional>
#include <thread>

#include "base/mutex.h"

namespace isb::daemon {

// A removed sandbox is dead and forgotten when sandbox_remove returns; unmounting its layer, detaching the loop
// device and deleting its image and state dir (several milliseconds, mostly waiting on the kernel) happen here.
// Nothing is lost if the daemon dies with work still queued: what a removal leaves is a state dir the database no
// longer knows, which the next daemon's SandboxManager::Adopt removes.
class TeardownQueue {
 public:
  TeardownQueue();
  // Finishes everything queued, then stops the thread.
  ~TeardownQueue();
  TeardownQueue(const TeardownQueue&) = delete;
  TeardownQueue& operator=(const TeardownQueue&) = delete;

  // At most this many pieces of work wait: under a load that starves the queue's thread, a caller whose work would
  // be one more runs it itself, so removed sandboxes' mounts and images do not pile up.
  static constexpr size_t kMaxPending = 4;

  // Queues `work`, or runs it on the caller's thread when kMaxPending are waiting already.
  void Add(std::function<void()> work);
  // Returns once everything added before the call has run.
  void Settle();
  // How many pieces of work are queued or running.
  size_t Pending();

 private:
  void Run();

  Mutex mu_;
  CondVar cv_;       // work added, or stopping
  CondVar done_cv_;  // a piece of work finished
  std::deque<std::function<void()>> queue_ ISB_GUARDED_BY(mu_);
  uint64_t added_ ISB_GUARDED_BY(mu_) = 0, finished_ ISB_GUARDED_BY(mu_) = 0;
  bool stop_ ISB_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: started once the rest is in place
};

}  // namespace isb::daemon
