#include "base/mutex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

namespace isb {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Whether another thread can take `mu` now (std::mutex's try_lock from its own holder is undefined).
template <class M>
bool FreeForAnotherThread(M& mu) {
  return std::async(std::launch::async,
                    [&mu] {
                      if (!mu.try_lock()) return false;
                      mu.unlock();
                      return true;
                    })
      .get();
}

TEST(MutexLock, HoldsItsMutexUntilTheScopeEnds) {
  Mutex mu;
  {
    MutexLock lock(mu);
    EXPECT_FALSE(FreeForAnotherThread(mu));
  }
  EXPECT_TRUE(FreeForAnotherThread(mu));
}

TEST(MutexLock, LetsGoOnUnlockTakesItAgainOnLockAndReleasesOnlyWhatItHolds) {
  Mutex mu;
  {
    MutexLock lock(mu);
    lock.Unlock();
    EXPECT_TRUE(FreeForAnotherThread(mu));
    lock.Lock();
    EXPECT_FALSE(FreeForAnotherThread(mu));
    lock.Unlock();
  }  // not held here: the destructor must not unlock it a second time
  EXPECT_TRUE(FreeForAnotherThread(mu));
}

// Taken again by its holder from a function of its own, as code that re-enters does (clang's lock analysis looks at
// one function at a time and knows no recursive lock: taking it twice in one function is an error to it).
void TakeAgainAndRelease(RecursiveMutex& mu) {
  RecursiveMutexLock inner(mu);
  inner.Unlock();
}

TEST(RecursiveMutexLock, IsTakenAgainByItsHolderAndFreedByTheLastRelease) {
  RecursiveMutex mu;
  {
    RecursiveMutexLock outer(mu);
    TakeAgainAndRelease(mu);
    EXPECT_FALSE(FreeForAnotherThread(mu));
  }
  EXPECT_TRUE(FreeForAnotherThread(mu));
}

TEST(CondVar, WaitForFlagReturnsFalseOnlyAfterTheTimeoutWhenNobodySetsIt) {
  Mutex mu;
  CondVar cv;
  bool flag = false;
  MutexLock lock(mu);
  const auto start = steady_clock::now();
  EXPECT_FALSE(cv.WaitForFlag(mu, flag, milliseconds(50)));
  EXPECT_GE(steady_clock::now() - start, milliseconds(50));
}

TEST(CondVar, WaitForFlagReturnsTrueOnceAnotherThreadSetsItAndNotifies) {
  Mutex mu;
  CondVar cv;
  bool flag = false;
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(20));
    MutexLock lock(mu);
    flag = true;
    cv.NotifyAll();
  });
  bool seen;
  {
    MutexLock lock(mu);
    seen = cv.WaitForFlag(mu, flag, std::chrono::seconds(30));
  }
  setter.join();
  EXPECT_TRUE(seen);
}

TEST(CondVar, WaitUntilReturnsFalseWhenTheDeadlinePassesAndHoldsTheMutexAgain) {
  Mutex mu;
  CondVar cv;
  MutexLock lock(mu);
  const auto deadline = steady_clock::now() + milliseconds(20);
  while (cv.WaitUntil(mu, deadline)) {
  }
  EXPECT_GE(steady_clock::now(), deadline);
  EXPECT_FALSE(FreeForAnotherThread(mu));
}

TEST(CondVar, WaitReturnsWhenNotifiedWithTheConditionTrue) {
  Mutex mu;
  CondVar cv;
  int value = 0;
  std::thread producer([&] {
    MutexLock lock(mu);
    value = 7;
    cv.NotifyOne();
  });
  {
    MutexLock lock(mu);
    while (value == 0) cv.Wait(mu);
    EXPECT_EQ(value, 7);
  }
  producer.join();
}

}  // namespace
}  // namespace isb
