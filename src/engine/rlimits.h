// Resource limits set on every sandbox process, each with its reason.
#pragma once

#include <sys/resource.h>

#include <cstddef>

#include <vector>

namespace isb::engine {

struct RlimitSetting {
  int resource;
  rlim_t soft;
  rlim_t hard;
  const char* name;
  const char* why;
};

// Computed in the parent (hard limits never exceed the caller's own).
std::vector<RlimitSetting> SandboxRlimits();
// Async-signal-safe; returns 0 or -errno.
int ApplyRlimits(const RlimitSetting* settings, size_t count);

}  // namespace isb::engine
