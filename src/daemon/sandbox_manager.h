// SandboxManager: long-lived sandboxes over the engine, persisted in SQLite, adopted after a daemon restart.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/event_bus.h"
#include "api/sandboxes.h"
#include "base/mutex.h"
#include "engine/cgroup.h"
#include "engine/exec_stream.h"
#include "engine/runtime.h"
#include "engine/spawner.h"
#include "audit/history.h"
#include "daemon/disk_layer.h"
#include "daemon/egress_service.h"
#include "daemon/idle_watch.h"
#include "daemon/port_publisher.h"
#include "daemon/refill_policy.h"
#include "daemon/sandbox_logs.h"
#include "daemon/teardown_queue.h"
#include "daemon/trust_bundle.h"
#include "store/db.h"

namespace isb::daemon {

struct ManagerOptions {
  std::string state_dir;  // sandboxes live under <state_dir>/sandboxes/<id>
  std::string runtime_dir = "/run/isb";
  std::function<int64_t()> now;     // unix seconds; injectable for tests
  EgressService* egress = nullptr;  // null: only egress none; `egress_unavailable` says why
  // Resolves an egress spec's secrets and makes their placeholders; null: a spec naming secrets is refused.
  const SecretBroker* secrets = nullptr;
  std::string egress_unavailable = "the daemon runs without an egress service";
  audit::History* history = nullptr;  // the hash-chained record of lifecycle events; null: sandbox_events only
  // How many sandboxes are kept launched ahead of any create, once Adopt has run: the default view (no image), the
  // default hostname, no network and the default limits (api::SandboxSpec's). A create takes one (its id, cgroup,
  // uid range and state dir are already its own) instead of waiting for a launch when its spec asks for nothing a
  // launched sandbox cannot be given afterwards: any name, labels, environment, user, working dir, lifetimes and
  // ports, and limits at most the defaults, are applied before the create returns (engine::Refit). Another image,
  // mounts, a disk size, privileged or idmap, or larger limits launch for the call ("cold"). Pooled sandboxes are
  // not in the database: the manager's destructor removes them, and after a kill -9 the next daemon's Adopt does
  // (as orphaned cgroups). 0: no pool.
  size_t pool_size = 2;
  // As many again are kept with a network, for creates with an egress list (with `egress` only): each launched as a
  // list sandbox is, its veth attached, its rules (port 443 and the proxy's) applied, its resolver, proxy variables
  // and trust bundle in place; the create's list replaces the placeholder, and only a list of other ports applies
  // the rules again. Egress none takes a sandbox without one (loopback only, as a cold one); open is cold.
  size_t net_pool_size = 2;
  // The API socket when it is not in the state dir (--serve-socket): no sandbox may see it either.
  std::string serve_socket{};
  // Called once a sandbox's processes have been sent SIGKILL, before the wait for them to be gone (up to 10 s). For
  // tests, which hold a kill there; null: nothing.
  std::function<void(const std::string& id)> on_kill{};
  // The address isb's HTTP listener is on: a sandbox whose spec publishes a port there, or on 127.0.0.1, ::1 or an
  // unspecified address (one stored by an isb from before that rule), is not started, nor adopted
  // (egress::CheckPublishApartFromIsb).
  std::string isb_address{};
  // Where lifecycle changes are published (GET /api/v1/events); null: they are only counted (lifecycle_events.h).
  api::EventBus* events = nullptr;
};

class SandboxManager : public api::Sandboxes {
 public:
  // Speaks to its sandboxes only through `runtime`, which outlives it; `db` has the daemon's migrations applied.
  SandboxManager(ManagerOptions options, engine::Runtime* runtime, store::Db* db);
  // Over a namespaces runtime of its own (engine/namespaces_runtime.h): `spawner` must have been started before any
  // thread.
  SandboxManager(ManagerOptions options, engine::Spawner* spawner, store::Db* db, engine::CgroupLayout layout);
  // Removes the pooled sandboxes; the created ones keep running.
  ~SandboxManager() override;

