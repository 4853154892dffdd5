#include "egress/verdict_cache.h"

namespace isb::egress {

VerdictCache::VerdictCache(size_t capacity, std::chrono::milliseconds ttl, SteadyClock clock)
    : capacity_(capacity), ttl_(ttl), clock_(std::move(clock)) {}

JudgeVerdict VerdictCache::Get(const std::string& key, const std::function<Answer()>& ask) {
  std::shared_ptr<Flight> flight;
  {
    std::unique_lock lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      if (clock_() < it->second->expires) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->verdict;
      }
      lru_.erase(it->second);
      index_.erase(it);
    }
    if (auto it = flights_.find(key); it != flights_.end()) {
      std::shared_ptr<Flight> joined = it->second;
      ++waiting_;
      landed_.wait(lock, [&] { return joined->done; });
      --waiting_;
      return joined->verdict;
    }
    flight = std::make_shared<Flight>();
    flights_.emplace(key, flight);
  }
  Answer answer = ask();
  std::lock_guard lock(mu_);
  if (answer.cacheable && capacity_ > 0) {
    lru_.push_front(Entry{key, answer.verdict, clock_() + ttl_});
    index_[key] = lru_.begin();
    while (lru_.size() > capacity_) {
      index_.erase(lru_.back().key);
      lru_.pop_back();
    }
  }
  flight->verdict = answer.verdict;
  flight->done = true;
  flights_.erase(key);
  landed_.notify_all();
  return answer.verdict;
}

size_t VerdictCache::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

size_t VerdictCache::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_;
}

}  // namespace isb::egress
