// Sandboxes as long-lived objects: create, exec, stop/start, removal. Files inside (sandbox_files.cc), host paths
// (host_paths.cc), the pools (sandbox_pool.cc), adoption and the reaper (sandbox_adoption.cc), networks
// (sandbox_network.cc) and terminals (sandbox_terminals.cc) have files of their own.
#include "daemon/sandbox_manager.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <utility>
#include <nlohmann/json.hpp>

#include "base/fd.h"
#include "base/file.h"
#include "base/random.h"
#include "base/units.h"
#include "engine/cgroup.h"
#include "engine/contain.h"
#include "engine/exec_client.h"
#include "engine/launch.h"
#include "engine/namespaces.h"
#include "engine/namespaces_runtime.h"
#include "daemon/lifecycle_events.h"
#include "daemon/sandbox_record.h"

namespace isb::daemon {

using nlohmann::json;
using store::AsInt;
using store::AsText;

namespace {

constexpr uint64_t kExecOutputLimit = 256 * 1024;

}  // namespace

// What a spec asks of this host, beyond spec::Validate's rules: an image directory that exists, and processes
// within the host's bound.
Status CheckOnHost(const api::SandboxSpec& s) {
  std::error_code ec;
  if (spec::IsImageReference(s.image)) {
    // The org's image, its layers found by the API in the image store.
    if (s.image_layers.empty()) return Invalid("image: '" + s.image + "' names no layers");
    for (const std::string& layer : s.image_layers) {
      if (!std::filesystem::is_directory(layer, ec))
        return Error::Of(Code::kConflict,
                         "image '" + s.image + "': a layer of it is gone from the image store: pull it again");
    }
  } else if (!s.image.empty() && !std::filesystem::is_directory(s.image, ec)) {
    return Invalid("image: '" + s.image + "' is not a directory");
  }
  if (const engine::PidsBound& host = engine::HostPidsBound(); s.pids < spec::kMinPids || s.pids > host.sandboxes())
    return Invalid("pids: must be between 2 and " + host.Describe());
  return {};
}

SandboxManager::SandboxManager(ManagerOptions options, engine::Runtime* runtime, store::Db* db)
    : options_(std::move(options)), runtime_(runtime), db_(db) {
  if (!options_.now) options_.now = [] { return static_cast<int64_t>(::time(nullptr)); };
}

SandboxManager::SandboxManager(ManagerOptions options, engine::Spawner* spawner, store::Db* db,
                               engine::CgroupLayout layout)
    : SandboxManager(std::move(options), nullptr, db) {
  owned_runtime_ = std::make_unique<engine::NamespacesRuntime>(spawner, std::move(layout), options_.runtime_dir,
                                                               options_.state_dir + "/sandboxes");
  runtime_ = owned_runtime_.get();
}

SandboxManager::~SandboxManager() {
  detached_.StopAll();  // their threads use the runtime and the records
  {
    MutexLock lock(pool_mu_);
    pool_stop_ = true;
  }
  pool_cv_.NotifyAll();
  if (pool_thread_.joinable()) pool_thread_.join();
  for (std::vector<Pooled>* pool : {&pool_, &net_pool_})
    for (Pooled& p : *pool) Discard(p.rec);
}

std::string SandboxManager::Dir(const std::string& id) const { return options_.state_dir + "/sandboxes/" + id; }

DiskLayer SandboxManager::Layer(const std::string& id) const {
  return DiskLayer(Dir(id) + "/layer.img", Dir(id) + "/layer", options_.state_dir + "/layer-templates");
}

void SandboxManager::RemoveDir(const std::string& id) {
  if (id.empty()) return;  // Dir("") is the directory of every sandbox
  // Unmounted first: removing the files of a mounted layer would empty the image and leave it mounted.
  if (Status st = Layer(id).Remove(); !st.ok())
    std::fprintf(stderr, "isb: sandbox %s: its disk layer: %s\n", id.c_str(), st.error().message.c_str());
  std::error_code ec;
  std::filesystem::remove_all(Dir(id), ec);
}

void SandboxManager::Event(const Record& rec, const std::string& event, const std::string& reason,
                           const api::CallOrigin& origin) {
  const std::string& id = rec.id;
  (void)db_->Exec("INSERT INTO sandbox_events(time, sandbox, event, reason) VALUES(?1, ?2, ?3, ?4)",
                  {Now(), id, event, reason});
  PublishLifecycle(options_.events, event, api::OrgOf(rec.spec), id, rec.name, rec.state, !rec.spec.ports.empty());
  if (options_.history == nullptr) return;
  // The history's events: a sandbox that died, was halted by a failed create or reaped is "stopped" or "reaped" there,
  // with the cause as its reason; changes that are not lifecycle events (egress) belong to the audit log.
  std::string kind = event, why = reason;
  if (event == "died" || event == "failed") {
    kind = "stopped";
    why = event;
  }
  if (event == "egress_changed") return;
  audit::HistoryEntry e;
  e.sandbox = id;
  e.org = api::OrgOf(rec.spec);  // its isb.org label
  e.event = kind;
  // A tool call's: who asked (the reaper's, an OOM's, an adoption's come with none: the daemon's own).
  e.actor = origin.actor;
  e.actor_kind = origin.actor_kind.empty() ? "system" : origin.actor_kind;
  e.request_id = origin.request_id;
  e.reason = why.substr(0, 120);
  if (auto r = options_.history->Record(e); !r.ok())
    std::fprintf(stderr, "isb: history: %s %s not recorded: %s\n", id.c_str(), kind.c_str(), r.error().message.c_str());
}

std::vector<std::pair<std::string, std::string>> SandboxManager::Events(const std::string& id) {
  std::vector<std::pair<std::string, std::string>> out;
  auto rows = db_->Query("SELECT event, reason FROM sandbox_events WHERE sandbox = ?1 ORDER BY id", {id});
  if (rows.ok())
    for (const auto& r : *rows) out.emplace_back(AsText(r[0]), AsText(r[1]));
  return out;
}

Result<std::string> SandboxManager::Resolve(const std::string& org, const std::string& id_or_name) {
  ISB_ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT id FROM sandboxes WHERE org = ?1 AND (id = ?2 OR "
                                             "(name = ?2 AND name != '')) AND state != 'creating'",
                                             {org, id_or_name}));
  if (rows.empty()) return Error::Of(Code::kNotFound, "no sandbox '" + id_or_name + "'");
  return AsText(rows[0][0]);
}

