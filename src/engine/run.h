// Running one command in a fresh sandbox to completion: the parent's side of the containment sequence.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "engine/config.h"

namespace isb::engine {

struct RunOptions {
  // Where leases and the staging mount point live (default /run/isb).
  std::string runtime_dir = "/run/isb";
  int stdin_fd = 0;
  // Output goes to these descriptors as it is produced, unless `capture` keeps it in the result.
  int stdout_fd = 1;
  int stderr_fd = 2;
  bool capture = false;
  // Forward SIGINT, SIGTERM, SIGHUP and SIGQUIT received by this process to the command.
  bool forward_signals = true;
  // Read the cgroup's peak memory and CPU time into the result (four files); without, only its OOM kills are read.
  bool usage = true;
};

struct RunResult {
  int exit_code = 0;        // the command's, 128+N for signal N, 124 on timeout, 126/127 when it could not be executed
  int signal = 0;           // the signal that ended the command, if any
  bool oom_killed = false;  // from the cgroup's own OOM counter
  bool timed_out = false;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  double wall_ms = 0;
  double cpu_ms = 0;                     // with RunOptions::usage
  uint64_t peak_memory_bytes = 0;        // with RunOptions::usage
  std::string stdout_data, stderr_data;  // with `capture`
  std::string exec_error;                // why the command could not be executed (exit codes 126/127)
  // Where the wall time went, step by step in order: the launch's steps (Launched::steps), then "command" (from the
  // command's exec to init's exit) and "cleanup" (the cgroup read and removed). Up to "command" they add up to
  // wall_ms.
  std::vector<std::pair<std::string, double>> steps_ms;
};

// Builds the sandbox described by `config`, runs its command, and removes every trace of it (cgroup, uid-range
// lease, processes) before returning. Fails closed: if a containment step fails the command does not run.
// REQUIRES: the calling process is single-threaded (the sandbox is cloned from it).
Result<RunResult> RunSandbox(const SandboxConfig& config, const RunOptions& options);

}  // namespace isb::engine
