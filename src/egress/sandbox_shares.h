// What each sandbox holds of the proxy at once: its open connections and its decides and dials running on the
// blocking pool, each counted against a limit, so that no sandbox can take what the others need.
#pragma once

#include <map>
#include <string>

#include "base/mutex.h"

namespace isb::egress {

class SandboxShares {
 public:
  enum class Kind { kConnection, kBlocking };

  // Takes one of `kind` for `sandbox` if it holds fewer than `limit`; Release gives it back.
  bool Take(const std::string& sandbox, Kind kind, int limit);
  void Release(const std::string& sandbox, Kind kind);

  // Gives back what Take took when it goes.
  class Holding {
   public:
    Holding(SandboxShares& shares, const std::string& sandbox, Kind kind)
        : shares_(shares), sandbox_(sandbox), kind_(kind) {}
    Holding(const Holding&) = delete;
    Holding& operator=(const Holding&) = delete;
    ~Holding() { shares_.Release(sandbox_, kind_); }

   private:
    SandboxShares& shares_;
    std::string sandbox_;
    Kind kind_;
  };

 private:
  struct Held {
    int connections = 0;
    int blocking = 0;
    int& Of(Kind kind) { return kind == Kind::kConnection ? connections : blocking; }
  };
  Mutex mu_;
  std::map<std::string, Held> held_ ISB_GUARDED_BY(mu_);  // by sandbox; an entry goes when it holds nothing
};

}  // namespace isb::egress