  // At start-up, before any other call (it holds every sandbox's lock, but creates and the pool take none until
  // the sandbox is theirs, and it removes what the database does not know): adopts every sandbox that is still running,
  // marks the ones that died meanwhile stopped and releases what they held, finishes or undoes creates the previous
  // daemon did not complete, and removes orphaned cgroups and leases. Returns a one-line summary. Then starts filling
  // the pool (ManagerOptions::pool_size).
  Result<std::string> Adopt();

  // How many launched sandboxes wait in the pool, without and with a network. For tests.
  size_t PoolSize();
  size_t NetPoolSize();

  // One pass of the reaper: removes expired sandboxes and idle ones (no exec and under 2% of one core for their
  // idle_timeout), re-checking each before removal and recording why. Returns how many it removed.
  int ReapOnce();
  // Secret `name` of `org` changed (a new version, or deleted): the running sandboxes given it as a file get the
  // new one (sandbox_files.cc).
  void SecretChanged(const std::string& org, const std::string& name);

  Result<api::SandboxInfo> Create(const api::SandboxSpec& spec, const api::CallOrigin& origin = {}) override;
  Result<api::SandboxInfo> Get(const std::string& id_or_name) override;
  // By the (org, name) index; the org is the spec's isb.org label (api::OrgOf) when the sandbox was created.
  Result<std::string> Resolve(const std::string& org, const std::string& id_or_name) override;
  Result<std::vector<api::SandboxInfo>> List() override;
  Result<api::ExecResult> Exec(const std::string& id_or_name, const api::ExecRequest& req,
                               const api::OutputSink& sink) override;
  // On a thread of its own until the command exits or the sandbox stops (sandbox_detached.cc); a daemon that
  // stops ends its detached commands too (their sessions are its own), and their log is in its memory only.
  Result<api::DetachedExec> ExecDetached(const std::string& id_or_name, const api::ExecRequest& req) override;
  Result<api::LogRead> Logs(const std::string& id_or_name, uint64_t after, size_t limit_bytes) override;
  Status ExecInput(const std::string& id_or_name, const std::string& session, const std::string& caller,
                   const std::string& data, bool eof) override;
  Status ExecResize(const std::string& id_or_name, const std::string& session, const std::string& caller, uint16_t rows,
                    uint16_t cols) override;
  Result<api::SandboxInfo> Stop(const std::string& id_or_name, const api::CallOrigin& origin = {}) override;
  Result<api::SandboxInfo> Start(const std::string& id_or_name, const api::CallOrigin& origin = {}) override;
  Result<api::SandboxInfo> Extend(const std::string& id_or_name, std::chrono::seconds by,
                                  const api::CallOrigin& origin = {}) override;
  Result<api::SandboxInfo> SetEgress(const std::string& id_or_name, const nlohmann::json& egress) override;
  Status Remove(const std::string& id_or_name, const api::CallOrigin& origin = {}) override;
  Result<api::FileData> ReadFile(const std::string& id_or_name, const std::string& path) override;
  Status WriteFile(const std::string& id_or_name, const std::string& path, const api::FileData& data) override;

  // Calls `use` with the sandbox's writable layer (the overlay upper dir), the first host id of its range and its
  // spec, under the sandbox's lock; a stopped sandbox's layer is mounted for the call. Only for a sandbox made from
  // an image of its org (sandbox_snapshot.cc).
  using LayerUse = std::function<Status(const std::string& upper, uint32_t uid_base, const api::SandboxSpec& spec)>;
  Status WithLayer(const std::string& id_or_name, const LayerUse& use);
  // A running sandbox's network namespace (open, O_RDONLY), by its runtime; kConflict when it does not run. For
  // previews (daemon/preview_service.h).
  Result<Fd> OpenNetwork(const std::string& id);
  // The run of sandbox `id` ("" when it does not run): another after each start, so that what belongs to one run
  // (a preview) can tell it from the next. For previews.
  std::string RunOf(const std::string& id);

  // Returns once the layers and state dirs of the sandboxes removed so far are gone (a removal returns before
  // that: teardown_queue.h). For tests.
  void SettleTeardown();

