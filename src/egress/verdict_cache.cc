#include "egress/verdict_cache.h"

namespace isb::egress {

VerdictCache::VerdictCache(size_t capacity, std::chrono::milliseconds ttl, SteadyClock clock)
    : capacity_(capacity), ttl_(ttl), clock_(std::move(clock)) {}

void VerdictCache::Erase(std::list<Entry>::iterator it) {
  if (auto h = held_.find(it->owner); h != held_.end() && --h->second == 0) held_.erase(h);
  index_.erase(it->key);
  lru_.erase(it);
}

JudgeVerdict VerdictCache::Get(const std::string& key, const std::string& owner, const std::function<Answer()>& ask) {
  std::shared_ptr<Flight> flight;
  {
    MutexLock lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      if (clock_() < it->second->expires) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->verdict;
      }
      Erase(it->second);
    }
    if (auto it = flights_.find(key); it != flights_.end()) {
      std::shared_ptr<Flight> joined = it->second;
      ++waiting_;
      while (!joined->done) landed_.Wait(mu_);
      --waiting_;
      return joined->verdict;
    }
    flight = std::make_shared<Flight>();
    flights_.emplace(key, flight);
  }
  Answer answer = ask();
  MutexLock lock(mu_);
  if (answer.cacheable && capacity_ > 0) {
    if (auto it = index_.find(key); it != index_.end()) Erase(it->second);  // a flight that began after an expiry
    lru_.push_front(Entry{key, owner, answer.verdict, clock_() + ttl_});
    index_[key] = lru_.begin();
    ++held_[owner];
    while (lru_.size() > capacity_) {
      std::string most = owner;
      for (const auto& [who, n] : held_)
        if (n > held_[most]) most = who;
      auto victim = std::prev(lru_.end());
      while (victim->owner != most) --victim;  // `most` holds one at least
      Erase(victim);
    }
  }
  flight->verdict = answer.verdict;
  flight->done = true;
  flights_.erase(key);
  landed_.NotifyAll();
  return answer.verdict;
}

size_t VerdictCache::size() const {
  MutexLock lock(mu_);
  return lru_.size();
}

size_t VerdictCache::waiting() const {
  MutexLock lock(mu_);
  return waiting_;
}

}  // namespace isb::egress