SandboxManager::SandboxLocks::Held::Held(Held&& o) noexcept
    : owner_(std::exchange(o.owner_, nullptr)),
      id_(std::move(o.id_)),
      entry_(std::move(o.entry_)),
      shared_(std::move(o.shared_)),
      exclusive_(std::move(o.exclusive_)),
      own_(std::move(o.own_)) {}

SandboxManager::SandboxLocks::Held::~Held() {
  if (own_.owns_lock()) own_.unlock();
  if (owner_ != nullptr && entry_ != nullptr) {
    MutexLock lock(owner_->mu_);
    if (--entry_->users == 0) owner_->entries_.erase(id_);
  }
}

SandboxManager::SandboxLocks::Held SandboxManager::SandboxLocks::Lock(const std::string& id) {
  Held held;
  held.shared_ = std::shared_lock(all_);
  {
    MutexLock lock(mu_);
    std::shared_ptr<Entry>& entry = entries_[id];
    if (entry == nullptr) entry = std::make_shared<Entry>();
    ++entry->users;
    held.entry_ = entry;
  }
  held.owner_ = this;
  held.id_ = id;
  held.own_ = std::unique_lock(held.entry_->mu);
  return held;
}

SandboxManager::SandboxLocks::Held SandboxManager::SandboxLocks::LockAll() {
  Held held;
  held.exclusive_ = std::unique_lock(all_);
  return held;
}

Result<SandboxManager::Record> SandboxManager::LoadLocked(const std::string& id_or_name,
                                                          std::optional<SandboxLocks::Held>* held) {
  ISB_ASSIGN_OR_RETURN(Record found, Load(id_or_name));
  held->emplace(locks_.Lock(found.id));
  // What it was before the lock may have changed meanwhile (stopped, started, removed).
  return Load(found.id);
}

Result<SandboxManager::Record> SandboxManager::Load(const std::string& id_or_name) {
  auto rows = db_->Query(std::string("SELECT id, name, spec, state, ") + kRuntimeHandleColumns +
                             ", uid_base, created_at, expires_at, last_active_at "
                             "FROM sandboxes WHERE (id = ?1 OR (name = ?1 AND name != '')) AND state != 'creating'",
                         {id_or_name});
  if (!rows.ok()) return rows.error();
  if (rows->empty()) return Error::Of(Code::kNotFound, "no sandbox '" + id_or_name + "'");
  if (rows->size() > 1) {
    return Error::Of(Code::kConflict, "name: '" + id_or_name + "' is used in more than one org; use the sandbox's id");
  }
  const auto& r = (*rows)[0];
  Record rec;
  rec.id = AsText(r[0]);
  rec.name = AsText(r[1]);
  rec.spec = ParsedSpec(AsText(r[2]));
  rec.state = AsText(r[3]);
  rec.runtime = AsText(r[4]);
  rec.runtime_record = AsText(r[5]);
  rec.uid_base = static_cast<uint32_t>(AsInt(r[6]));
  rec.created_at = AsInt(r[7]);
  rec.expires_at = AsInt(r[8]);
  rec.last_active_at = AsInt(r[9]);
  return rec;
}

