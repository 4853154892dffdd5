// What `isb exec` says on stderr about an exit code whose cause the command itself may not have said: 126 (found
// but not runnable), 127 (not found), 128+N (killed by signal N, the OOM killer's SIGKILL among them).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace isb::cli {

// The line (with its "isb: " and newline) for sandbox_exec's `result` of `argv`, or "" when the exit code speaks
// for itself. `command_wrote_stderr`: the command said something on stderr itself, which for 126 and 127 is a
// shell's own "not found" and needs no second word.
std::string ExplainExitCode(const nlohmann::json& result, const std::vector<std::string>& argv,
                            bool command_wrote_stderr);

}  // namespace isb::cli
