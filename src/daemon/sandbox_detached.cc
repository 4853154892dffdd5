// Detached commands (sandbox_exec with detach) and the sandbox's log they write: the manager's side, over
// DetachedExecs (sandbox_logs.h).
#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "daemon/sandbox_manager.h"
#include "daemon/sandbox_record.h"

namespace isb::daemon {

namespace {

// A detached command without a timeout of its own is bounded by its sandbox's life (at most 30 days): this is
// only a deadline beyond any sandbox's.
constexpr std::chrono::milliseconds kDetachedDeadline = std::chrono::hours(24 * 31);

// How a command the runtime ran or could not run ended, as its log records it; a note for stderr in *note.
DetachedEnd EndOf(const Result<engine::ExecOutcome>& out, std::string* note) {
  DetachedEnd end;
  if (!out.ok()) {
    end.error = out.error().code == Code::kNotFound ? "the sandbox is not running" : out.error().message;
    return end;
  }
  if (!out->exec_error.empty()) {
    *note = "isb: " + out->exec_error + "\n";
    // Not found and not executable have their statuses, as an exec's; a step that failed before has none.
    if (out->exit_code == 126 || out->exit_code == 127)
      end.exit_code = out->exit_code;
    else
      end.error = out->exec_error;
    return end;
  }
  end.exit_code = out->exit_code;
  end.signal = out->signal;
  end.timed_out = out->timed_out;
  return end;
}

}  // namespace

Result<api::DetachedExec> SandboxManager::ExecDetached(const std::string& id_or_name, const api::ExecRequest& req) {
  ISB_TRY(spec::Validate(req));
  if (req.tty) return Invalid("tty: not with detach (a detached command has no terminal)");
  if (!req.stdin_data.empty()) return Invalid("stdin: not with detach (a detached command's stdin is /dev/null)");
  // Held until the command has its log: a removal (which forgets the log) waits, rather than leave an entry behind.
  std::optional<SandboxLocks::Held> held;
  ISB_ASSIGN_OR_RETURN(Record rec, LoadLocked(id_or_name, &held));
  if (rec.state != "running") return Error::Of(Code::kConflict, "sandbox '" + rec.id + "' is stopped; start it first");
  ISB_ASSIGN_OR_RETURN(engine::ExecSpec spec, CommandFor(rec, req));
  spec.timeout = req.timeout.count() > 0 ? req.timeout : kDetachedDeadline;
  spec.output_limit = 0;  // all of it goes to the log, none is kept for an outcome nobody waits for
  spec.sink_all = true;
  spec.cancelled = [this] { return detached_.Stopping(); };
  engine::Runtime* runtime = runtime_;
  return detached_.Start(rec.id, [runtime, handle = Handle(rec), spec = std::move(spec)](const auto& output) {
    auto out = runtime->Exec(handle, spec, [&output](int stream, std::string_view data) { output(stream, data); }, {});
    std::string note;
    DetachedEnd end = EndOf(out, &note);
    if (!note.empty()) output(2, note);
    return end;
  });
}

Result<api::LogRead> SandboxManager::Logs(const std::string& id_or_name, uint64_t after, size_t limit_bytes) {
  ISB_ASSIGN_OR_RETURN(Record rec, Load(id_or_name));
  return detached_.Read(rec.id, after, limit_bytes);
}

}  // namespace isb::daemon
