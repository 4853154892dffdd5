// Per-sandbox counts of connections and blocking work, under one lock.
#include "egress/sandbox_shares.h"

namespace isb::egress {

bool SandboxShares::Take(const std::string& sandbox, Kind kind, int limit) {
  MutexLock lock(mu_);
  int& held = held_[sandbox].Of(kind);
  if (held >= limit) return false;
  ++held;
  return true;
}

void SandboxShares::Release(const std::string& sandbox, Kind kind) {
  MutexLock lock(mu_);
  auto it = held_.find(sandbox);
  if (it == held_.end()) return;
  --it->second.Of(kind);
  if (it->second.connections == 0 && it->second.blocking == 0) held_.erase(it);
}

}  // namespace isb::egress
