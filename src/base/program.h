// Running a host program from a multi-threaded daemon: posix_spawn, its stdin fed, its stderr kept.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace isb {

struct ProgramExit {
  int status = 0;           // as waitpid reports it
  std::string stderr_text;  // at most 4 KiB, trailing newlines removed
  std::string stdout_text;  // at most the stdout_limit asked for (none: empty), trailing newlines removed
  bool ok() const;          // exited with 0
};

// Runs `argv` (argv[0] is looked up in PATH unless it holds a '/') with `input` on its stdin, its stdout discarded
// (or, with a stdout_limit, kept up to that many bytes), the signal mask and SIGPIPE back to their defaults. Its
// input is written and its output read as each is ready; one that exits before reading all its input raises no
// SIGPIPE here. An error when it cannot be started (errno in the error), and, with a timeout (0: none), when it has
// not exited within it: it is killed (SIGKILL, itself, not what it started), waited for, and the error is kTimeout.
// Otherwise how it ended is the ProgramExit. `argv` must carry no secrets: it is visible in /proc to
// the whole host.
Result<ProgramExit> RunProgram(const std::vector<std::string>& argv, std::string_view input = {},
                               size_t stdout_limit = 0, std::chrono::milliseconds timeout = {});

}  // namespace isb