api::SandboxSpec SandboxManager::ParsedSpec(const std::string& text) {
  {
    MutexLock lock(parsed_mu_);
    if (auto it = parsed_specs_.find(text); it != parsed_specs_.end()) return it->second;
  }
  api::SandboxSpec spec = spec::FromStoredJson(text);
  if (text.size() > kMaxParsedSpec) return spec;
  MutexLock lock(parsed_mu_);
  if (parsed_bytes_ + text.size() > kMaxParsedSpecBytes) {
    parsed_specs_.clear();
    parsed_bytes_ = 0;
  }
  if (parsed_specs_.emplace(text, spec).second) parsed_bytes_ += text.size();
  return spec;
}

engine::RuntimeHandle SandboxManager::Handle(const Record& rec) const {
  // Another runtime's record means nothing to this one: its sandbox is not found (and so not running) here.
  return {rec.id, rec.runtime == runtime_->Name() ? rec.runtime_record : std::string()};
}

NetnsOpener SandboxManager::NetnsOf(const Record& rec) const {
  return [runtime = runtime_, handle = Handle(rec)] { return runtime->OpenNetwork(handle); };
}

bool SandboxManager::Alive(const Record& rec) const {
  const engine::RuntimeHandle handle = Handle(rec);
  return rec.state == "running" && !handle.record.empty() && runtime_->Running(handle);
}

Status SandboxManager::PublishPorts(const Record& rec) { return ports_.Publish(rec.id, NetnsOf(rec), rec.spec.ports); }

Status SandboxManager::PortsApartFromIsb(const api::SandboxSpec& spec) const {
  for (size_t i = 0; i < spec.ports.size(); ++i) {
    if (Status apart = egress::CheckPublishApartFromIsb(spec.ports[i].host_address, options_.isb_address); !apart.ok())
      return Error::Of(apart.error().code, "ports[" + std::to_string(i) + "]: " + apart.error().message);
  }
  return {};
}

Status SandboxManager::Launch(Record& rec) {
  ISB_TRY(PortsApartFromIsb(rec.spec));
  ISB_TRY(LaunchProcess(rec));
  Status ready = PublishPorts(rec);
  if (ready.ok()) ready = WriteSecretFiles(rec);
  if (!ready.ok()) {
    bool oom = false;
    (void)Kill(rec, &oom);
    return ready;
  }
  rec.state = "running";
  const engine::HostProcess shown = runtime_->Process(Handle(rec));
  return db_->Exec(
      "UPDATE sandboxes SET state='running', runtime=?2, handle=?3, uid_base=?4, pid=?5, start_time=?6, "
      "lease_index=?7 WHERE id=?1",
      {rec.id, rec.runtime, rec.runtime_record, static_cast<int64_t>(rec.uid_base), static_cast<int64_t>(shown.pid),
       static_cast<int64_t>(shown.start_time), shown.lease_index});
}