  // Lifecycle events recorded so far for a sandbox: (event, reason) in order. For tests and history.
  std::vector<std::pair<std::string, std::string>> Events(const std::string& id);

 private:
  struct Record;
  Result<Record> Load(const std::string& id_or_name);
  // Launches the sandbox and records it running.
  Status Launch(Record& rec);
  // Launches the sandbox; fills in its runtime handle and id range. `background`: for the pool, at the lowest
  // priority until it is ready.
  Status LaunchProcess(Record& rec, bool background = false);
  // Kills the sandbox's processes and releases its cgroup and lease. The record's state becomes stopped; its event
  // is recorded as `origin`'s (none: the daemon's own).
  Status Halt(Record& rec, const std::string& event, const std::string& reason, const api::CallOrigin& origin = {},
              bool unmount_layer = true);
  // Kills the sandbox's processes, releases its cgroup and lease, and unmounts its layer unless told not to;
  // *oom is whether the OOM killer struck in it.
  Status Kill(Record& rec, bool* oom, bool unmount_layer = true);
  // Removal (asked for, or the reaper's), under the sandbox's lock: halts the sandbox, releases its network and
  // deletes its row; then *forgotten is its id, for TearDown once the lock is released.
  Status Retire(Record& rec, const std::string& event, const std::string& reason, const api::CallOrigin& origin,
                std::string* forgotten);
  // Queues the layer and state dir of a retired sandbox (nothing for ""): teardown_queue.h.
  void TearDown(const std::string& id);
  // A sandbox launched ahead, and the network it was launched with (net pool).
  struct Pooled;
  // Whether a create of `spec` can take a pooled sandbox (see ManagerOptions::pool_size), and from which pool.
  enum class PoolKind { kCold, kPlain, kNet };
  PoolKind PoolFor(const api::SandboxSpec& spec, const egress::EgressSpec& egress) const;
  // A launched sandbox from the pool `kind`, or nothing when it is empty.
  std::optional<Pooled> TakeReady(PoolKind kind);
  // The create of `rec` (its id not yet chosen) served by `ready`: fitted to the spec, then recorded.
  Result<api::SandboxInfo> CreateFromPool(Pooled ready, Record rec, const egress::EgressSpec& egress,
                                          const api::CallOrigin& origin);
  // A create's end: its "created" event recorded as `origin`'s, and its info with the path it took ("pool" or
  // "cold").
  Result<api::SandboxInfo> Created(const Record& rec, const char* path, const api::CallOrigin& origin);
  // Kills a sandbox that was never created (pooled, or its create failed), gives up its network and removes its
  // state dir.
  void Discard(Record& rec);
  void FillPool();
  // Launches one sandbox for the pool `kind`.
  Result<Pooled> LaunchPooled(PoolKind kind);
  bool Alive(const Record& rec) const;
  // What the runtime needs to find the sandbox of `rec` (an empty record when it has none, or another runtime's).
  engine::RuntimeHandle Handle(const Record& rec) const;
  // Opens the network namespace of the run of `rec` (its runtime's OpenNetwork of its handle as it is now): for the
  // egress service and the port publisher. It uses the runtime, which outlives the egress service (serve.cc).
  NetnsOpener NetnsOf(const Record& rec) const;
  // The spec's egress, checked; kNone needs no network.
  Result<egress::EgressSpec> Egress(const api::SandboxSpec& spec) const;
  // `e` named as egress's, once: the egress parser and service begin their messages with "egress" already.
  static Error InEgress(const Error& e);
  // The spec with its image and its mounts' sources made real paths (or, when the API checked them, kept only if
  // still free of symlinks); refuses a path that does not exist, and what KeepIsbOut refuses.
  Result<api::SandboxSpec> ResolveMounts(api::SandboxSpec spec) const;
  // Refuses (kForbidden) an image or mount source that is, is in, or holds isb's state or runtime dir, or that is
  // or holds the API socket, judged by the real paths' device and inode numbers, so no other path leads around it.
  // A source that is gone or has a symlink on it is not refused here (the engine binds nothing through it). (A
  // mount of one of isb's directories that the operator placed below a source is not looked for.)
  Status KeepIsbOut(const api::SandboxSpec& spec) const;
  // Reserves the network of a new sandbox with an egress list or open egress (nothing for none); *net, when given,
  // is what it was given.
  Status PrepareNetwork(Record& rec, const egress::EgressSpec& spec, SandboxNet* net = nullptr);
  // What a network gives the sandbox's environment: the proxy and trust-store variables, unless the spec sets them.
  static void AddNetworkEnvironment(api::SandboxSpec& spec, const SandboxNet& net);
  // Once `rec` has its id: the egress as resolved (the secrets' hosts in it) is what is stored, and the secrets'
  // placeholders join its environment.
  Status AddSecrets(Record& rec, const egress::EgressSpec& egress) const;
  // The spec's secret files name secrets of its org (sandbox_files.cc).
  Status CheckSecretFiles(const api::SandboxSpec& spec) const;
  // Writes the running sandbox's secret files (only those of secret `only` when given) on its /run/secrets tmpfs,
  // as its user; a file whose secret is gone is removed (sandbox_files.cc).
  Status WriteSecretFiles(const Record& rec, const std::string& only = "");
  // The sandbox's trust store (trust_bundle.h) with `ca_pem`, in its directory as kTrustBundleFile.
  Status WriteTrustBundle(const Record& rec, const std::string& ca_pem);
  static constexpr char kTrustBundleFile[] = "ca-bundle.pem";
  // The bundle's copy on the sandbox's mounted layer (beside upper/ and work/), which its bind is of.
  Status CopyTrustBundleToLayer(const std::string& id);
  Result<api::SandboxInfo> Info(const Record& rec);
  // The command `req` asks for, as the sandbox's user, in its environment and working dir (with none of req's
  // stdin, timeout or terminal).
  Result<engine::ExecSpec> CommandFor(const Record& rec, const api::ExecRequest& req) const;
  std::string Dir(const std::string& id) const;
  // The sandbox's writable layer: <dir>/layer.img mounted on <dir>/layer (disk_layer.h).
  DiskLayer Layer(const std::string& id) const;
  // Unmounts the layer, then removes the sandbox's state dir with its image.
  void RemoveDir(const std::string& id);
  // Records a lifecycle event: the sandbox's events, the event bus, and the history, with who asked (`origin`;
  // none: the daemon's own, actor_kind "system").
  void Event(const Record& rec, const std::string& event, const std::string& reason = "",
             const api::CallOrigin& origin = {});
  int64_t Now() const { return options_.now(); }
  // Terminal sessions: a slot is reserved (and the id chosen) before the command starts, filled in when it runs,
  // and released when the exec returns.
  // An interactive session's `idle` (null otherwise) is touched by each input and resize.
  Result<std::string> ReserveTerminal(const std::string& sandbox, const std::string& caller,
                                      std::shared_ptr<IdleWatch> idle);
  Result<std::shared_ptr<engine::ExecInput>> FindTerminal(const std::string& id_or_name, const std::string& session,
                                                          const std::string& caller);

