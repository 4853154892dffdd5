// cgroups, v2 and v1/hybrid: one directory per sandbox with its memory+swap, CPU and pids limits, and its accounting.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/config.h"

namespace isb::engine {

// Where the controllers isb needs (memory, pids, cpu, and cpuacct on v1) are mounted.
struct CgroupLayout {
  bool v2 = false;
  std::string v2_root;  // the cgroup2 mount, when v2
  // v1: one mount per controller; co-mounted controllers (cpu,cpuacct) share a path.
  std::string memory, pids, cpu, cpuacct;
};

// Reads mountinfo text. A cgroup2 mount counts only if `v2_controllers` (its cgroup.controllers) offers memory,
// pids and cpu: on hybrid hosts it is mounted but the controllers are bound to v1, so it is treated as absent.
Result<CgroupLayout> ParseCgroupLayout(const std::string& mountinfo, const std::string& v2_controllers);
// The layout of this host.
Result<CgroupLayout> DetectCgroupLayout();

struct CgroupStats {
  uint64_t oom_kills = 0;
  uint64_t peak_memory_bytes = 0;
  uint64_t cpu_usec = 0;
  uint64_t memory_bytes = 0;  // current usage
  uint64_t pids = 0;          // current count
};

// The host keeps for itself (its services, the daemon) this share of kernel.pid_max: all sandboxes together may hold
// at most the rest, a bound the kernel enforces on isb's parent group (pids.max of <pids hierarchy>/isb), and no one
// sandbox may ask for more. At least kMinHostPidsReserve.
inline constexpr uint32_t kHostPidsReserveDivisor = 8;
inline constexpr uint32_t kMinHostPidsReserve = 1024;
struct PidsBound {
  uint32_t pid_max = 0;  // kernel.pid_max, or kernel.threads-max where that is lower
  uint32_t reserve = 0;  // kept for the host
  uint32_t sandboxes() const { return pid_max > reserve ? pid_max - reserve : 0; }
  // "28672 (kernel.pid_max 32768 less the 4096 this host keeps for itself)", for refusals.
  std::string Describe() const;
};
// This host's, read once.
const PidsBound& HostPidsBound();

// One sandbox's cgroup(s) under <hierarchy>/isb/<name>; removed by Remove() or the destructor.
class Cgroup {
 public:
  Cgroup() = default;
  Cgroup(Cgroup&& o) noexcept : layout_(std::move(o.layout_)), dirs_(std::move(o.dirs_)) {}
  Cgroup& operator=(Cgroup&& o) noexcept;
  ~Cgroup();

  static Result<Cgroup> Create(const CgroupLayout& layout, const std::string& name, const Limits& limits);
  // Takes ownership of an existing sandbox cgroup by name (a daemon adopting a sandbox after a restart). A name that
  // is empty or not one path component gives a Cgroup of no directories.
  static Cgroup Adopt(const CgroupLayout& layout, const std::string& name);
  // Gives up ownership without removing anything; returns the name.
  std::string Release();
  std::string name() const;

  Status AddProcess(pid_t pid) const;
  // Writes new limits into a live sandbox's cgroup, as Create writes them: a sandbox launched ahead with other
  // limits gets its create's. On v1 the memory and memory+swap limits are written in the order the kernel accepts
  // (memsw is never below the memory limit).
  Status SetLimits(const Limits& limits) const;
  Result<CgroupStats> ReadStats() const;
  // Only the OOM kills of ReadStats: one file where ReadStats reads five.
  Result<uint64_t> OomKills() const;
  // SIGKILLs every process in the cgroup (cgroup.kill on v2).
  void KillAll() const;
  // Kills what is left and removes the directories.
  Status Remove();
  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  CgroupLayout layout_;
  std::vector<std::string> dirs_;  // v2: one; v1: one per distinct hierarchy
};

}  // namespace isb::engine