Status SandboxManager::LaunchProcess(Record& rec, bool background) {
  auto ids = spec::ParseUser(rec.spec.user);
  engine::SandboxConfig c;
  c.hostname = rec.name.empty() ? "sandbox" : rec.name;
  if (spec::IsImageReference(rec.spec.image)) {
    c.image_layers = rec.spec.image_layers;
  } else {
    c.image = rec.spec.image;
  }
  c.idmap_image = rec.spec.image_idmapped;
  c.limits.memory_bytes = rec.spec.mem_limit;
  c.limits.millicpus = static_cast<uint32_t>(rec.spec.cpus * 1000 + 0.5);
  c.limits.pids = rec.spec.pids;
  c.writable_dir = Dir(rec.id) + "/layer";
  c.privileged = rec.spec.privileged;
  c.idmap = rec.spec.idmap;
  c.secrets_tmpfs = !rec.spec.secrets.empty();
  for (const api::SpecMount& m : rec.spec.mounts) c.binds.push_back({m.source, m.target, m.read_only});
  if (auto resolv = isb::ReadFile(Dir(rec.id) + "/resolv.conf"); resolv.ok()) c.resolv_conf = *resolv;
  DiskLayer layer = Layer(rec.id);
  std::error_code ec;
  const bool bundled = std::filesystem::exists(Dir(rec.id) + "/" + kTrustBundleFile, ec);
  if (bundled) {
    // The engine follows no symlink in a bind's source: the state dir's real path. The bind is of the copy on the
    // layer's own file system, whose mountinfo line then names no host path ("/ca-bundle.pem"); a layer from before
    // disk images is a directory of the state dir's, and its sandbox binds the bundle beside it.
    auto real = std::filesystem::canonical(Dir(rec.id), ec);
    if (ec) return Error::Of(Code::kInternal, "the sandbox's trust bundle: " + ec.message());
    c.binds.push_back(
        {real.string() + (layer.Legacy() ? "/" : "/layer/") + kTrustBundleFile, kSandboxTrustBundle, true});
  }
  // Searchable (not readable) by the sandbox's root, an unprivileged host uid, which mounts its layer from here
  // while it is being built; the control socket inside stays 0600 root's.
  ISB_TRY(MakeDirs(Dir(rec.id), 0711));
  for (const std::string& d : {options_.state_dir, options_.state_dir + "/sandboxes", Dir(rec.id)})
    if (::chmod(d.c_str(), 0711) != 0) return Error::Sys("chmod " + d);
  // The layer's filesystem is mounted on the host before the sandbox's mount namespace is made from it, and stays
  // mounted while the sandbox runs, daemon or not; a layer from before disk limits is kept unlimited.
  if (!layer.Legacy()) ISB_TRY(layer.Attach(rec.spec.disk));
  if (bundled && !layer.Legacy()) ISB_TRY(CopyTrustBundleToLayer(rec.id));
  // A sandbox launched ahead for the pool builds its view at the lowest priority, so it never slows the creates
  // and execs being served meanwhile. On failure the caller halts it by the handle it was given.
  engine::StartedSandbox started;
  Status start = runtime_->Start({rec.id, std::move(c), background}, &started);
  rec.runtime = std::string(runtime_->Name());
  rec.runtime_record = std::move(started.handle.record);
  rec.uid_base = started.uid_base;
  ISB_TRY(start);
  // Its veth and rules before anything runs in it (before then, it has only loopback).
  if (std::filesystem::exists(Dir(rec.id) + "/net_slot")) {
    if (options_.egress == nullptr) return Error::Of(Code::kUnavailable, "egress: " + options_.egress_unavailable);
    Status attached = options_.egress->Attach(rec.id, NetnsOf(rec));
    // An init that ended while it was started (killed, out of memory) is the engine's failure to build it, not a
    // conflict with the sandbox's state.
    if (!attached.ok() && attached.error().code == Code::kConflict)
      return Error::Of(Code::kUnavailable,
                       "the sandbox ended before its network was attached: " + attached.error().message);
    ISB_TRY(attached);
  }
  return {};
}

Status SandboxManager::Halt(Record& rec, const std::string& event, const std::string& reason,
                            const api::CallOrigin& origin, bool unmount_layer) {
  bool oom = false;
  Status removed = Kill(rec, &oom, unmount_layer);
  rec.state = "stopped";
  ISB_TRY(
      db_->Exec("UPDATE sandboxes SET state='stopped', runtime='', handle='', pid=0, start_time=0, lease_index=-1 "
                "WHERE id=?1",
                {rec.id}));
  Event(rec, oom && event == "died" ? "oom" : event, reason, origin);
  return removed;
}

Status SandboxManager::Kill(Record& rec, bool* oom, bool unmount_layer) {
  ports_.Unpublish(rec.id);
  std::function<void()> on_killed;
  if (options_.on_kill) on_killed = [this, &rec] { options_.on_kill(rec.id); };
  Status removed = runtime_->Kill(Handle(rec), on_killed, oom);
  // Stopped, its layer's filesystem is unmounted (the image keeps the data for the next start).
  if (unmount_layer)
    if (Status detached = Layer(rec.id).Detach(); !detached.ok() && removed.ok()) removed = detached;
  rec.runtime.clear();
  rec.runtime_record.clear();
  return removed;
}

void SandboxManager::Discard(Record& rec) {
  bool oom = false;
  (void)Kill(rec, &oom, /*unmount_layer=*/false);  // RemoveDir unmounts it
  if (options_.egress != nullptr) options_.egress->Release(rec.id);
  RemoveDir(rec.id);
}

