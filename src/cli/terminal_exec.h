// `isb exec -t`: a terminal exec driven from the local terminal (raw mode, keystrokes, window size).
#pragma once

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {

// Runs sandbox_exec `input` (sandbox, argv, ...) with a terminal of this terminal's size over `client`, writing its
// output to stdout as it comes. With `forward_input`, stdin goes to the command: when stdin is a terminal it is
// put in raw mode (every key goes to the command, Ctrl-C included) and restored on every way out, signals
// included; at the end of a non-terminal stdin the command's terminal gets end-of-file. Window size changes
// (SIGWINCH) follow. Returns the tool's final result.
Result<json> RunTerminalExec(const ToolClient& client, json input, bool forward_input);

}  // namespace isb::cli
