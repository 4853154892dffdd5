// A command to run in a sandbox: the request, its defaults and limits stated once, its parser and one validator.
// The API parses and validates it at the edge; the daemon and the runtimes take it as valid (a sandbox's init
// still checks what crosses from inside the sandbox).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"

namespace isb::spec {

inline constexpr size_t kMaxStdinBytes = 1 << 20;
inline constexpr int64_t kDefaultExecTimeoutS = 60, kMaxExecTimeoutS = 15 * 60;
// An interactive command (a person at a terminal): ended after idle_timeout without input or a resize, and at the
// latest after its timeout, which may be up to a day.
inline constexpr int64_t kDefaultTerminalIdleS = 30 * 60, kMaxInteractiveTimeoutS = 24 * 3600;
inline constexpr uint16_t kDefaultRows = 24, kDefaultCols = 80;
inline constexpr uint16_t kMaxTerminalSide = 1000;  // rows or columns

struct ExecRequest {
  std::vector<std::string> argv;  // never a shell string
  std::string stdin_data;         // at most kMaxStdinBytes
  std::map<std::string, std::string> env;
  std::string workdir;                                             // empty: the sandbox's working_dir
  std::chrono::milliseconds timeout{kDefaultExecTimeoutS * 1000};  // at most kMaxExecTimeoutS
  // Started and not waited for (sandbox_exec's detach): its output goes to the sandbox's log. A `timeout` of zero
  // is none (it runs until it exits or its sandbox stops); any other is the same bound as an exec's.
  bool detach = false;
  // Nonzero: interactive (tty only; set by the server's own web terminal, never from a caller's JSON). The command is
  // also ended once this long passes with no input typed and no resize (output does not count); `timeout` is then a
  // hard cap of at most kMaxInteractiveTimeoutS, and at least this.
  std::chrono::milliseconds idle_timeout{0};
  // True once the caller has gone away or cancelled the call (the command is then killed).
  std::function<bool()> cancelled;
  // A terminal (a pty inside the sandbox) instead of pipes: stderr merges into stdout, and the session can be
  // driven while it runs (ExecInput, ExecResize) by the same `caller` only.
  bool tty = false;
  uint16_t rows = kDefaultRows, cols = kDefaultCols;
  std::string caller;  // who started it: the org and the identity, as the tools spell them
  // With tty: called once with the session's id when the command runs, before any output.
  std::function<void(const std::string& session)> on_session;
};

// The rules every request obeys; the first broken one as kInvalidArgument naming the field. The API's parser
// (sandbox_exec, whose JSON forms are the API's) ends with it.
Status Validate(const ExecRequest& req);
// A terminal's size, at its start and at each resize: 1 to kMaxTerminalSide rows and columns.
Status ValidateTerminalSize(uint16_t rows, uint16_t cols);

}  // namespace isb::spec