Result<api::SandboxInfo> SandboxManager::Info(const Record& rec) {
  api::SandboxInfo info;
  info.id = rec.id;
  info.name = rec.name;
  info.spec = rec.spec;
  info.created_at = rec.created_at;
  info.expires_at = rec.expires_at;
  info.last_active_at = rec.last_active_at;
  {
    MutexLock lock(execs_mu_);
    if (execs_running_.count(rec.id) != 0) info.last_active_at = Now();  // an exec running is activity now
  }
  info.state = rec.state;
  if (options_.secrets != nullptr)
    for (const auto& [name, c] : options_.secrets->Counters(rec.id))
      info.secrets[name] = api::SecretUse{c.swapped, c.scrubbed, c.held};
  if (rec.state == "running") {
    if (auto st = runtime_->Usage(Handle(rec)); st.ok()) {
      info.usage.cpu_usec = st->cpu_usec;
      info.usage.memory_bytes = st->memory_bytes;
      info.usage.pids = static_cast<uint32_t>(st->pids);
    }
  }
  return info;
}

// A create, start or exec running: the pool's refill waits for none to be (refill_policy.h).
struct SandboxManager::Busy {
  explicit Busy(SandboxManager* m) : m_(m) {
    MutexLock lock(m_->pool_mu_);
    ++m_->busy_;
  }
  ~Busy() {
    MutexLock lock(m_->pool_mu_);
    if (--m_->busy_ > 0) return;
    m_->last_quiet_ = std::chrono::steady_clock::now();
    // Only a pool short of its size has a refill waiting for this; a full one's need not wake at every exec.
    if (m_->pool_.size() < m_->options_.pool_size ||
        (m_->options_.egress != nullptr && m_->net_pool_.size() < m_->options_.net_pool_size))
      m_->pool_cv_.NotifyAll();
  }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;
  SandboxManager* m_;
};

Result<api::SandboxInfo> SandboxManager::Create(const api::SandboxSpec& spec, const api::CallOrigin& origin) {
  const auto start = std::chrono::steady_clock::now();
  Busy busy(this);
  ISB_TRY(spec::Validate(spec));
  ISB_TRY(CheckOnHost(spec));
  ISB_ASSIGN_OR_RETURN(egress::EgressSpec egress_spec, Egress(spec));
  ISB_TRY(CheckSecretFiles(spec));
  ISB_ASSIGN_OR_RETURN(api::SandboxSpec resolved, ResolveMounts(spec));
  Record rec;
  rec.name = spec.name;
  rec.spec = std::move(resolved);
  rec.created_at = rec.last_active_at = Now();
  rec.expires_at = rec.created_at + spec.expires.count();
  // Refused before a pooled sandbox is spent on it (a cold launch refuses it too).
  ISB_TRY(PortsApartFromIsb(rec.spec));
  // A name in use is refused before a pooled sandbox is spent on it (the row's unique index decides in the end):
  // a caller repeating such a create must not make the daemon launch sandboxes again and again.
  if (!rec.name.empty()) {
    ISB_ASSIGN_OR_RETURN(auto taken, db_->Query("SELECT 1 FROM sandboxes WHERE org = ?1 AND name = ?2",
                                                {api::OrgOf(rec.spec), rec.name}));
    if (!taken.empty()) return Error::Of(Code::kConflict, "name: '" + rec.name + "' is in use");
  }
  if (auto ready = TakeReady(PoolFor(rec.spec, egress_spec))) {
    ISB_ASSIGN_OR_RETURN(api::SandboxInfo info, CreateFromPool(std::move(*ready), std::move(rec), egress_spec, origin));
    info.create_ms = MsSince(start);
    return info;
  }
  rec.id = NewId();
  if (rec.id.empty()) return Error::Msg("no randomness for a sandbox id");
  ISB_TRY(AddSecrets(rec, egress_spec));
  // Its own lock from before its row is seen until its creation is recorded: a stop or removal by name that finds
  // the row meanwhile waits, so the history never has "created" after "removed".
  std::optional<SandboxLocks::Held> held;
  held.emplace(locks_.Lock(rec.id));
  if (auto st = PrepareNetwork(rec, egress_spec); !st.ok()) {
    if (options_.egress != nullptr) options_.egress->Release(rec.id);
    RemoveDir(rec.id);
    return st.error();
  }
  // The row exists before the sandbox does, so a daemon killed mid-create finds and undoes it at start-up.
  auto ins = db_->Exec(
      "INSERT INTO sandboxes(id, name, spec, state, created_at, expires_at, last_active_at, org) "
      "VALUES(?1, ?2, ?3, 'creating', ?4, ?5, ?4, ?6)",
      {rec.id, rec.name, spec::ToStoredJson(rec.spec), rec.created_at, rec.expires_at, api::OrgOf(rec.spec)});
  if (!ins.ok()) {
    if (options_.egress != nullptr) options_.egress->Release(rec.id);
    RemoveDir(rec.id);
    if (ins.error().code == Code::kConflict) return Error::Of(Code::kConflict, "name: '" + spec.name + "' is in use");
    return ins.error();
  }
  if (auto st = Launch(rec); !st.ok()) {
    // Undone while its row still says creating, which no other call sees: it never existed for anyone.
    bool oom = false;
    (void)Kill(rec, &oom, /*unmount_layer=*/false);  // RemoveDir unmounts it
    if (options_.egress != nullptr) options_.egress->Release(rec.id);
    RemoveDir(rec.id);
    (void)db_->Exec("DELETE FROM sandboxes WHERE id = ?1", {rec.id});
    return st.error();
  }
  ISB_ASSIGN_OR_RETURN(api::SandboxInfo info, Created(rec, "cold", origin));
  info.create_ms = MsSince(start);
  return info;
}

