// Sign-in rate limits: failures counted per key (an account, an address) over a sliding window, in bounded memory.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/mutex.h"
#include "identity/clock.h"

namespace isb::identity {

struct RateLimit {
  int max_failures = 5;  // failures allowed within the window; the next attempt waits
  int64_t window_seconds = 900;
  size_t max_keys = 10000;  // beyond this, the key idle the longest is forgotten
};

// Thread-safe.
class RateLimiter {
 public:
  explicit RateLimiter(RateLimit limit, Clock now = UnixNow);

  // 0 when an attempt for `key` may go ahead; otherwise the seconds until it may (Retry-After), at least 1.
  int64_t RetryAfter(std::string_view key);
  void RecordFailure(std::string_view key);
  // Takes back the last failure recorded for `key` (an attempt counted before it was judged, then good).
  void Refund(std::string_view key);
  // A success forgets the key's failures.
  void Reset(std::string_view key);
  size_t keys() const;

 private:
  struct Entry {
    std::deque<int64_t> failures;          // times, oldest first; at most max_failures
    std::list<std::string>::iterator lru;  // position in lru_
  };
  void Expire(Entry& e, int64_t now) const;
  void Touch(Entry& e) ISB_REQUIRES(mu_);

  RateLimit limit_;
  Clock now_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ ISB_GUARDED_BY(mu_);
  std::list<std::string> lru_ ISB_GUARDED_BY(mu_);  // most recently touched first
};

// The sign-in limits: per account (5 failures in 15 minutes) and per client address (20 in 15 minutes).
class SignInLimiter {
 public:
  explicit SignInLimiter(Clock now = UnixNow, RateLimit per_account = {5, 900, 10000},
                         RateLimit per_address = {20, 900, 10000});
  // 0: go ahead; else seconds to wait, the longer of the two limits. Ask before checking the password.
  int64_t RetryAfter(std::string_view account, std::string_view address);
  void RecordFailure(std::string_view account, std::string_view address);
  // A good sign-in clears the account's failures (not the address's: one address may try many accounts).
  void RecordSuccess(std::string_view account);

  // For a check that runs while others do (a sign-in on a worker thread): 0 when the attempt may go ahead, and it
  // is then counted as a failure at once, so concurrent attempts cannot all pass one check before any is counted;
  // else the seconds to wait. A good attempt then calls Succeeded.
  int64_t Begin(std::string_view account, std::string_view address);
  // The attempt Begin counted was good: the account's failures go, and so does the address's charge for it.
  void Succeeded(std::string_view account, std::string_view address);

 private:
  Mutex begin_mu_;  // one Begin at a time: its check and its charge are one step
  RateLimiter accounts_;
  RateLimiter addresses_;
};

}  // namespace isb::identity
