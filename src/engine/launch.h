// Launch: the parent's side of the containment sequence, up to a sandbox whose init is running.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "engine/cgroup.h"
#include "engine/config.h"
#include "engine/idmap.h"

namespace isb::engine {

// How the sandbox's init behaves once containment is complete.
enum class InitMode {
  kRunOnce,  // run config.argv, report its status, exit (isb run)
  kService,  // serve exec sessions on a control socket until killed (the daemon's sandboxes)
};

struct LaunchOptions {
  std::string runtime_dir = "/run/isb";
  InitMode mode = InitMode::kRunOnce;
  // kRunOnce: the command's stdin, and whether SIGINT etc. are left blocked for the caller's signalfd.
  int stdin_fd = 0;
  // kService: where the control socket is created (a 0700 directory of the daemon's).
  std::string control_path;
  // The cgroup's name under <hierarchy>/isb/ (default: "run-" and random hex).
  std::string cgroup_name;
  // Wait for the child's setup report before returning. When false, the report pipe is left in
  // Launched::report_read for the caller to wait on with WaitForSetup (the spawner hands it to the daemon, so that
  // sandboxes are set up in parallel while the spawner clones the next).
  bool wait_for_setup = true;
  // kRunOnce sandboxes die with their parent; service sandboxes outlive the daemon.
  bool die_with_parent = true;
};

// A sandbox whose containment succeeded. Destroying it kills the sandbox and removes its cgroup and lease,
// unless Detach() handed them over (to the sandbox itself and to whoever adopts it).
class Launched {
 public:
  Launched() = default;
  Launched(Launched&& o) noexcept { *this = std::move(o); }
  Launched& operator=(Launched&& o) noexcept;
  ~Launched();

  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_.get(); }
  const IdLease& lease() const { return lease_; }  // not held for a privileged sandbox
  Cgroup& cgroup() { return cgroup_; }

  // kRunOnce: the command's output pipes and init's status pipe; exec_errno is set when exec failed.
  Fd stdout_read, stderr_read, status_read;
  int exec_errno = 0;
  // The setup report, when LaunchOptions::wait_for_setup was false.
  Fd report_read;
  // When each step of the launch ended, in order (plan, lease, cgroup, clone, id_maps, go, cgroup_join, setup):
  // where a sandbox's start-up time goes, for `isb run --json`. The cgroup is joined while the child builds its
  // root; setup is what is left of the child's own (mounts, pivot, exec), waited for.
  std::vector<std::pair<const char*, std::chrono::steady_clock::time_point>> steps;

  // Waits for init to exit and returns its wait status.
  int Wait();
  // Leaves the sandbox running: the lease stays locked by init, the cgroup stays. Returns the cgroup's name.
  std::string Detach();

 private:
  friend Result<Launched> Launch(const SandboxConfig&, const LaunchOptions&);
  pid_t pid_ = 0;
  Fd pidfd_;
  IdLease lease_;
  Cgroup cgroup_;
};

// Reads a setup report pipe to its end: OK when every containment step succeeded (EOF), else the failed step,
// described for `config` (the same config the sandbox was launched with). *exec_errno is set when only the exec of
// a run-once command failed. A setup that has not reported within `timeout` is kUnavailable (the caller halts the
// sandbox): nothing the sandbox left in its layer or image may hold up its caller, and the locks it holds, for good.
inline constexpr std::chrono::milliseconds kSetupTimeout{30'000};
Status WaitForSetup(int report_fd, const SandboxConfig& config, const std::string& runtime_dir, int* exec_errno,
                    std::chrono::milliseconds timeout = kSetupTimeout);

// Builds the sandbox and starts its init. Fails closed: if any containment step fails, nothing runs and nothing
// is left behind. REQUIRES: the calling process is single-threaded (the sandbox is cloned from it).
Result<Launched> Launch(const SandboxConfig& config, const LaunchOptions& options);

}  // namespace isb::engine