Result<api::SandboxInfo> SandboxManager::Created(const Record& rec, const char* path, const api::CallOrigin& origin) {
  Event(rec, "created", "", origin);
  ISB_ASSIGN_OR_RETURN(api::SandboxInfo info, Info(rec));
  info.create_path = path;
  return info;
}

Result<api::SandboxInfo> SandboxManager::Get(const std::string& id_or_name) {
  ISB_ASSIGN_OR_RETURN(Record rec, Load(id_or_name));
  if (rec.state == "running" && !Alive(rec)) {
    std::optional<SandboxLocks::Held> held;
    ISB_ASSIGN_OR_RETURN(rec, LoadLocked(rec.id, &held));
    if (rec.state == "running" && !Alive(rec)) ISB_TRY(Halt(rec, "died", "its init exited"));
  }
  return Info(rec);
}

Result<std::vector<api::SandboxInfo>> SandboxManager::List() {
  ISB_ASSIGN_OR_RETURN(auto rows,
                       db_->Query("SELECT id FROM sandboxes WHERE state != 'creating' ORDER BY created_at, id"));
  std::vector<api::SandboxInfo> out;
  for (const auto& r : rows) {
    auto info = Get(AsText(r[0]));
    if (info.ok()) out.push_back(*info);
  }
  return out;
}

// An exec running in a sandbox, for the reaper (execs_running_), for its scope.
struct SandboxManager::ExecRunning {
  ExecRunning(SandboxManager* m, std::string id) : m_(m), id_(std::move(id)) {
    MutexLock lock(m_->execs_mu_);
    ++m_->execs_running_[id_];
  }
  ~ExecRunning() {
    MutexLock lock(m_->execs_mu_);
    if (--m_->execs_running_[id_] <= 0) m_->execs_running_.erase(id_);
  }
  ExecRunning(const ExecRunning&) = delete;
  ExecRunning& operator=(const ExecRunning&) = delete;
  SandboxManager* m_;
  std::string id_;
};

Result<engine::ExecSpec> SandboxManager::CommandFor(const Record& rec, const api::ExecRequest& req) const {
  engine::ExecSpec spec;
  spec.argv = req.argv;
  std::vector<std::string> env;
  std::map<std::string, std::string> merged = rec.spec.environment;
  for (const auto& [k, v] : req.env) merged[k] = v;
  for (const auto& [k, v] : merged) env.push_back(k + "=" + v);
  spec.env = engine::SandboxEnvironment(env);
  spec.workdir = req.workdir.empty() ? rec.spec.working_dir : req.workdir;
  // Checked when the spec was stored; a row that no longer holds a valid user runs nothing rather than run as root.
  auto ids = spec::ParseUser(rec.spec.user);
  if (!ids.ok())
    return Error::Of(Code::kConflict,
                     "sandbox '" + rec.id + "': its spec's " + ids.error().message + "; it runs no command");
  spec.uid = ids->first;
  spec.gid = ids->second;
  return spec;
}

