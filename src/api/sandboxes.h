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
#include "egress/publish_address.h"
#include "engine/id_mapping.h"

namespace isb::api {

// The spec of a sandbox, as sent by a caller (the JSON fields of sandbox_create).
// A host path bound into a sandbox. The tools store its real path (symlinks resolved when the sandbox is created),
// and the engine reaches it without following any symlink, so a path swapped for a symlink later makes the launch
// fail instead of binding somewhere else.
struct SpecMount {
  std::string source;  // absolute host path
  std::string target;  // absolute path inside the sandbox, not "/" and not under /proc, /sys or /dev
  bool read_only = true;
  bool operator==(const SpecMount&) const = default;
};

// A TCP port inside a sandbox published on a host address: connections to host_address:host_port reach
// 127.0.0.1:sandbox_port inside. Only loopback unless the daemon's --publish-address allows another address.
struct SpecPort {
  uint16_t sandbox_port = 0;
  uint16_t host_port = 0;
  std::string host_address = egress::kDefaultPublishAddress;  // never where a browser reaches isb
  bool operator==(const SpecPort&) const = default;
};

// Their JSON form, as the tools answer with them and the daemon stores them: {source, target, read_only} and
// {sandbox_port, host_port, host_address}. Reading is lenient (a missing field keeps its default): what is read
// here was written by isb; a caller's spec is checked field by field by the tools.
inline void to_json(nlohmann::json& j, const SpecMount& m) {
  j = {{"source", m.source}, {"target", m.target}, {"read_only", m.read_only}};
}
inline void from_json(const nlohmann::json& j, SpecMount& m) {
  m = {j.value("source", ""), j.value("target", ""), j.value("read_only", true)};
}
inline void to_json(nlohmann::json& j, const SpecPort& p) {
  j = {{"sandbox_port", p.sandbox_port}, {"host_port", p.host_port}, {"host_address", p.host_address}};
}
inline void from_json(const nlohmann::json& j, SpecPort& p) {
  p = {j.value("sandbox_port", uint16_t{0}), j.value("host_port", uint16_t{0}),
       j.value("host_address", std::string(egress::kDefaultPublishAddress))};
}

inline constexpr uint64_t kDefaultDisk = 2ull << 30;
inline constexpr uint64_t kMinDisk = 16ull << 20;
inline constexpr uint64_t kMaxDisk = 1ull << 40;

struct SandboxSpec {
  std::string name;          // optional; unique among the org's sandboxes when given (other orgs may reuse it)
  std::string image;         // a directory on the host; empty: the default view of the host
  double cpus = 2;           // CPU quota in cores
  uint64_t mem_limit = 512ull << 20;  // bytes, swap included
  // Bytes: the size of the filesystem the writable layer lives in (kMinDisk to kMaxDisk); writing beyond it is
  // ENOSPC inside. Specs stored before disk limits read as this default.
  uint64_t disk = kDefaultDisk;
  uint32_t pids = 64;
  std::map<std::string, std::string> environment;
  std::string working_dir = "/";
  std::string user = "0:0";  // UID[:GID] inside
  std::map<std::string, std::string> labels;
  std::vector<SpecMount> mounts;  // host paths bound in; remote callers only under a --bind-root
  std::vector<SpecPort> ports;    // published while the sandbox runs
  // No user namespace of its own: its root is the host's root (remote callers: --allow-privileged).
  bool privileged = false;
  // Host ids mapped in beside the sandbox's own range; empty: "auto" (and "none", its synonym). Remote callers
  // need --allow-raw for any entry. Never with `privileged`.
  std::vector<engine::IdMapping> idmap;
  // "none", "open", a list of "host[:port]", or {allow|block|judge: [...], secrets: [...]}; checked by the daemon.
  nlohmann::json egress = "none";
  std::chrono::seconds expires{24 * 3600};       // lifetime; at most 30 days
  std::chrono::seconds idle_timeout{2 * 3600};
  // The image seen through the sandbox's id mapping (engine::SandboxConfig::idmap_image): set by the create tool for
  // the host and superadmins only (never taken from the caller), and stored.
  bool image_idmapped = false;
  // Not stored: set by the API when `image` and the mounts' sources are the real paths it checked against the bind
  // roots, so that the daemon keeps them only while no symlink has come onto them rather than resolving them again.
  bool paths_checked = false;
};

struct SandboxUsage {
  uint64_t cpu_usec = 0;
  uint64_t memory_bytes = 0;
  uint32_t pids = 0;
};

struct SandboxInfo {
  std::string id;    // "sb-" + 16 hex digits
  std::string name;
  std::string state;  // "running" | "stopped"
  SandboxSpec spec;
  int64_t created_at = 0;    // unix seconds
  int64_t expires_at = 0;
  int64_t last_active_at = 0;
  SandboxUsage usage;
  // A create's result only: how the create was served and how long it took in the daemon. "pool": a sandbox
  // launched ahead, fitted to the spec; "cold": launched for the call (another image, mounts, a disk size, larger
  // limits, open egress, or an empty pool).
  std::string create_path;
  double create_ms = 0;
};

struct ExecRequest {
  std::vector<std::string> argv;  // never a shell string
  std::string stdin_data;         // at most 1 MiB
  std::map<std::string, std::string> env;
  std::string workdir;            // empty: the sandbox's working_dir
  std::chrono::milliseconds timeout{60'000};  // at most 15 minutes
  // True once the caller has gone away or cancelled the call (the command is then killed).
  std::function<bool()> cancelled;
  // A terminal (a pty inside the sandbox) instead of pipes: stderr merges into stdout, and the session can be
  // driven while it runs (ExecInput, ExecResize) by the same `caller` only.
  bool tty = false;
  uint16_t rows = 24, cols = 80;
  std::string caller;  // who started it: the org and the identity, as the tools spell them
  // With tty: called once with the session's id when the command runs, before any output.
  std::function<void(const std::string& session)> on_session;
};

// Labels isb sets on every sandbox: the org it belongs to, and who created it over which surface
// ("rest:user:alice", "mcp:token:12", "unix:superadmin").
inline constexpr char kOrgLabel[] = "isb.org";
inline constexpr char kOwnerLabel[] = "isb.owner";

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
  std::string stdout_data, stderr_data;  // each at most 256 KiB
  bool stdout_truncated = false, stderr_truncated = false;
  double duration_ms = 0;
};

// Output as it is produced: stream is 1 (stdout) or 2 (stderr).
using OutputSink = std::function<void(int stream, std::string_view data)>;

struct FileData {
  std::string content;
  uint32_t mode = 0644;
};

class Sandboxes {
 public:
  virtual ~Sandboxes() = default;
  // Errors carry Code::kInvalidArgument for a bad spec, kNotFound for an unknown id or name, kConflict for a
  // name in use or a sandbox in the wrong state, kTimeout, kUnavailable when the engine cannot build it.
  virtual Result<SandboxInfo> Create(const SandboxSpec& spec) = 0;
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
  // Acts on a running terminal session of `id_or_name` started by `caller`. Any other session id, one of another
  // sandbox or another caller, or one that has ended is kNotFound, all with the same message.
  // Input: at most kMaxTerminalInputBytes; `eof` then types the terminal's end-of-file character.
  virtual Status ExecInput(const std::string& id_or_name, const std::string& session, const std::string& caller,
                           const std::string& data, bool eof);
  // Sets the terminal's size; the command receives SIGWINCH.
  virtual Status ExecResize(const std::string& id_or_name, const std::string& session, const std::string& caller,
                            uint16_t rows, uint16_t cols);
  virtual Result<SandboxInfo> Stop(const std::string& id_or_name) = 0;
  virtual Result<SandboxInfo> Start(const std::string& id_or_name) = 0;
  virtual Result<SandboxInfo> Extend(const std::string& id_or_name, std::chrono::seconds by) = 0;
  // Replaces a sandbox's egress list while it runs; new connections follow it.
  virtual Result<SandboxInfo> SetEgress(const std::string& id_or_name, const nlohmann::json& egress) = 0;
  virtual Status Remove(const std::string& id_or_name) = 0;
  // Paths are resolved inside the sandbox's root; /proc, /sys, /dev and isb's own paths are refused.
  virtual Result<FileData> ReadFile(const std::string& id_or_name, const std::string& path) = 0;
  virtual Status WriteFile(const std::string& id_or_name, const std::string& path, const FileData& data) = 0;
};

}  // namespace isb::api
