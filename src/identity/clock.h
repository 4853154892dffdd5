// The identity layer's clock: unix seconds, injectable so tests can move time.
#pragma once

#include <time.h>

#include <cstdint>
#include <functional>

namespace isb::identity {

using Clock = std::function<int64_t()>;

inline int64_t UnixNow() { return static_cast<int64_t>(::time(nullptr)); }

}  // namespace isb::identity