Result<api::ExecResult> SandboxManager::Exec(const std::string& id_or_name, const api::ExecRequest& req,
                                             const api::OutputSink& sink) {
  Busy busy(this);
  ISB_TRY(spec::Validate(req));
  ISB_ASSIGN_OR_RETURN(Record rec, Load(id_or_name));
  if (rec.state != "running") return Error::Of(Code::kConflict, "sandbox '" + rec.id + "' is stopped; start it first");
  ExecRunning running(this, rec.id);
  ISB_ASSIGN_OR_RETURN(engine::ExecSpec spec, CommandFor(rec, req));
  spec.stdin_data = req.stdin_data;
  spec.timeout = req.timeout;
  spec.output_limit = kExecOutputLimit;
  spec.cancelled = req.cancelled;
  // An interactive command: its input and resizes (a person at it) keep it alive, its output does not (a command
  // printing forever is no person); with neither for idle_timeout, it is ended.
  std::shared_ptr<IdleWatch> idle;
  if (req.idle_timeout.count() > 0) {
    idle = std::make_shared<IdleWatch>(req.idle_timeout);
    spec.cancelled = [&req, idle] { return idle->Expired() || (req.cancelled && req.cancelled()); };
  }
  std::string session;
  engine::ExecInputReady on_input;
  if (req.tty) {
    ISB_ASSIGN_OR_RETURN(session, ReserveTerminal(rec.id, req.caller, idle));
    spec.tty = true;
    spec.rows = req.rows;
    spec.cols = req.cols;
    on_input = [&](std::shared_ptr<engine::ExecInput> t) {
      {
        MutexLock lock(terminals_mu_);
        terminals_[session].terminal = std::move(t);
      }
      if (req.on_session) req.on_session(session);
    };
  }
  struct Release {
    SandboxManager* m;
    const std::string& session;
    ~Release() {
      if (session.empty()) return;
      MutexLock lock(m->terminals_mu_);
      m->terminals_.erase(session);
    }
  } release{this, session};
  // Activity, recorded when the exec starts (a new daemon adopting the sandbox mid-exec has only the row) and when
  // it ends; a row that already holds this second is not written again (a busy sandbox's execs share one write).
  int64_t recorded = rec.last_active_at;
  auto record_activity = [&] {
    if (const int64_t now = Now(); now > recorded) {
      (void)db_->Exec("UPDATE sandboxes SET last_active_at = ?2 WHERE id = ?1 AND last_active_at < ?2", {rec.id, now});
      recorded = now;
    }
  };
  record_activity();
  // The cgroup's OOM kills before and after: a SIGKILL while the count rose is the OOM killer's.
  Result<engine::CgroupStats> oom_before = runtime_->Usage(Handle(rec));
  auto out = runtime_->Exec(
      Handle(rec), spec, sink ? engine::ExecSink([&](int s, std::string_view d) { sink(s, d); }) : engine::ExecSink(),
      on_input);
  record_activity();
  if (!out.ok() && idle && idle->Expired()) return IdleEnded(idle->limit());
  if (!out.ok()) {
    if (out.error().code == Code::kNotFound)
      return Error::Of(Code::kConflict, "sandbox '" + rec.id + "' is not running");
    return out.error();
  }
  if (!out->exec_error.empty() && out->exit_code != 126 && out->exit_code != 127)
    return Error::Of(Code::kInvalidArgument, out->exec_error);
  api::ExecResult r;
  r.exit_code = out->exec_error.empty() ? out->exit_code : (out->exit_code == 127 ? 127 : 126);
  r.signal = out->signal;
  r.timed_out = out->timed_out;
  r.stdout_data = std::move(out->stdout_data);
  r.stderr_data = std::move(out->stderr_data);
  if (!out->exec_error.empty()) r.stderr_data += "isb: " + out->exec_error + "\n";
  r.stdout_truncated = out->stdout_truncated;
  r.stderr_truncated = out->stderr_truncated;
  r.duration_ms = out->duration_ms;
  if (oom_before.ok() && !r.timed_out && (r.signal == SIGKILL || r.exit_code == 128 + SIGKILL)) {
    Result<engine::CgroupStats> after = runtime_->Usage(Handle(rec));
    r.oom_killed = after.ok() && after->oom_kills > oom_before->oom_kills;
  }
  return r;
}

Result<api::SandboxInfo> SandboxManager::Stop(const std::string& id_or_name, const api::CallOrigin& origin) {
  std::optional<SandboxLocks::Held> held;
  ISB_ASSIGN_OR_RETURN(Record rec, LoadLocked(id_or_name, &held));
  if (rec.state == "running") ISB_TRY(Halt(rec, "stopped", "requested", origin));
  return Info(rec);
}

