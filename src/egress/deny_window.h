// Which refusals are logged: the first for a sandbox and target in each 30 s window, the rest only counted, in a map
// that a sandbox trying ever new names cannot grow past kMaxDenyKeys.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>

#include "base/mutex.h"

namespace isb::egress {

class DenyWindow {
 public:
  static constexpr size_t kMaxDenyKeys = 10000;
  static constexpr std::chrono::seconds kWindow{30};

  // Whether a refusal for `key` (sandbox and target) is the first in its window. Past kMaxDenyKeys keys refused
  // within the window, a new one is not marked first; the map is swept at most once a second.
  bool FirstInWindow(const std::string& key);

 private:
  Mutex mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> last_ ISB_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_sweep_ ISB_GUARDED_BY(mu_){};
};

}  // namespace isb::egress
