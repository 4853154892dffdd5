// The deny window's map of when each sandbox and target was last logged, swept when full.
#include "egress/deny_window.h"

namespace isb::egress {

bool DenyWindow::FirstInWindow(const std::string& key) {
  auto now = std::chrono::steady_clock::now();
  MutexLock lock(mu_);
  if (last_.size() >= kMaxDenyKeys && now - last_sweep_ >= std::chrono::seconds(1)) {
    std::erase_if(last_, [&](auto& kv) { return now - kv.second > kWindow; });
    last_sweep_ = now;
  }
  auto it = last_.find(key);
  if (it == last_.end()) {
    if (last_.size() >= kMaxDenyKeys) return false;
    last_.emplace(key, now);
    return true;
  }
  if (now - it->second < kWindow) return false;
  it->second = now;
  return true;
}

}  // namespace isb::egress
