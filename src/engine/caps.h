// Capabilities a sandbox's root keeps; every other one leaves the bounding set for good.
#pragma once

#include <cstdint>
#include <vector>

namespace isb::engine {

struct CapInfo {
  int cap;
  const char* name;
  const char* why;
};

// The documented list (SECURITY.md): what root inside a sandbox may still do, within its own user namespace.
const std::vector<CapInfo>& KeptCapabilities();
uint64_t KeptCapabilityMask();

// Drops every capability not in `keep` from the bounding set, clears the ambient and inheritable sets, and sets
// effective and permitted to `keep`. Async-signal-safe; returns 0 or -errno.
int RestrictCapabilities(uint64_t keep);

}  // namespace isb::engine
