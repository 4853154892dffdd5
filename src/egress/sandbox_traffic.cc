// The per-sandbox byte counters' table.
#include "egress/sandbox_traffic.h"

namespace isb::egress {

void SandboxTraffic::Track(const std::string& sandbox) {
  MutexLock lock(mu_);
  std::shared_ptr<SandboxBytes>& bytes = by_sandbox_[sandbox];
  if (!bytes) bytes = std::make_shared<SandboxBytes>();
}

void SandboxTraffic::Forget(const std::string& sandbox) {
  MutexLock lock(mu_);
  by_sandbox_.erase(sandbox);
}

std::shared_ptr<SandboxBytes> SandboxTraffic::Find(const std::string& sandbox) const {
  MutexLock lock(mu_);
  auto it = by_sandbox_.find(sandbox);
  return it == by_sandbox_.end() ? nullptr : it->second;
}

std::optional<TrafficTotals> SandboxTraffic::Read(const std::string& sandbox) const {
  std::shared_ptr<SandboxBytes> bytes = Find(sandbox);
  if (!bytes) return std::nullopt;
  return TrafficTotals{bytes->up.load(std::memory_order_relaxed), bytes->down.load(std::memory_order_relaxed)};
}

}  // namespace isb::egress
