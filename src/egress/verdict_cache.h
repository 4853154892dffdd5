// The judge's verdicts, remembered for a while in a bounded LRU, and the single flight that makes identical
// concurrent questions share one call.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/mutex.h"
#include "egress/breaker.h"
#include "egress/judge_verdict.h"

namespace isb::egress {

using SteadyClock = std::function<SteadyTime()>;

class VerdictCache {
 public:
  // What one call to the judge gave: the decision, and whether it may be remembered (a clear verdict; not a
  // failure, which the next question should try again).
  struct Answer {
    JudgeVerdict verdict;
    bool cacheable = false;
  };

  VerdictCache(size_t capacity, std::chrono::milliseconds ttl, SteadyClock clock);

  // Thread-safe. A fresh cached verdict for `key` if there is one; else the answer of the call already asking the
  // same key, waited for; else `ask`'s answer (run on this thread, without locks held), remembered if cacheable.
  // Beyond `capacity`, the owner holding the most entries (an org) gives up its least recently used one: one owner
  // asking ever new questions evicts its own verdicts, never another's, while others hold fewer.
  JudgeVerdict Get(const std::string& key, const std::string& owner, const std::function<Answer()>& ask);
  JudgeVerdict Get(const std::string& key, const std::function<Answer()>& ask) { return Get(key, "", ask); }

  size_t size() const;
  // Callers waiting for another's call to land (what tests of the single flight wait for).
  size_t waiting() const;

 private:
  struct Entry {
    std::string key;
    std::string owner;
    JudgeVerdict verdict;
    SteadyTime expires;
  };
  void Erase(std::list<Entry>::iterator it) ISB_REQUIRES(mu_);
  struct Flight {  // its fields with mu_ held
    bool done = false;
    JudgeVerdict verdict;
  };

  const size_t capacity_;
  const std::chrono::milliseconds ttl_;
  const SteadyClock clock_;
  mutable Mutex mu_;
  CondVar landed_;
  std::list<Entry> lru_ ISB_GUARDED_BY(mu_);  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_ ISB_GUARDED_BY(mu_);
  std::unordered_map<std::string, std::shared_ptr<Flight>> flights_ ISB_GUARDED_BY(mu_);
  std::unordered_map<std::string, size_t> held_ ISB_GUARDED_BY(mu_);  // entries per owner
  size_t waiting_ ISB_GUARDED_BY(mu_) = 0;
};

}  // namespace isb::egress
