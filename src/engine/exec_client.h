// The daemon's side of an exec session: connect to a sandbox's init, start a command, relay its I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "engine/exec_terminal.h"

namespace isb::engine {

struct ExecSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // the complete environment, "K=V"
  std::string workdir = "/";
  uint32_t uid = 0, gid = 0;
  std::string stdin_data;
  std::chrono::milliseconds timeout{60'000};
  uint64_t output_limit = 256 * 1024;  // per stream
  // All output reaches the sink, and output_limit bounds only what the outcome keeps (a detached command's, whose
  // output goes to its log).
  bool sink_all = false;
  // Asked about once a second while the command runs; true ends it (its process group is killed), for a caller
  // that went away or cancelled. Called on the exec's own thread.
  std::function<bool()> cancelled;
  // A terminal instead of pipes: stdout and stderr are one stream (stdout), stdin_data is typed into it, and all
  // output reaches the sink (output_limit bounds only what the outcome keeps).
  bool tty = false;
  uint16_t rows = 24, cols = 80;
  // With tty: called once the command runs, before any output, with its terminal, for input and resizes from
  // other threads. Called on the exec's own thread.
  std::function<void(std::shared_ptr<ExecTerminal>)> on_terminal;
};

struct ExecOutcome {
  int exit_code = 0;  // 128+N for signal N; 124 on timeout; 126/127 when the command could not be executed
  int signal = 0;
  bool timed_out = false;
  std::string stdout_data, stderr_data;
  bool stdout_truncated = false, stderr_truncated = false;
  double duration_ms = 0;
  std::string exec_error;
};

// Called with 1 (stdout) or 2 (stderr) and each chunk, as produced (only the part within the limit).
using ExecSink = std::function<void(int stream, std::string_view data)>;

// Runs one command in the sandbox whose control socket is `control_path`. Thread-safe; blocks until the command
// exits or times out (then its process group is killed). Code::kNotFound if the sandbox is not running.
Result<ExecOutcome> ExecInSandbox(const std::string& control_path, const ExecSpec& spec, const ExecSink& sink);

// The request init reads (exec_protocol.h) for `spec`: its argv, env, workdir, user and terminal size. Errors:
// kInvalidArgument (no command, a NUL in a string, a terminal of no size), kTooLarge (over kExecMaxMessage, or more
// than 4000 arguments or variables).
Result<std::string> EncodeExecRequest(const ExecSpec& spec);

}  // namespace isb::engine