Result<api::SandboxInfo> SandboxManager::Start(const std::string& id_or_name, const api::CallOrigin& origin) {
  Busy busy(this);
  std::optional<SandboxLocks::Held> held;
  ISB_ASSIGN_OR_RETURN(Record rec, LoadLocked(id_or_name, &held));
  if (rec.state == "running" && Alive(rec)) return Info(rec);
  // Its death is the daemon's finding, not the caller's doing (as when the reaper or a read notices it).
  if (rec.state == "running") ISB_TRY(Halt(rec, "died", "its init exited", /*origin=*/{}));
  // Checked again at every start: a sandbox stored before isb's directories were kept out must not reach them
  // (such a sandbox can only be removed).
  ISB_TRY(KeepIsbOut(rec.spec));
  if (Status launched = Launch(rec); !launched.ok()) {
    // Back to stopped as it was: its processes, cgroups and uid range gone, its layer unmounted.
    (void)Halt(rec, "failed", launched.error().message, origin);
    return launched.error();
  }
  rec.last_active_at = Now();
  (void)db_->Exec("UPDATE sandboxes SET last_active_at = ?2 WHERE id = ?1", {rec.id, rec.last_active_at});
  Event(rec, "started", "", origin);
  return Info(rec);
}

Result<api::SandboxInfo> SandboxManager::Extend(const std::string& id_or_name, std::chrono::seconds by,
                                                const api::CallOrigin& origin) {
  if (by.count() < 1) return Invalid("by: must be at least 1s");
  std::optional<SandboxLocks::Held> held;
  ISB_ASSIGN_OR_RETURN(Record rec, LoadLocked(id_or_name, &held));
  int64_t until = std::max(rec.expires_at, Now()) + by.count();
  if (until > Now() + spec::kMaxExpiresS) return Invalid("by: a sandbox expires at most 30 days from now");
  rec.expires_at = until;
  ISB_TRY(db_->Exec("UPDATE sandboxes SET expires_at = ?2 WHERE id = ?1", {rec.id, until}));
  Event(rec, "extended", std::to_string(by.count()) + "s", origin);
  return Info(rec);
}

Result<api::SandboxInfo> SandboxManager::SetEgress(const std::string& id_or_name, const nlohmann::json& egress) {
  std::optional<SandboxLocks::Held> held;
  ISB_ASSIGN_OR_RETURN(Record rec, LoadLocked(id_or_name, &held));
  api::SandboxSpec next = rec.spec;
  next.egress = egress;
  ISB_ASSIGN_OR_RETURN(egress::EgressSpec spec, Egress(next));
  if (options_.egress == nullptr || !std::filesystem::exists(Dir(rec.id) + "/net_slot"))
    return Invalid("egress: the sandbox was created with egress none; it has no network to change");
  if (!spec.secrets.empty()) {
    Record changed = rec;
    changed.spec = next;
    ISB_TRY(AddSecrets(changed, spec));
    next = changed.spec;
  }
  if (auto st = options_.egress->Update(rec.id, spec); !st.ok()) return InEgress(st.error());
  rec.spec = next;
  ISB_TRY(db_->Exec("UPDATE sandboxes SET spec = ?2 WHERE id = ?1", {rec.id, spec::ToStoredJson(rec.spec)}));
  Event(rec, "egress_changed");
  return Info(rec);
}

Status SandboxManager::Remove(const std::string& id_or_name, const api::CallOrigin& origin) {
  std::string forgotten;
  Status retired;
  {
    std::optional<SandboxLocks::Held> held;
    ISB_ASSIGN_OR_RETURN(Record rec, LoadLocked(id_or_name, &held));
    retired = Retire(rec, "removed", "requested", origin, &forgotten);
  }
  TearDown(forgotten);
  return retired;
}

Status SandboxManager::Retire(Record& rec, const std::string& event, const std::string& reason,
                              const api::CallOrigin& origin, std::string* forgotten) {
  Status halted = Halt(rec, event, reason, origin, /*unmount_layer=*/false);
  if (options_.egress != nullptr) options_.egress->Release(rec.id);
  // A row that cannot be deleted keeps its state dir: the sandbox stays, stopped, for another removal.
  ISB_TRY(db_->Exec("DELETE FROM sandboxes WHERE id = ?1", {rec.id}));
  detached_.Forget(rec.id);
  {
    MutexLock lock(samples_mu_);
    cpu_samples_.erase(rec.id);
  }
  *forgotten = rec.id;
  return halted;
}

void SandboxManager::TearDown(const std::string& id) {
  // Called without the sandbox's lock: when the queue is full the work runs here, holding nothing.
  if (!id.empty()) teardown_.Add([this, id] { RemoveDir(id); });
}

void SandboxManager::SettleTeardown() { teardown_.Settle(); }

}  // namespace isb::daemon
