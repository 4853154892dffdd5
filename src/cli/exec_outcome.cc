// ExplainExitCode: the conventions of sh and the kernel that an exit code alone leaves the user to know.
#include "cli/exec_outcome.h"

#include <csignal>
#include <cstring>

namespace isb::cli {

std::string ExplainExitCode(const nlohmann::json& result, const std::vector<std::string>& argv,
                            bool command_wrote_stderr) {
  if (!result.is_object() || result.value("timed_out", false)) return "";  // a timeout is said on its own
  const int code = result.value("exit_code", 0);
  const int signal = result.value("signal", 0);
  const std::string program = argv.empty() ? "the command" : "'" + argv[0] + "'";
  if (result.value("oom_killed", false)) {
    return "isb: exit code " + std::to_string(code) +
           ": the OOM killer killed the command: the sandbox reached its "
           "memory limit (isb inspect shows its memory; isb create --memory gives more)\n";
  }
  // A daemon that says whether the OOM killer struck has said it did not: a SIGKILL is then only a SIGKILL.
  const bool oom_unknown = !result.contains("oom_killed");
  if (oom_unknown && (signal == SIGKILL || (signal == 0 && code == 128 + SIGKILL))) {
    return "isb: exit code 137: the command was killed by SIGKILL, as the OOM killer does when the sandbox reaches "
           "its memory limit (isb inspect shows its memory; isb create --memory gives more)\n";
  }
  if (signal > 0) {
    const char* name = sigabbrev_np(signal);
    return "isb: exit code " + std::to_string(code) + ": the command was killed by SIG" +
           (name != nullptr ? name : std::to_string(signal)) + "\n";
  }
  if (command_wrote_stderr) return "";
  if (code == 127) {
    return "isb: exit code 127: " + program +
           " was not found in the sandbox (not installed, or not on its PATH; "
           "give its full path)\n";
  }
  if (code == 126) {
    return "isb: exit code 126: " + program +
           " was found but could not be run (not executable, a directory, or "
           "a script whose interpreter is missing)\n";
  }
  return "";
}

}  // namespace isb::cli
