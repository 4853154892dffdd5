// The rlimit table.
#include "engine/rlimits.h"

#include <algorithm>
#include <cerrno>

namespace isb::engine {

std::vector<RlimitSetting> SandboxRlimits() {
  std::vector<RlimitSetting> out = {
      {RLIMIT_CORE, 0, 0, "RLIMIT_CORE", "no core dumps: they would write sandbox memory to disk"},
      {RLIMIT_NOFILE, kSandboxNofileSoft, kSandboxNofileHard, "RLIMIT_NOFILE",
       "bounds the host's one file table: a sandbox holds at most its pids limit times this"},
      {RLIMIT_MEMLOCK, 8u << 20, 8u << 20, "RLIMIT_MEMLOCK", "locked memory escapes the cgroup's reclaim"},
      {RLIMIT_MSGQUEUE, 800u << 10, 800u << 10, "RLIMIT_MSGQUEUE", "POSIX message queues are kernel memory"},
      {RLIMIT_SIGPENDING, 4096, 4096, "RLIMIT_SIGPENDING", "queued signals are kernel memory"},
  };
  // Processes, memory and CPU are bounded by the cgroup (pids.max, memory.max, cpu.max), not by rlimits, which
  // count per uid and per process and would be bypassed by forking.
  for (auto& s : out) {
    rlimit cur{};
    if (::getrlimit(s.resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY) {
      s.hard = std::min(s.hard, cur.rlim_max);
      s.soft = std::min(s.soft, s.hard);
    }
  }
  return out;
}

int ApplyRlimits(const RlimitSetting* settings, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    rlimit r{settings[i].soft, settings[i].hard};
    if (::setrlimit(settings[i].resource, &r) != 0) return -errno;
  }
  return 0;
}

}  // namespace isb::engine
