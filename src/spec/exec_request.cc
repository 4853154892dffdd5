// The exec request's one validator.
#include "spec/exec_request.h"

#include "spec/sandbox_spec.h"
#include "spec/spec_json.h"

namespace isb::spec {
namespace {

Error Invalid(const std::string& msg) { return Error::Of(Code::kInvalidArgument, msg); }

bool HasNul(const std::string& s) { return s.find('\0') != std::string::npos; }

}  // namespace

Status Validate(const ExecRequest& req) {
  if (req.argv.empty() || req.argv[0].empty()) return Invalid("argv[0]: must name a command");
  for (size_t i = 0; i < req.argv.size(); ++i)
    if (HasNul(req.argv[i])) return Invalid("argv[" + std::to_string(i) + "]: must not contain a NUL character");
  if (req.stdin_data.size() > kMaxStdinBytes)
    return Invalid("stdin: at most " + std::to_string(kMaxStdinBytes) + " bytes, got " +
                   std::to_string(req.stdin_data.size()));
  for (const auto& [k, v] : req.env) {
    ISB_TRY(ValidateVariableName("env", k));
    if (HasNul(v)) return Invalid("env." + k + ": must not contain a NUL character");
  }
  if (!req.workdir.empty()) {
    ISB_ASSIGN_OR_RETURN(std::string normal, NormalizeInsidePath("workdir", req.workdir));
    if (normal != req.workdir) return Invalid("workdir: must be in its normal form, '" + normal + "'");
  }
  if (req.idle_timeout.count() != 0) {
    if (!req.tty) return Invalid("idle_timeout: only with \"tty\": true (an interactive command is on a terminal)");
    if (req.idle_timeout.count() < 0) return Invalid("idle_timeout: must be at least 1ms");
    if (req.timeout < req.idle_timeout || req.timeout > std::chrono::seconds(kMaxInteractiveTimeoutS))
      return Invalid("timeout: an interactive command's must be between its idle_timeout and 24 hours");
  } else if (req.detach && req.timeout.count() == 0) {
    // none: the command runs until it exits or its sandbox stops
  } else if (req.timeout.count() < 1 || req.timeout > std::chrono::seconds(kMaxExecTimeoutS)) {
    return Invalid("timeout: must be between 1ms and 15 minutes");
  }
  if (req.tty) ISB_TRY(ValidateTerminalSize(req.rows, req.cols));
  return {};
}

Status ValidateTerminalSize(uint16_t rows, uint16_t cols) {
  if (rows == 0 || cols == 0 || rows > kMaxTerminalSide || cols > kMaxTerminalSide)
    return Invalid("rows, cols: a terminal has 1 to 1000 of each");
  return {};
}

}  // namespace isb::spec
