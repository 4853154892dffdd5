// The spawner: a single-threaded process, forked before the daemon starts any thread, that does every clone.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/fd.h"
#include "base/mutex.h"
#include "base/result.h"
#include "engine/config.h"

namespace isb::engine {

// A service sandbox the spawner started and let go: its init holds the lease; the daemon owns the cgroup.
struct SpawnedSandbox {
  pid_t pid = 0;             // init, in the host's pid namespace
  uint64_t start_time = 0;   // init's start time (/proc/PID/stat), to tell it from a reused pid
  std::string cgroup;        // the cgroup's name under <hierarchy>/isb/
  int64_t lease_index = -1;  // -1: none (a privileged sandbox)
  uint32_t uid_base = 0;     // 0 for a privileged sandbox: its ids are the host's
  // The sandbox's setup report, still being written: wait on it with WaitForSetup (launch.h) before using the
  // sandbox. Launching returns before setup ends so that sandboxes are set up in parallel.
  Fd report;
};

class Spawner {
 public:
  Spawner() = default;
  Spawner(Spawner&&) = delete;
  ~Spawner();

  // Forks the spawner process. REQUIRES: no other thread exists yet.
  Status Start(const std::string& runtime_dir);
  // Launches a service sandbox whose init listens on `control_path`. Thread-safe (one launch at a time).
  Result<SpawnedSandbox> Spawn(const SandboxConfig& config, const std::string& control_path,
                               const std::string& cgroup_name = "");

 private:
  Mutex mu_;
  Fd sock_ ISB_GUARDED_BY(mu_);  // one request and its reply at a time
  pid_t pid_ = 0;
};

// The start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat); 0 if it does not exist or has
// exited (a zombie).
uint64_t ProcessStartTime(pid_t pid);

// Handles on the process `pid` only while it is the one that started at `start_time`, else an invalid Fd. Each is
// opened first and checked after, so a pid freed and taken by another process meanwhile is never what it refers to.
// A pidfd (signals reach that process or no one):
Fd OpenProcess(pid_t pid, uint64_t start_time);
// Its /proc directory (O_PATH): what is opened under it ("root", "ns/net") is that process's, or fails with ESRCH
// once it has exited.
Fd OpenProcessDir(pid_t pid, uint64_t start_time);

std::string ConfigToJson(const SandboxConfig& c);
Result<SandboxConfig> ConfigFromJson(const std::string& text);

}  // namespace isb::engine
