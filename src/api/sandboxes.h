// The sandbox operations the tools expose, as an interface: the daemon implements it over the engine, tests fake it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "spec/exec_request.h"
#include "spec/sandbox_spec.h"
#include "spec/spec_json.h"

namespace isb::api {

// The sandbox spec and the exec request have one home, spec/; the interface names them here.
using spec::ExecRequest;
using spec::kOrgLabel;
using spec::kOwnerLabel;
using spec::SandboxSpec;
using spec::SpecMount;
using spec::SpecPort;

struct SandboxUsage {
  uint64_t cpu_usec = 0;
  uint64_t memory_bytes = 0;
  uint32_t pids = 0;
};

// What the proxy did with one of a sandbox's secrets (egress.secrets) since the daemon started.
struct SecretUse {
  uint64_t swapped = 0;   // requests (and WebSocket messages) with its placeholder swapped for the value
  uint64_t scrubbed = 0;  // responses with the value turned back into the placeholder
  uint64_t held = 0;      // requests where the placeholder was held back from a host it may not go to
};

struct SandboxInfo {
  std::string id;  // "sb-" + 16 hex digits
  std::string name;
  std::string state;  // "running" | "stopped"
  SandboxSpec spec;
  int64_t created_at = 0;  // unix seconds
  int64_t expires_at = 0;
  int64_t last_active_at = 0;
  SandboxUsage usage;
  std::map<std::string, SecretUse> secrets;  // by secret name; only names, never a value
  // A create's result only: how the create was served and how long it took in the daemon. "pool": a sandbox
  // launched ahead, fitted to the spec; "cold": launched for the call (another image, mounts, a disk size, larger
  // limits, open egress, or an empty pool).
  std::string create_path;
  double create_ms = 0;
};

// The org a sandbox belongs to: its isb.org label; sandboxes from before orgs belong to "default".
std::string OrgOf(const SandboxSpec& spec);
inline std::string OrgOf(const SandboxInfo& info) { return OrgOf(info.spec); }

// Terminal sessions: at most this many live at once per sandbox, and this much input per call.
inline constexpr size_t kMaxTerminalSessions = 8;
inline constexpr size_t kMaxTerminalInputBytes = 64 << 10;

// The one answer for a session id that is unknown, ended, another sandbox's or another caller's (kNotFound).
Error NoTerminalSession(const std::string& session, const std::string& sandbox);

struct ExecResult {
  int exit_code = 0;
  int signal = 0;
  bool timed_out = false;
  bool oom_killed = false;  // the OOM killer struck in the sandbox while the command ran, and it died of SIGKILL
  std::string stdout_data, stderr_data;  // each at most 256 KiB
  bool stdout_truncated = false, stderr_truncated = false;
  double duration_ms = 0;
};

// Output as it is produced: stream is 1 (stdout) or 2 (stderr).
using OutputSink = std::function<void(int stream, std::string_view data)>;

// The output of a sandbox's detached commands (sandbox_exec with detach), kept in a bounded ring per sandbox and
// read with sandbox_logs. A cursor is a position in everything the ring was ever given: each output byte takes one,
// each exit one more.
inline constexpr size_t kMaxDetachedExecs = 16;      // running at once per sandbox
inline constexpr size_t kLogRingBytes = 1 << 20;     // kept per sandbox; the oldest go first
inline constexpr size_t kMaxLogReadBytes = 1 << 20;  // of output per sandbox_logs answer

struct LogChunk {
  uint64_t cursor = 0;  // the position of its first byte
  int log_id = 0;       // which detached command (DetachedExec::log_id)
  enum class Kind { kStdout, kStderr, kExit } kind = Kind::kStdout;
  std::string data{};  // output; empty for an exit
  // An exit: the command's status (128+N when killed by signal N), or -1 with `error` when it ended without one
  // of its own (it could not start, or the sandbox stopped under it).
  int exit_code = 0;
  int signal = 0;
  std::string error{};
  bool timed_out = false;  // an exit: the command was killed at its timeout (exit_code 124, signal 9)
};

struct LogRead {
  std::vector<LogChunk> chunks{};
  uint64_t next = 0;     // the cursor to read after next
  uint64_t dropped = 0;  // positions between the cursor asked for and the oldest kept: lost to the ring's bound
  uint64_t start = 0;    // the oldest position kept
  uint64_t end = 0;      // the next position written
  size_t running = 0;    // detached commands still running
};

struct DetachedExec {
  int log_id = 0;  // 1, 2, ... per sandbox: its output's and exit's tag in sandbox_logs
};

struct FileData {
  std::string content;
  uint32_t mode = 0644;
};

// Who asked for a lifecycle change, as the sandbox history records it: a tool call's caller, handed down by the
// org's view (OrgSandboxes). Empty (actor_kind ""): the daemon's own work, such as the reaper's, an OOM's or an
// adoption's, recorded with actor_kind "system".
struct CallOrigin {
  std::string actor{};       // Identity::Subject(): "user:ann", "token:7", "superadmin"
  std::string actor_kind{};  // identity::PrincipalKindName: "user", "token", "session", "superadmin"
  std::string request_id{};
};

class Sandboxes {
 public:
  virtual ~Sandboxes() = default;
  // Errors carry Code::kInvalidArgument for a bad spec, kNotFound for an unknown id or name, kConflict for a
  // name in use or a sandbox in the wrong state, kTimeout, kUnavailable when the engine cannot build it.
  // The calls that change a sandbox's lifecycle (Create, Stop, Start, Extend, Remove) take `origin`, who asked, for
  // the history's events they record; every implementation gives it the same default (none: the daemon's own).
  virtual Result<SandboxInfo> Create(const SandboxSpec& spec, const CallOrigin& origin = {}) = 0;
  // `id_or_name`: a sandbox id or its name. Names are unique per org (OrgOf), so a bare name is a reference only
  // while one org uses it; a name used in several orgs is kConflict here, and callers acting for an org resolve
  // it with Resolve.
  virtual Result<SandboxInfo> Get(const std::string& id_or_name) = 0;
  // The id of the sandbox `id_or_name` names among `org`'s: its id, or its name within that org. Anything else
  // (unknown, or another org's) is kNotFound "no sandbox 'REF'". The default reads List().
  virtual Result<std::string> Resolve(const std::string& org, const std::string& id_or_name);
  virtual Result<std::vector<SandboxInfo>> List() = 0;
  // With `sink`, output is also delivered as it is produced.
  virtual Result<ExecResult> Exec(const std::string& id_or_name, const ExecRequest& req, const OutputSink& sink) = 0;
  // Starts `req` (no tty, no stdin: its stdin is /dev/null) and returns while it runs, until it exits or the sandbox
  // stops; its output and exit go to the sandbox's log (Logs). kConflict when kMaxDetachedExecs already run there.
  // The default: kUnavailable.
  virtual Result<DetachedExec> ExecDetached(const std::string& id_or_name, const ExecRequest& req);
  // The sandbox's log after cursor `after`: chunks with at most `limit_bytes` of output (at least one chunk when
  // any is there). An `after` beyond the log's end is kInvalidArgument. The default: an empty log.
  virtual Result<LogRead> Logs(const std::string& id_or_name, uint64_t after, size_t limit_bytes);
  // Acts on a running terminal session of `id_or_name` started by `caller`. Any other session id, one of another
  // sandbox or another caller, or one that has ended is kNotFound, all with the same message.
  // Input: at most kMaxTerminalInputBytes; `eof` then types the terminal's end-of-file character.
  virtual Status ExecInput(const std::string& id_or_name, const std::string& session, const std::string& caller,
                           const std::string& data, bool eof);
  // Sets the terminal's size; the command receives SIGWINCH.
  virtual Status ExecResize(const std::string& id_or_name, const std::string& session, const std::string& caller,
                            uint16_t rows, uint16_t cols);
  virtual Result<SandboxInfo> Stop(const std::string& id_or_name, const CallOrigin& origin = {}) = 0;
  virtual Result<SandboxInfo> Start(const std::string& id_or_name, const CallOrigin& origin = {}) = 0;
  virtual Result<SandboxInfo> Extend(const std::string& id_or_name, std::chrono::seconds by,
                                     const CallOrigin& origin = {}) = 0;
  // Replaces a sandbox's egress list while it runs; new connections follow it.
  virtual Result<SandboxInfo> SetEgress(const std::string& id_or_name, const nlohmann::json& egress) = 0;
  virtual Status Remove(const std::string& id_or_name, const CallOrigin& origin = {}) = 0;
  // Paths are resolved inside the sandbox's root; /proc, /sys, /dev and isb's own paths are refused.
  virtual Result<FileData> ReadFile(const std::string& id_or_name, const std::string& path) = 0;
  virtual Status WriteFile(const std::string& id_or_name, const std::string& path, const FileData& data) = 0;
};

}  // namespace isb::api