  ManagerOptions options_;
  std::unique_ptr<engine::Runtime> owned_runtime_;  // the namespaces runtime the spawner constructor made
  engine::Runtime* runtime_;
  store::Db* db_;
  // State changes of one sandbox (stop, start, extend, egress, removal, the reaper's, a dead one's halt) hold its
  // own lock, so a slow one (a kill waits up to 10 s for the processes to go, a start launches) never holds up
  // another sandbox's; Adopt holds all of them. A create holds its new sandbox's from before its row is seen until
  // its creation is recorded; execs take none.
  class SandboxLocks {
    struct Entry {
      Mutex mu;
      int users = 0;  // holders and waiters; the entry goes with the last
    };

   public:
    // One sandbox's lock, or all of them, held until destroyed.
    class Held {
     public:
      Held() = default;
      Held(Held&& o) noexcept;
      Held& operator=(Held&&) = delete;
      ~Held();

     private:
      friend class SandboxLocks;
      SandboxLocks* owner_ = nullptr;  // set for one sandbox's lock
      std::string id_;
      std::shared_ptr<Entry> entry_;
      // Held past the call that took them, which the analysis cannot follow: std's movable locks, over the
      // annotated mutexes.
      std::shared_lock<SharedMutex> shared_;
      std::unique_lock<SharedMutex> exclusive_;
      std::unique_lock<Mutex> own_;
    };
    Held Lock(const std::string& id);
    Held LockAll();

