// Sliding-window failure counting with least-recently-used eviction.
#include "identity/rate_limit.h"

#include <algorithm>

namespace isb::identity {

RateLimiter::RateLimiter(RateLimit limit, Clock now) : limit_(limit), now_(std::move(now)) {}

void RateLimiter::Expire(Entry& e, int64_t now) const {
  while (!e.failures.empty() && e.failures.front() + limit_.window_seconds <= now) e.failures.pop_front();
}

void RateLimiter::Touch(Entry& e) { lru_.splice(lru_.begin(), lru_, e.lru); }

int64_t RateLimiter::RetryAfter(std::string_view key) {
  MutexLock lock(mu_);
  auto it = entries_.find(std::string(key));
  if (it == entries_.end()) return 0;
  int64_t now = now_();
  Expire(it->second, now);
  const auto& f = it->second.failures;
  if (static_cast<int>(f.size()) < limit_.max_failures) return 0;
  return std::max<int64_t>(1, f.front() + limit_.window_seconds - now);
}

void RateLimiter::RecordFailure(std::string_view key) {
  MutexLock lock(mu_);
  int64_t now = now_();
  auto [it, added] = entries_.try_emplace(std::string(key));
  Entry& e = it->second;
  if (added) {
    lru_.push_front(it->first);
    e.lru = lru_.begin();
  } else {
    Touch(e);
  }
  Expire(e, now);
  e.failures.push_back(now);
  while (static_cast<int>(e.failures.size()) > std::max(limit_.max_failures, 1)) e.failures.pop_front();
  while (entries_.size() > limit_.max_keys) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
}

void RateLimiter::Refund(std::string_view key) {
  MutexLock lock(mu_);
  auto it = entries_.find(std::string(key));
  if (it != entries_.end() && !it->second.failures.empty()) it->second.failures.pop_back();
}

void RateLimiter::Reset(std::string_view key) {
  MutexLock lock(mu_);
  auto it = entries_.find(std::string(key));
  if (it == entries_.end()) return;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

size_t RateLimiter::keys() const {
  MutexLock lock(mu_);
  return entries_.size();
}

SignInLimiter::SignInLimiter(Clock now, RateLimit per_account, RateLimit per_address)
    : accounts_(per_account, now), addresses_(per_address, now) {}

int64_t SignInLimiter::RetryAfter(std::string_view account, std::string_view address) {
  return std::max(accounts_.RetryAfter(account), addresses_.RetryAfter(address));
}

void SignInLimiter::RecordFailure(std::string_view account, std::string_view address) {
  accounts_.RecordFailure(account);
  addresses_.RecordFailure(address);
}

void SignInLimiter::RecordSuccess(std::string_view account) { accounts_.Reset(account); }

int64_t SignInLimiter::Begin(std::string_view account, std::string_view address) {
  MutexLock lock(begin_mu_);
  if (int64_t wait = RetryAfter(account, address); wait > 0) return wait;
  RecordFailure(account, address);
  return 0;
}

void SignInLimiter::Succeeded(std::string_view account, std::string_view address) {
  accounts_.Reset(account);
  addresses_.Refund(address);
}

}  // namespace isb::identity
