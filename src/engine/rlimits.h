// Resource limits set on every sandbox process, each with its reason.
#pragma once

#include <sys/resource.h>

#include <cstddef>

#include <vector>

namespace isb::engine {

// Open files per sandbox process: the soft limit most programs expect, and a hard one a program may raise itself
// to. The host has one file table (fs.file-max) for everyone: a sandbox holds at most pids x kSandboxNofileHard of
// it, and an org at most its pids quota times that. (isb's daemon runs with CAP_SYS_ADMIN, which the kernel lets
// open files past a full table.)
inline constexpr rlim_t kSandboxNofileSoft = 1024;
inline constexpr rlim_t kSandboxNofileHard = 4096;

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