   private:
    SharedMutex all_;
    Mutex mu_;
    std::map<std::string, std::shared_ptr<Entry>> entries_ ISB_GUARDED_BY(mu_);
  };
  SandboxLocks locks_;
  // The sandbox `id_or_name`, loaded again under its lock, which *held then keeps.
  Result<Record> LoadLocked(const std::string& id_or_name, std::optional<SandboxLocks::Held>* held);
  PortPublisher ports_;  // the running sandboxes' published ports
  // Specs as parsed from their stored text, by that text: every call loads its sandbox's row, and the same few specs
  // would be parsed again on each. Bounded by their texts' bytes (a spec may be megabytes; one above kMaxParsedSpec
  // is parsed on every load): emptied when full.
  static constexpr size_t kMaxParsedSpec = 64 << 10, kMaxParsedSpecBytes = 16 << 20;
  Mutex parsed_mu_;
  std::map<std::string, api::SandboxSpec, std::less<>> parsed_specs_ ISB_GUARDED_BY(parsed_mu_);
  size_t parsed_bytes_ ISB_GUARDED_BY(parsed_mu_) = 0;
  api::SandboxSpec ParsedSpec(const std::string& text);
  Status PortsApartFromIsb(const api::SandboxSpec& spec) const;
  // Publishes the running sandbox's ports where its runtime attaches its network.
  Status PublishPorts(const Record& rec);
  Mutex samples_mu_;
  // id -> (time, cpu_usec) for the reaper
  std::map<std::string, std::pair<int64_t, uint64_t>> cpu_samples_ ISB_GUARDED_BY(samples_mu_);
  // Execs running now, per sandbox id: a sandbox with one is not idle, however long the exec has been quiet.
  Mutex execs_mu_;
  std::map<std::string, int> execs_running_ ISB_GUARDED_BY(execs_mu_);
  struct ExecRunning;
  struct Terminal {
    std::string sandbox, caller;
    std::shared_ptr<engine::ExecInput> terminal;  // null until the command runs
    std::shared_ptr<IdleWatch> idle;              // an interactive command's
  };
  Mutex terminals_mu_;
  std::map<std::string, Terminal> terminals_ ISB_GUARDED_BY(terminals_mu_);  // by session id
  // The sandboxes' detached commands and their logs; stopped first by the destructor.
  DetachedExecs detached_;
  // Sandboxes launched ahead (ManagerOptions::pool_size), filled by pool_thread_.
  Mutex pool_mu_;
  CondVar pool_cv_;
  std::vector<Pooled> pool_ ISB_GUARDED_BY(pool_mu_), net_pool_ ISB_GUARDED_BY(pool_mu_);
  // When a create last took a pooled sandbox.
  std::chrono::steady_clock::time_point last_take_ ISB_GUARDED_BY(pool_mu_){};
  struct Busy;
  int busy_ ISB_GUARDED_BY(pool_mu_) = 0;  // creates, starts and execs running (Busy)
  std::chrono::steady_clock::time_point last_quiet_ ISB_GUARDED_BY(pool_mu_){};  // when busy_ last dropped to 0
  bool pool_stop_ ISB_GUARDED_BY(pool_mu_) = false;
  std::thread pool_thread_;
  // What is left of removed sandboxes (their layers and state dirs). Last: destroyed, and so finished, first.
  TeardownQueue teardown_;
};

}  // namespace isb::daemon
