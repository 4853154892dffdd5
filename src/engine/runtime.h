// The runtime interface: what the daemon asks of whatever runs its sandboxes (start, adopt, kill, exec, files
// inside, network attachment, usage). One base class; each backend is a file of its own (namespaces_runtime.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "engine/cgroup.h"
#include "engine/config.h"
#include "engine/exec_client.h"
#include "engine/exec_stream.h"

namespace isb::engine {

// What a runtime needs to find one of its sandboxes again, as the daemon stores it: the sandbox's id and a record
// that only the runtime that wrote it reads (empty: nothing of it runs). Each start writes a record of its own, so
// two runs of one sandbox never share one.
struct RuntimeHandle {
  std::string id;
  std::string record;
};

// What the host shows of a running sandbox as processes, for the columns operators and older isb versions read
// (sandboxes.pid, start_time, lease_index); the daemon itself finds a sandbox only through its handle.
struct HostProcess {
  pid_t pid = 0;
  uint64_t start_time = 0;
  int64_t lease_index = -1;
};

struct StartRequest {
  std::string id;        // the sandbox's id: its cgroup's name, its state dir's
  SandboxConfig config;  // what it is made of (view, limits, binds, user namespace)
  // For a sandbox launched ahead (the pool): set up at the lowest priority, so it never slows what is served
  // meanwhile; it gets the caller's priority once ready.
  bool background = false;
};

struct StartedSandbox {
  RuntimeHandle handle;
  uint32_t uid_base = 0;  // the first host id of its range; 0 when its ids are the host's (privileged)
};

// What a sandbox launched ahead is given afterwards, as a cold start would have given it from its spec.
struct Refit {
  std::string hostname;        // with /etc/hostname and /etc/hosts; empty: kept
  uint64_t scratch_bytes = 0;  // the size of its /tmp and /dev/shm; 0: kept
  bool set_limits = false;     // whether `limits` replace the ones it started with
  Limits limits;
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  // Stored beside each handle: a row whose runtime is another's is never handed to this one.
  virtual std::string_view Name() const = 0;

  // Starts a sandbox and waits for its setup. *out holds its handle as soon as something runs, even when the start
  // then fails: the caller kills it with that handle.
  virtual Status Start(const StartRequest& request, StartedSandbox* out) = 0;
  // Whether the sandbox of `handle` runs: the same one, not a process that took its pid since.
  virtual bool Running(const RuntimeHandle& handle) const = 0;
  // Takes over a sandbox an earlier daemon started: true when it still runs and is now this daemon's.
  virtual bool Adopt(const RuntimeHandle& handle) { return Running(handle); }
  // Kills everything of the sandbox, waits (up to 10 s) for it to be gone, and releases what it held (its cgroup,
  // its id range); `on_killed`, when set, is called once the kill is sent. *oom: whether the OOM killer struck in
  // it. An empty record still releases what the runtime holds under handle.id.
  virtual Status Kill(const RuntimeHandle& handle, const std::function<void()>& on_killed, bool* oom) = 0;
  // Releases what the runtime holds for sandbox `id`, whose handle is lost or was never stored (a create the
  // previous daemon did not finish, a stopped sandbox that must not live on, an orphan).
  virtual Status Release(const std::string& id) = 0;
  // The sandboxes (by id) for which the runtime holds something, whether the daemon knows them or not.
  virtual std::vector<std::string> Held() const = 0;
  // Frees what no running sandbox holds any more (ranges whose holder is gone).
  virtual void Sweep() = 0;

  // Runs one command; output reaches `sink` as it comes, the outcome is its exit. With spec.tty, `on_input` gets
  // the terminal's input end once it runs (spec.on_terminal is the runtime's own and is ignored).
  // Code::kNotFound: the sandbox is not running.
  virtual Result<ExecOutcome> Exec(const RuntimeHandle& handle, const ExecSpec& spec, const ExecSink& sink,
                                   const ExecInputReady& on_input) = 0;
  // A terminal session: Exec with a terminal of `rows` x `cols`.
  Result<ExecOutcome> Terminal(const RuntimeHandle& handle, ExecSpec spec, const ExecSink& sink,
                               const ExecInputReady& on_input) {
    spec.tty = true;
    return Exec(handle, spec, sink, on_input);
  }
  // The sandbox's root directory (O_PATH), through which the daemon opens files inside it, resolved within it
  // (openat2 RESOLVE_IN_ROOT) as its user. Code::kConflict "the sandbox is not running" when it does not run.
  virtual Result<Fd> OpenRoot(const RuntimeHandle& handle) = 0;
  // The sandbox's network namespace (O_RDONLY), where its network is attached: the egress service puts its veth
  // there, published ports and previews make their sockets there. Only while the sandbox runs, the namespace is its
  // own: Code::kConflict "the sandbox is not running" when it does not. A fresh descriptor each call, which the
  // caller closes once done (it holds the namespace while open). Called from any thread, several at once (the
  // egress watch, the pool, requests, previews): an implementation keeps it safe so.
  virtual Result<Fd> OpenNetwork(const RuntimeHandle& handle) = 0;
  virtual Result<CgroupStats> Usage(const RuntimeHandle& handle) = 0;
  // Fits a sandbox launched ahead that has run nothing yet to the create that takes it.
  virtual Status Fit(const RuntimeHandle& handle, const Refit& fit) = 0;
  virtual HostProcess Process(const RuntimeHandle& handle) const = 0;
};

}  // namespace isb::engine
