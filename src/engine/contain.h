// The containment sequence: what the parent prepares, and the ordered steps the child takes before exec.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/config.h"
#include "engine/mounts.h"
#include "engine/rlimits.h"
#include "engine/seccomp.h"

namespace isb::engine {

// Each step the child takes (in order, but for kCgroupNs, which follows kLoopback); a failure names its step.
enum class Step : int32_t {
  kSync,      // wait for the parent: ids mapped (go), then, after the loopback, the child in its cgroup
  kIds,       // become root of the new user namespace
  kCgroupNs,  // a cgroup namespace rooted at the sandbox's cgroup
  kRootfs,    // build the root and pivot into it
  kHostname,
  kLoopback,
  kRlimits,
  kSession,  // a new session: no controlling terminal outside
  kCaps,     // bounding set and capability sets
  kNoNewPrivs,
  kSeccomp,
  kFork,  // init forks the command
  kUser,  // the command's uid/gid
  kWorkdir,
  kStdio,
  kExec,
  kServe,  // the service init could not start serving
};
const char* StepName(Step s);

// What a failing child reports over the error pipe.
struct ChildFailure {
  Step step;
  int32_t err;     // errno
  int32_t detail;  // kRootfs: the index of the failed RootfsPlan step
};

// Everything the child needs, prepared by the parent so that the child allocates nothing.
struct ChildPlan {
  RootfsPlan rootfs;
  SeccompProgram seccomp;
  std::vector<RlimitSetting> rlimits;
  uint64_t capabilities = 0;
  std::deque<std::string> strings;
  std::vector<char*> argv;             // null-terminated
  std::vector<char*> envp;             // null-terminated
  std::vector<char*> exec_candidates;  // where argv[0] may be, tried in order; null-terminated
  const char* hostname = nullptr;
  size_t hostname_len = 0;
  const char* workdir = nullptr;
  uid_t uid = 0;
  gid_t gid = 0;
  int sync_fd = -1;        // read end: a byte from the parent means go, a second one joined; EOF: it gave up
  int sync_write_fd = -1;  // the parent's end of that pipe, closed first in the child so the parent's death is EOF
  int error_fd = -1;       // write end, close-on-exec: a ChildFailure, or EOF when exec succeeded
  int status_fd = -1;      // write end: the command's wait status, from init
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
  bool die_with_parent = true;
  bool service = false;  // serve exec sessions on control_fd instead of running argv once
  int control_fd = -1;   // listening SOCK_SEQPACKET socket (service)
  int lease_fd = -1;     // the uid-range lease; init holds its lock for the sandbox's lifetime (service; -1: none)
};

// The sandbox's environment: isb's defaults (PATH, HOME, TERM=xterm when given), overridden by `env`.
std::vector<std::string> SandboxEnvironment(const std::vector<std::string>& env);

// Fills argv, envp, exec candidates, hostname, workdir, uid/gid, rlimits and capabilities from `config`.
Status PrepareChildPlan(const SandboxConfig& config, ChildPlan* plan);

// Records where this process's argv strings are, so that a sandbox's init (a fork of this process) can erase
// them: /proc/1/cmdline inside the sandbox would otherwise show the host's isb command line and its paths.
void RememberProcessArgs(int argc, char** argv);

// The child side of clone: runs the containment steps in order and becomes the sandbox's init.
// Async-signal-safe throughout. Never returns.
[[noreturn]] void ChildMain(const ChildPlan& plan);

// Reports a failure to the parent and exits. Async-signal-safe.
[[noreturn]] void ChildFail(const ChildPlan& plan, Step step, int err, int detail = 0);

}  // namespace isb::engine
