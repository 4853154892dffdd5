// Mutex, SharedMutex, RecursiveMutex, MutexLock and CondVar: locks whose use clang's -Wthread-safety checks.
//
// A member written `int n_ ISB_GUARDED_BY(mu_);` may be touched only with mu_ held, a function declared
// `void Grow() ISB_REQUIRES(mu_);` only be called with it held, and clang proves both at compile time
// (`make thread-safety`). Under g++ the macros are empty. They carry ISB_ because bare names collide (<scsi/scsi.h>
// defines RELEASE). The analysis follows one function at a time: a lambda knows of no lock its caller holds (say
// ISB_REQUIRES on the lambda), so a wait is a loop around CondVar::Wait, not a predicate.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define ISB_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define ISB_THREAD_ANNOTATION(x)
#endif

#define ISB_CAPABILITY(name) ISB_THREAD_ANNOTATION(capability(name))
#define ISB_SCOPED_CAPABILITY ISB_THREAD_ANNOTATION(scoped_lockable)
#define ISB_GUARDED_BY(mu) ISB_THREAD_ANNOTATION(guarded_by(mu))
#define ISB_PT_GUARDED_BY(mu) ISB_THREAD_ANNOTATION(pt_guarded_by(mu))
#define ISB_ACQUIRED_BEFORE(...) ISB_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ISB_ACQUIRED_AFTER(...) ISB_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define ISB_REQUIRES(...) ISB_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ISB_REQUIRES_SHARED(...) ISB_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ISB_ACQUIRE(...) ISB_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ISB_ACQUIRE_SHARED(...) ISB_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define ISB_RELEASE(...) ISB_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define ISB_RELEASE_SHARED(...) ISB_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define ISB_RELEASE_GENERIC(...) ISB_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define ISB_TRY_ACQUIRE(...) ISB_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define ISB_EXCLUDES(...) ISB_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ISB_ASSERT_CAPABILITY(mu) ISB_THREAD_ANNOTATION(assert_capability(mu))
#define ISB_RETURN_CAPABILITY(mu) ISB_THREAD_ANNOTATION(lock_returned(mu))
#define ISB_NO_THREAD_SAFETY_ANALYSIS ISB_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace isb {

class CondVar;

// A std mutex (std::mutex, std::recursive_mutex, std::shared_mutex), as a capability. lock/unlock/try_lock (and a
// shared mutex's lock_shared/unlock_shared) also make it Lockable for the std templates.
template <class M>
class ISB_CAPABILITY("mutex") BasicMutex {
 public:
  BasicMutex() = default;
  BasicMutex(const BasicMutex&) = delete;
  BasicMutex& operator=(const BasicMutex&) = delete;

  void lock() ISB_ACQUIRE() { mu_.lock(); }
  void unlock() ISB_RELEASE() { mu_.unlock(); }
  bool try_lock() ISB_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // SharedMutex only (a member of a template is compiled only where it is called).
  void lock_shared() ISB_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() ISB_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  friend class CondVar;
  M mu_;
};
using Mutex = BasicMutex<std::mutex>;
// The analysis sees one function at a time: a function that takes it and calls another that takes it again passes;
// taking it twice in one function is refused.
using RecursiveMutex = BasicMutex<std::recursive_mutex>;
using SharedMutex = BasicMutex<std::shared_mutex>;

// Holds a mutex for its scope. Unlock and Lock let a scope let go for a while (a slow call made without it); the
// destructor releases it only if held.
template <class M>
class ISB_SCOPED_CAPABILITY BasicMutexLock {
 public:
  explicit BasicMutexLock(M& mu) ISB_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~BasicMutexLock() ISB_RELEASE() {
    if (held_) mu_.unlock();
  }
  BasicMutexLock(const BasicMutexLock&) = delete;
  BasicMutexLock& operator=(const BasicMutexLock&) = delete;

  void Unlock() ISB_RELEASE() {
    mu_.unlock();
    held_ = false;
  }
  void Lock() ISB_ACQUIRE() {
    mu_.lock();
    held_ = true;
  }

 private:
  M& mu_;
  bool held_ = true;
};
using MutexLock = BasicMutexLock<Mutex>;
using RecursiveMutexLock = BasicMutexLock<RecursiveMutex>;

// std::condition_variable over a Mutex the caller holds. A wait may wake without a notify: callers loop on their
// condition, e.g. `while (queue_.empty()) cv_.Wait(mu_);`.
class CondVar {
 public:
  void Wait(Mutex& mu) ISB_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // False if `deadline` passed first.
  template <class Clock, class Duration>
  bool WaitUntil(Mutex& mu, const std::chrono::time_point<Clock, Duration>& deadline) ISB_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  // False if `timeout` passed first.
  template <class Rep, class Period>
  bool WaitFor(Mutex& mu, const std::chrono::duration<Rep, Period>& timeout) ISB_REQUIRES(mu) {
    return WaitUntil(mu, std::chrono::steady_clock::now() + timeout);
  }
  // Waits until `flag` (guarded by `mu`) is true or `timeout` has passed; returns `flag`.
  template <class Rep, class Period>
  bool WaitForFlag(Mutex& mu, const bool& flag, const std::chrono::duration<Rep, Period>& timeout) ISB_REQUIRES(mu) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!flag && WaitUntil(mu, deadline)) {
    }
    return flag;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace isb
