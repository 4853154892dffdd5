// Sandboxes as long-lived objects: create, exec, stop/start, files, removal, adoption and reaping.
#include "daemon/sandbox_manager.h"

#include "api/org_sandboxes.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <utility>
#include <nlohmann/json.hpp>

#include "base/fd.h"
#include "base/file.h"
#include "base/random.h"
#include "base/units.h"
#include "engine/cgroup.h"
#include "engine/contain.h"
#include "engine/exec_client.h"
#include "engine/idmap.h"
#include "engine/launch.h"
#include "engine/namespaces.h"
#include "daemon/sandbox_fit.h"

namespace isb::daemon {

using nlohmann::json;
using store::AsInt;
using store::AsText;

namespace {

constexpr int kBackgroundNice = 19;
constexpr uint64_t kExecOutputLimit = 256 * 1024;
constexpr size_t kMaxRead = 4 << 20;
constexpr size_t kMaxWrite = 2 << 20;
// How long one input call waits for a command that does not read its terminal.
constexpr std::chrono::milliseconds kTerminalInputWait{5000};

Error Invalid(const std::string& m) { return Error::Of(Code::kInvalidArgument, m); }

std::string NewId() {
  auto hex = RandomHex(8);
  return hex.ok() ? "sb-" + *hex : "";
}

// The host uid and gid of a sandbox's user (spec.user): in its own range from `uid_base` (0 when privileged: the
// host's ids), or the host id an idmap entry maps it to.
std::pair<uid_t, gid_t> HostUser(const api::SandboxSpec& spec, uint32_t uid_base) {
  auto ids = spec::ParseUser(spec.user);
  uint32_t uid = ids.ok() ? ids->first : 0, gid = ids.ok() ? ids->second : 0;
  return {engine::HostIdOf(uid_base, spec.idmap, engine::IdMapKind::kUid, uid),
          engine::HostIdOf(uid_base, spec.idmap, engine::IdMapKind::kGid, gid)};
}

// Paths a caller may not read or write inside a sandbox (judged on the lexically normal form; what symlinks
// lead to is judged on the opened file).
bool RefusedPath(const std::string& path) {
  std::string collapsed;
  for (char c : path)
    if (!(c == '/' && !collapsed.empty() && collapsed.back() == '/')) collapsed.push_back(c);
  std::string norm = std::filesystem::path(collapsed).lexically_normal().string();
  if (norm.size() > 1 && norm.back() == '/') norm.pop_back();
  for (std::string pre : {"/proc", "/sys", "/dev", "/run/isb", "/run/secrets"})
    if (norm == pre || norm.starts_with(pre + "/")) return true;
  return false;
}

Error RefusedError(const std::string& path) {
  return Error::Of(Code::kForbidden, "path: " + path + " is refused (/proc, /sys, /dev and isb's own paths)");
}

// The checks of a path before anything is opened.
Status CheckPath(const std::string& path) {
  if (path.empty() || path[0] != '/') return Invalid("path: must be absolute");
  if (path.find('\0') != std::string::npos) return Invalid("path: must not contain NUL");
  if (RefusedPath(path)) return RefusedError(path);
  return {};
}

// Acts as the sandbox's user for file access on this thread only (the fsuid and the groups are per thread when set
// by the system calls themselves, which the C library's wrappers would apply to every thread): permission checks
// are the user's own, with none of the daemon's supplementary groups (started through sudo, it has root's), and a
// created file is the user's. Capabilities over files come back with fsuid 0.
class AsSandboxUser {
 public:
  AsSandboxUser(uid_t uid, gid_t gid) {
    const int n = ::getgroups(0, nullptr);
    if (n > 0) {
      groups_.resize(static_cast<size_t>(n));
      groups_.resize(static_cast<size_t>(std::max(0, ::getgroups(n, groups_.data()))));
    }
    ::syscall(SYS_setgroups, 0, nullptr);
    ::syscall(SYS_setfsgid, gid);
    ::syscall(SYS_setfsuid, uid);
  }
  ~AsSandboxUser() {
    ::syscall(SYS_setfsuid, 0);
    ::syscall(SYS_setfsgid, 0);
    ::syscall(SYS_setgroups, groups_.size(), groups_.data());
  }
  AsSandboxUser(const AsSandboxUser&) = delete;
  AsSandboxUser& operator=(const AsSandboxUser&) = delete;

 private:
  std::vector<gid_t> groups_;
};

// The root of the process that is pid `pid` since `start_time` (the sandbox's init); a pid taken meanwhile by
// another process is never used.
Result<Fd> SandboxRoot(pid_t pid, uint64_t start_time) {
  Fd proc = engine::OpenProcessDir(pid, start_time);
  Fd root(proc.valid() ? ::openat(proc.get(), "root", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1);
  if (!root.valid()) return Error::Of(Code::kConflict, "the sandbox is not running");
  return root;
}

// Opens `name` at `at` with openat2 (`flags` and `resolve`) as host uid/gid `uid`/`gid`; errors name `path`.
Result<Fd> OpenAs(int at, const std::string& name, const std::string& path, int flags, mode_t mode, uint64_t resolve,
                  uid_t uid, gid_t gid) {
  open_how how{};
  // openat2 takes no other flags with O_PATH.
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY | O_NONBLOCK));
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = resolve;
  long fd;
  int e;
  {
    AsSandboxUser as(uid, gid);
    fd = ::syscall(SYS_openat2, at, name.c_str(), &how, sizeof how);
    e = errno;
  }
  if (fd < 0) {
    Error err = Error::Sys("open " + path, e);
    if (e == EOVERFLOW) e = EACCES;  // a file of ids outside the sandbox's range
    // What the sandbox can bring about at will is the caller's error, never isb's: a symlink loop or a magic link
    // (ELOOP), a FIFO with no reader or a socket (ENXIO), a path too long, a program running (ETXTBSY), a rename
    // racing the resolution (EAGAIN).
    err.code = e == ENOENT                                                  ? Code::kNotFound
               : e == EISDIR || e == ENOTDIR || e == ELOOP || e == ENXIO || e == ENAMETOOLONG ? Code::kInvalidArgument
               : e == EACCES || e == EPERM || e == EROFS || e == EXDEV ? Code::kForbidden
               : e == ETXTBSY || e == EAGAIN || e == EEXIST             ? Code::kConflict
                                                                        : Code::kInternal;
    return err;
  }
  return Fd(static_cast<int>(fd));
}

// Opens `path` (absolute, refused places already turned away) inside `root`: symlinks and ".." resolve within it,
// never on the host.
Result<Fd> OpenInRoot(int root, const std::string& path, int flags, uid_t uid, gid_t gid) {
  return OpenAs(root, path.size() > 1 ? path.substr(1) : ".", path, flags, 0, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
                uid, gid);
}

// Where a descriptor's file is: its mount (statx's mount id, Linux 5.8 on) and its device, which alone tells the
// tmpfs instances isb mounts apart where the mount id is unknown.
struct FilePlace {
  uint64_t mount = 0;
  dev_t dev = 0;
  bool Same(const FilePlace& o) const { return mount != 0 && o.mount != 0 ? mount == o.mount : dev == o.dev; }
};

std::optional<FilePlace> PlaceOf(int fd) {
  struct statx sx{};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) != 0) return std::nullopt;
  FilePlace p;
  p.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  if (sx.stx_mask & STATX_MNT_ID) p.mount = sx.stx_mnt_id;
  return p;
}

// Whether `fd` is on a mount isb puts at a place the file tools refuse: /dev and /dev/shm (tmpfs, whose pages are
// charged to whoever writes them: through the file tools, the daemon, past the sandbox's own memory limit), and
// /run/isb or /run/secrets where they are mounts of their own. A symlink anywhere leads there as well, so the file
// is judged by where it is, not by its path; a place that is a directory of the root's own file system is refused
// by its name alone. Unknown places are refused.
bool OnRefusedMount(int root, int fd) {
  std::optional<FilePlace> file = PlaceOf(fd), top = PlaceOf(root);
  if (!file || !top) return true;
  if (file->Same(*top)) return false;
  for (const char* place : {"dev", "dev/shm", "run/isb", "run/secrets"}) {
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    Fd at(static_cast<int>(::syscall(SYS_openat2, root, place, &how, sizeof how)));
    if (!at.valid()) continue;
    std::optional<FilePlace> refused = PlaceOf(at.get());
    if (!refused || (!refused->Same(*top) && refused->Same(*file))) return true;
  }
  return false;
}

// Checks what `path` led to, whatever symlinks it went through: only regular files on ordinary filesystems, and
// nowhere a refused place is mounted.
Status CheckServed(int root, int fd, const std::string& path) {
  struct stat st{};
  struct statfs sf{};
  if (::fstat(fd, &st) != 0 || ::fstatfs(fd, &sf) != 0) return Error::Sys("stat " + path);
  if (!S_ISREG(st.st_mode)) return Invalid("path: " + path + " is not a regular file");
  for (unsigned long magic : std::initializer_list<unsigned long>{PROC_SUPER_MAGIC, SYSFS_MAGIC, DEVPTS_SUPER_MAGIC, CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC,
                     DEBUGFS_MAGIC, SECURITYFS_MAGIC, BPF_FS_MAGIC, TRACEFS_MAGIC})
    if (static_cast<unsigned long>(sf.f_type) == magic) return Error::Of(Code::kForbidden, "path: " + path + " is on a refused filesystem");
  if (OnRefusedMount(root, fd)) return RefusedError(path);
  return {};
}

}  // namespace

struct SandboxManager::Record {
  std::string id, name, state;
  api::SandboxSpec spec;
  pid_t pid = 0;
  uint64_t start_time = 0;
  int64_t lease_index = -1;
  uint32_t uid_base = 0;
  int64_t created_at = 0, expires_at = 0, last_active_at = 0;
};

struct SandboxManager::Pooled {
  Record rec;
  std::optional<SandboxNet> net;  // the net pool's: what its network gave it
};

// What a spec asks of this host, beyond spec::Validate's rules: an image directory that exists, and processes
// within the host's bound.
Status CheckOnHost(const api::SandboxSpec& s) {
  if (!s.image.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(s.image, ec)) return Invalid("image: '" + s.image + "' is not a directory");
  }
  if (const engine::PidsBound& host = engine::HostPidsBound(); s.pids < spec::kMinPids || s.pids > host.sandboxes())
    return Invalid("pids: must be between 2 and " + host.Describe());
  return {};
}

SandboxManager::SandboxManager(ManagerOptions options, engine::Spawner* spawner, store::Db* db,
                               engine::CgroupLayout layout)
    : options_(std::move(options)), spawner_(spawner), db_(db), layout_(std::move(layout)) {
  if (!options_.now) options_.now = [] { return static_cast<int64_t>(::time(nullptr)); };
}

SandboxManager::~SandboxManager() {
  {
    std::lock_guard lock(pool_mu_);
    pool_stop_ = true;
  }
  pool_cv_.notify_all();
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

void SandboxManager::Event(const Record& rec, const std::string& event, const std::string& reason) {
  const std::string& id = rec.id;
  (void)db_->Exec("INSERT INTO sandbox_events(time, sandbox, event, reason) VALUES(?1, ?2, ?3, ?4)",
                  {Now(), id, event, reason});
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
  e.actor_kind = "system";
  // A tool call's: who asked (the reaper's, an OOM's, an adoption's stay the daemon's own).
  if (const api::CallOrigin* origin = api::CurrentCallOrigin()) {
    e.actor = origin->actor;
    e.actor_kind = origin->actor_kind;
    e.request_id = origin->request_id;
  }
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
    std::lock_guard lock(owner_->mu_);
    if (--entry_->users == 0) owner_->entries_.erase(id_);
  }
}

SandboxManager::SandboxLocks::Held SandboxManager::SandboxLocks::Lock(const std::string& id) {
  Held held;
  held.shared_ = std::shared_lock(all_);
  {
    std::lock_guard lock(mu_);
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
  auto rows = db_->Query(
      "SELECT id, name, spec, state, pid, start_time, lease_index, uid_base, created_at, expires_at, last_active_at "
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
  rec.pid = static_cast<pid_t>(AsInt(r[4]));
  rec.start_time = static_cast<uint64_t>(AsInt(r[5]));
  rec.lease_index = AsInt(r[6]);
  rec.uid_base = static_cast<uint32_t>(AsInt(r[7]));
  rec.created_at = AsInt(r[8]);
  rec.expires_at = AsInt(r[9]);
  rec.last_active_at = AsInt(r[10]);
  return rec;
}

api::SandboxSpec SandboxManager::ParsedSpec(const std::string& text) {
  {
    std::lock_guard lock(parsed_mu_);
    if (auto it = parsed_specs_.find(text); it != parsed_specs_.end()) return it->second;
  }
  api::SandboxSpec spec = spec::FromStoredJson(text);
  if (text.size() > kMaxParsedSpec) return spec;
  std::lock_guard lock(parsed_mu_);
  if (parsed_bytes_ + text.size() > kMaxParsedSpecBytes) {
    parsed_specs_.clear();
    parsed_bytes_ = 0;
  }
  if (parsed_specs_.emplace(text, spec).second) parsed_bytes_ += text.size();
  return spec;
}

bool SandboxManager::Alive(const Record& rec) const {
  return rec.state == "running" && rec.pid > 0 && engine::ProcessStartTime(rec.pid) == rec.start_time;
}

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
  if (Status published = ports_.Publish(rec.id, rec.pid, rec.spec.ports); !published.ok()) {
    bool oom = false;
    (void)Kill(rec, &oom);
    return published;
  }
  rec.state = "running";
  return db_->Exec("UPDATE sandboxes SET state='running', pid=?2, start_time=?3, lease_index=?4, uid_base=?5 "
                   "WHERE id=?1",
                   {rec.id, static_cast<int64_t>(rec.pid), static_cast<int64_t>(rec.start_time), rec.lease_index,
                    static_cast<int64_t>(rec.uid_base)});
}

Status SandboxManager::LaunchProcess(Record& rec, bool background) {
  auto ids = spec::ParseUser(rec.spec.user);
  engine::SandboxConfig c;
  c.hostname = rec.name.empty() ? "sandbox" : rec.name;
  c.image = rec.spec.image;
  c.idmap_image = rec.spec.image_idmapped;
  c.limits.memory_bytes = rec.spec.mem_limit;
  c.limits.millicpus = static_cast<uint32_t>(rec.spec.cpus * 1000 + 0.5);
  c.limits.pids = rec.spec.pids;
  c.writable_dir = Dir(rec.id) + "/layer";
  c.privileged = rec.spec.privileged;
  c.idmap = rec.spec.idmap;
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
    c.binds.push_back({real.string() + (layer.Legacy() ? "/" : "/layer/") + kTrustBundleFile, kSandboxTrustBundle,
                       true});
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
  ISB_ASSIGN_OR_RETURN(engine::SpawnedSandbox s, spawner_->Spawn(c, Dir(rec.id) + "/control.sock", rec.id));
  rec.pid = s.pid;
  rec.start_time = s.start_time;
  rec.lease_index = s.lease_index;
  rec.uid_base = s.uid_base;
  // A sandbox launched ahead for the pool builds its view at the lowest priority, so it never slows the creates
  // and execs being served meanwhile; it gets the daemon's own priority once it is ready.
  const int normal = ::getpriority(PRIO_PROCESS, 0);  // this thread's nice value, -20..19 (never fails for itself)
  if (background && ::setpriority(PRIO_PROCESS, static_cast<id_t>(rec.pid), kBackgroundNice) != 0)
    return Error::Sys("lower the priority of a pooled sandbox");
  // Set up in parallel with other creates (the spawner has moved on); on failure the caller halts it by pid.
  ISB_TRY(engine::WaitForSetup(s.report.get(), c, options_.runtime_dir, nullptr));
  // Its veth and rules before anything runs in it (before then, it has only loopback).
  if (std::filesystem::exists(Dir(rec.id) + "/net_slot")) {
    if (options_.egress == nullptr) return Error::Of(Code::kUnavailable, "egress: " + options_.egress_unavailable);
    ISB_TRY(options_.egress->Attach(rec.id, rec.pid, rec.start_time));
  }
  if (background && ::setpriority(PRIO_PROCESS, static_cast<id_t>(rec.pid), normal) != 0)
    return Error::Sys("restore the priority of a pooled sandbox");
  return {};
}

Status SandboxManager::Halt(Record& rec, const std::string& event, const std::string& reason, bool unmount_layer) {
  bool oom = false;
  Status removed = Kill(rec, &oom, unmount_layer);
  rec.state = "stopped";
  ISB_TRY(db_->Exec("UPDATE sandboxes SET state='stopped', pid=0, start_time=0, lease_index=-1 WHERE id=?1", {rec.id}));
  Event(rec, oom && event == "died" ? "oom" : event, reason);
  return removed;
}

Status SandboxManager::Kill(Record& rec, bool* oom, bool unmount_layer) {
  ports_.Unpublish(rec.id);
  if (Fd pidfd = engine::OpenProcess(rec.pid, rec.start_time); pidfd.valid()) {
    ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
    if (options_.on_kill) options_.on_kill(rec.id);
    pollfd p{pidfd.get(), POLLIN, 0};
    ::poll(&p, 1, 10'000);  // killing pid 1 takes the whole pid namespace with it
  }
  engine::Cgroup cg = engine::Cgroup::Adopt(layout_, rec.id);
  if (auto st = cg.ReadStats(); st.ok()) *oom = st->oom_kills > 0;
  Status removed = cg.Remove();
  // Its processes are gone, and with them its hold on the uid range: one try. The range may already be another
  // sandbox's (the spawner reuses a range as soon as it is free); that sandbox's lock is then left alone, where
  // waiting for it used to hold a removal up for a second.
  if (rec.lease_index >= 0) (void)engine::IdAllocator::ForHost().Reclaim(static_cast<uint32_t>(rec.lease_index));
  ::unlink((Dir(rec.id) + "/control.sock").c_str());
  // Stopped, its layer's filesystem is unmounted (the image keeps the data for the next start).
  if (unmount_layer)
    if (Status detached = Layer(rec.id).Detach(); !detached.ok() && removed.ok()) removed = detached;
  rec.pid = 0;
  rec.start_time = 0;
  rec.lease_index = -1;
  return removed;
}

void SandboxManager::Discard(Record& rec) {
  bool oom = false;
  (void)Kill(rec, &oom, /*unmount_layer=*/false);  // RemoveDir unmounts it
  if (options_.egress != nullptr) options_.egress->Release(rec.id);
  RemoveDir(rec.id);
}

SandboxManager::PoolKind SandboxManager::PoolFor(const api::SandboxSpec& spec, const egress::EgressSpec& egress) const {
  // What a pooled sandbox was launched with and cannot change: the default view on a layer of the default size, its
  // user namespace (never privileged, no idmap), and limits that may only come down (sandbox_fit.h). The rest of
  // a spec (name, environment, user, working_dir, labels, lifetimes, ports) is applied to it afterwards.
  const api::SandboxSpec pooled;
  if (!spec.image.empty() || spec.image_idmapped || !spec.mounts.empty() || spec.disk != pooled.disk ||
      spec.privileged || !spec.idmap.empty() || spec.cpus > pooled.cpus || spec.mem_limit > pooled.mem_limit ||
      spec.pids > pooled.pids)
    return PoolKind::kCold;
  if (egress.mode == egress::EgressMode::kNone) return PoolKind::kPlain;
  if (egress.mode == egress::EgressMode::kAllowlist && options_.egress != nullptr) return PoolKind::kNet;
  return PoolKind::kCold;  // open egress routes its sandbox differently; a block list takes every port's rules
}

std::optional<SandboxManager::Pooled> SandboxManager::TakeReady(PoolKind kind) {
  if (kind == PoolKind::kCold) return std::nullopt;
  std::vector<Pooled>& pool = kind == PoolKind::kNet ? net_pool_ : pool_;
  std::unique_lock lock(pool_mu_);
  while (!pool.empty()) {
    Pooled p = std::move(pool.back());
    pool.pop_back();
    last_take_ = std::chrono::steady_clock::now();
    pool_cv_.notify_all();
    if (engine::ProcessStartTime(p.rec.pid) == p.rec.start_time) return p;
    lock.unlock();
    Discard(p.rec);  // died while waiting (say, killed from outside)
    lock.lock();
  }
  return std::nullopt;
}

// The net pool's sandboxes wait with a list of one name on the default port: their rules are then those of the
// usual list (port 443 and the proxy's), which a create's list of the same ports takes without applying rules again.
constexpr char kPooledListName[] = "pooled.invalid";

Result<SandboxManager::Pooled> SandboxManager::LaunchPooled(PoolKind kind) {
  Pooled p;
  p.rec.id = NewId();
  if (p.rec.id.empty()) return Error::Msg("no randomness for a sandbox id");
  if (kind == PoolKind::kNet) {
    p.rec.spec.egress = json::array({kPooledListName});
    ISB_ASSIGN_OR_RETURN(egress::EgressSpec placeholder, Egress(p.rec.spec));
    p.net.emplace();
    if (Status st = PrepareNetwork(p.rec, placeholder, &*p.net); !st.ok()) {
      Discard(p.rec);
      return st.error();
    }
  }
  if (Status st = LaunchProcess(p.rec, true); !st.ok()) {
    Discard(p.rec);
    return st.error();
  }
  return p;
}

void SandboxManager::FillPool() {
  std::unique_lock lock(pool_mu_);
  while (!pool_stop_) {
    // refill_policy.h: at once when empty, else in a quiet moment (the create's first exec goes first). The pool
    // due first is filled first.
    auto due = NextRefill({pool_.size(), options_.pool_size, busy_, last_take_, last_quiet_});
    PoolKind kind = PoolKind::kPlain;
    if (options_.egress != nullptr) {
      const auto net_due = NextRefill({net_pool_.size(), options_.net_pool_size, busy_, last_take_, last_quiet_});
      if (net_due < due) {
        due = net_due;
        kind = PoolKind::kNet;
      }
    }
    if (due == PoolState::Time::max()) {
      pool_cv_.wait(lock);
      continue;
    }
    if (std::chrono::steady_clock::now() < due) {
      pool_cv_.wait_until(lock, due);
      continue;
    }
    lock.unlock();
    Result<Pooled> launched = LaunchPooled(kind);
    if (!launched.ok()) {
      std::fprintf(stderr, "isb: the pool could not launch a sandbox: %s\n", launched.error().message.c_str());
      lock.lock();
      pool_cv_.wait_for(lock, std::chrono::seconds(5), [this] { return pool_stop_; });
      continue;
    }
    lock.lock();
    // The destructor discards it if stopping.
    (kind == PoolKind::kNet ? net_pool_ : pool_).push_back(std::move(*launched));
  }
}

size_t SandboxManager::PoolSize() {
  std::lock_guard lock(pool_mu_);
  return pool_.size();
}

size_t SandboxManager::NetPoolSize() {
  std::lock_guard lock(pool_mu_);
  return net_pool_.size();
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
    std::lock_guard lock(execs_mu_);
    if (execs_running_.count(rec.id) != 0) info.last_active_at = Now();  // an exec running is activity now
  }
  info.state = rec.state;
  if (rec.state == "running") {
    engine::Cgroup cg = engine::Cgroup::Adopt(layout_, rec.id);
    if (auto st = cg.ReadStats(); st.ok()) {
      info.usage.cpu_usec = st->cpu_usec;
      info.usage.memory_bytes = st->memory_bytes;
      info.usage.pids = static_cast<uint32_t>(st->pids);
    }
    cg.Release();
  }
  return info;
}

Result<egress::EgressSpec> SandboxManager::Egress(const api::SandboxSpec& spec) const {
  Result<egress::EgressSpec> e = ParseSandboxEgress(spec.egress);
  if (!e.ok()) return Error::Of(e.error().code, "egress: " + e.error().message);
  if (e->mode != egress::EgressMode::kNone && options_.egress == nullptr)
    return Error::Of(Code::kUnavailable, "egress: " + options_.egress_unavailable);
  return e;
}

void SandboxManager::AddNetworkEnvironment(api::SandboxSpec& spec, const SandboxNet& net) {
  // The proxy variables join the sandbox's environment unless the caller set them.
  for (const std::string& kv : net.env) {
    size_t eq = kv.find('=');
    spec.environment.try_emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (!net.ca_pem.empty())
    for (const char* k : kTrustBundleVariables) spec.environment.try_emplace(k, kSandboxTrustBundle);
}

Status SandboxManager::PrepareNetwork(Record& rec, const egress::EgressSpec& spec, SandboxNet* out) {
  if (spec.mode == egress::EgressMode::kNone) return {};
  ISB_ASSIGN_OR_RETURN(SandboxNet net, options_.egress->Prepare(rec.id, spec, api::OrgOf(rec.spec)));
  AddNetworkEnvironment(rec.spec, net);
  ISB_TRY(MakeDirs(Dir(rec.id), 0711));
  ISB_TRY(isb::WriteFile(Dir(rec.id) + "/resolv.conf", net.resolv_conf, 0644));
  if (!net.ca_pem.empty()) ISB_TRY(WriteTrustBundle(rec, net.ca_pem));
  ISB_TRY(isb::WriteFileAtomically(Dir(rec.id) + "/net_slot", std::to_string(net.slot), 0600));
  if (out != nullptr) *out = std::move(net);
  return {};
}

namespace {

// A file or directory as the kernel knows it: the same (device, inode) is the same one by whatever path, a bind
// mount's included.
using FileId = std::pair<dev_t, ino_t>;

// The real path of `path` (absolute, symlinks resolved) and each directory above it, up to /. A path that does not
// exist yet (the runtime dir before the first launch) starts at its nearest existing ancestor. Empty only when
// nothing can be looked at.
std::vector<FileId> Chain(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  if (ec) return {};
  std::vector<FileId> out;
  for (;;) {
    struct stat st{};
    if (::stat(p.c_str(), &st) == 0) out.emplace_back(st.st_dev, st.st_ino);
    if (p == p.root_path() || !p.has_relative_path()) return out;
    p = p.parent_path();
  }
}

// `path` opened (O_PATH) as the engine reaches a source: with no symlink on the way, nor as its last component.
// Invalid, with errno set (ELOOP for a symlink), otherwise.
Fd OpenAsBound(const std::string& path) {
  Fd fd(OpenNoSymlinks(path.c_str(), O_PATH));
  struct stat st{};
  if (fd.valid() && (::fstat(fd.get(), &st) != 0 || S_ISLNK(st.st_mode))) {
    const int err = S_ISLNK(st.st_mode) ? ELOOP : errno;
    fd.Reset();
    errno = err;
  }
  return fd;
}

bool Holds(const std::vector<FileId>& chain, const FileId& id) {
  return std::find(chain.begin(), chain.end(), id) != chain.end();
}

}  // namespace

Status SandboxManager::KeepIsbOut(const api::SandboxSpec& spec) const {
  // The state and runtime dirs: not the source, not above it, not below it. The API socket (which may live
  // elsewhere, beside other files): not the source, not below it.
  // One that does not exist yet (the runtime dir before the first launch) has nothing below it to keep out.
  std::vector<std::vector<FileId>> dirs, files;
  for (const std::string& dir : {options_.state_dir, options_.runtime_dir}) {
    std::error_code ec;
    if (dir.empty()) continue;
    (std::filesystem::exists(dir, ec) ? dirs : files).push_back(Chain(dir));
  }
  if (!options_.serve_socket.empty()) files.push_back(Chain(options_.serve_socket));
  auto check = [&](const std::string& field, const std::string& path) -> Status {
    // Judged as the engine reaches it: a path that is gone, or has a symlink on it now, binds nothing (the launch
    // fails on it), so it is not this check's to refuse; nor is a running sandbox stopped for what the path would
    // lead to today rather than what it bound.
    if (!OpenAsBound(path).valid()) return Status();
    const std::vector<FileId> source = Chain(path);
    bool overlap = source.empty();
    for (const auto& own : dirs)
      overlap = overlap || own.empty() || Holds(own, source.front()) || Holds(source, own.front());
    for (const auto& own : files) overlap = overlap || own.empty() || Holds(own, source.front());
    if (overlap)
      return Error::Of(Code::kForbidden,
                       field + ": '" + path + "' is or holds a directory of isb's own, which no sandbox may see");
    return {};
  };
  if (!spec.image.empty()) ISB_TRY(check("image", spec.image));
  for (size_t i = 0; i < spec.mounts.size(); ++i)
    ISB_TRY(check("mounts[" + std::to_string(i) + "].source", spec.mounts[i].source));
  return {};
}

Result<api::SandboxSpec> SandboxManager::ResolveMounts(api::SandboxSpec spec) const {
  // Each path becomes its real path, what every start then reaches without following a symlink. Paths the API
  // already resolved and checked against the bind roots are kept as they are, only if no symlink has come onto
  // them since: resolving them again would follow one swapped in meanwhile, past the check.
  auto resolve = [&](const std::string& field, std::string& path) -> Status {
    if (spec.paths_checked) {
      if (OpenAsBound(path).valid()) return {};
      if (errno == ENOENT) return Invalid(field + ": '" + path + "' does not exist");
      if (errno != ELOOP) return Error::Sys(field + ": " + path);
      return Error::Of(Code::kForbidden, field + ": '" + path + "' changed since it was checked (a symlink is on "
                                                                "its path now)");
    }
    std::error_code ec;
    auto real = std::filesystem::canonical(path, ec);
    if (ec) return Invalid(field + ": '" + path + "' does not exist");
    path = real.string();
    return {};
  };
  if (!spec.image.empty()) ISB_TRY(resolve("image", spec.image));
  for (size_t i = 0; i < spec.mounts.size(); ++i)
    ISB_TRY(resolve("mounts[" + std::to_string(i) + "].source", spec.mounts[i].source));
  ISB_TRY(KeepIsbOut(spec));
  return spec;
}

Status SandboxManager::WriteTrustBundle(const Record& rec, const std::string& ca_pem) {
  ISB_ASSIGN_OR_RETURN(std::string bundle, TrustBundle(rec.spec.image.empty() ? "/" : rec.spec.image, ca_pem));
  ISB_TRY(isb::WriteFile(Dir(rec.id) + "/" + kTrustBundleFile, bundle, 0644));
  // A running sandbox's copy on its mounted layer, rewritten in place: its bind sees the new contents. A stopped
  // one's layer is not mounted (nothing is there); it gets the copy when it starts.
  if (std::error_code ec; std::filesystem::exists(Dir(rec.id) + "/layer/" + kTrustBundleFile, ec))
    return isb::WriteFile(Dir(rec.id) + "/layer/" + kTrustBundleFile, bundle, 0644);
  return {};
}

Status SandboxManager::CopyTrustBundleToLayer(const std::string& id) {
  ISB_ASSIGN_OR_RETURN(std::string bundle, isb::ReadFile(Dir(id) + "/" + kTrustBundleFile));
  return isb::WriteFile(Dir(id) + "/layer/" + kTrustBundleFile, bundle, 0644);
}

// A create, start or exec running: the pool's refill waits for none to be (refill_policy.h).
struct SandboxManager::Busy {
  explicit Busy(SandboxManager* m) : m_(m) {
    std::lock_guard lock(m_->pool_mu_);
    ++m_->busy_;
  }
  ~Busy() {
    std::lock_guard lock(m_->pool_mu_);
    if (--m_->busy_ > 0) return;
    m_->last_quiet_ = std::chrono::steady_clock::now();
    // Only a pool short of its size has a refill waiting for this; a full one's need not wake at every exec.
    if (m_->pool_.size() < m_->options_.pool_size ||
        (m_->options_.egress != nullptr && m_->net_pool_.size() < m_->options_.net_pool_size))
      m_->pool_cv_.notify_all();
  }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;
  SandboxManager* m_;
};

namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Result<api::SandboxInfo> SandboxManager::CreateFromPool(Pooled ready, Record rec, const egress::EgressSpec& egress) {
  const auto start = std::chrono::steady_clock::now();
  // Its own lock from before its row is seen until its creation is recorded (as a cold create's).
  SandboxLocks::Held held = locks_.Lock(ready.rec.id);
  rec.id = ready.rec.id;
  rec.pid = ready.rec.pid;
  rec.start_time = ready.rec.start_time;
  rec.lease_index = ready.rec.lease_index;
  rec.uid_base = ready.rec.uid_base;
  rec.state = "running";
  // Everything a cold launch would have given it from the spec, before the create returns; on failure it was never
  // created, and goes.
  Status fitted = [&]() -> Status {
    if (ready.net) {
      ISB_TRY(options_.egress->Assign(rec.id, egress, api::OrgOf(rec.spec)));
      AddNetworkEnvironment(rec.spec, *ready.net);
    }
    const api::SandboxSpec launched;
    engine::Limits limits;
    limits.memory_bytes = rec.spec.mem_limit;
    limits.millicpus = static_cast<uint32_t>(rec.spec.cpus * 1000 + 0.5);
    limits.pids = rec.spec.pids;
    if (rec.spec.mem_limit != launched.mem_limit || rec.spec.cpus != launched.cpus || rec.spec.pids != launched.pids) {
      engine::Cgroup cg = engine::Cgroup::Adopt(layout_, rec.id);
      Status set = cg.SetLimits(limits);
      cg.Release();
      ISB_TRY(set);
    }
    NamespaceFit fit;
    fit.hostname = rec.name;
    if (rec.spec.mem_limit != launched.mem_limit) fit.scratch_bytes = rec.spec.mem_limit;
    ISB_TRY(FitNamespaces(rec.pid, rec.start_time, fit));
    return ports_.Publish(rec.id, rec.pid, rec.spec.ports);
  }();
  // Created once its row is written (running, with its pid): a daemon killed before then leaves an orphan that the
  // next Adopt removes.
  Status ins = fitted;
  if (ins.ok()) {
    ins = db_->Exec(
        "INSERT INTO sandboxes(id, name, spec, state, created_at, expires_at, last_active_at, pid, start_time, "
        "lease_index, uid_base, org) VALUES(?1, ?2, ?3, 'running', ?4, ?5, ?4, ?6, ?7, ?8, ?9, ?10)",
        {rec.id, rec.name, spec::ToStoredJson(rec.spec), rec.created_at, rec.expires_at, static_cast<int64_t>(rec.pid),
         static_cast<int64_t>(rec.start_time), rec.lease_index, static_cast<int64_t>(rec.uid_base),
         api::OrgOf(rec.spec)});
    if (!ins.ok() && ins.error().code == Code::kConflict) ins = Error::Of(Code::kConflict, "name: '" + rec.name + "' is in use");
  }
  if (!ins.ok()) {
    Discard(rec);
    return ins.error();
  }
  Event(rec, "created");
  ISB_ASSIGN_OR_RETURN(api::SandboxInfo info, Info(rec));
  info.create_path = "pool";
  info.create_ms = MsSince(start);
  return info;
}

Result<api::SandboxInfo> SandboxManager::Create(const api::SandboxSpec& spec) {
  const auto start = std::chrono::steady_clock::now();
  Busy busy(this);
  ISB_TRY(spec::Validate(spec));
  ISB_TRY(CheckOnHost(spec));
  ISB_ASSIGN_OR_RETURN(egress::EgressSpec egress_spec, Egress(spec));
  ISB_ASSIGN_OR_RETURN(api::SandboxSpec resolved, ResolveMounts(spec));
  Record rec;
  rec.name = spec.name;
  rec.spec = std::move(resolved);
  rec.created_at = rec.last_active_at = Now();
  rec.expires_at = rec.created_at + spec.expires.count();
  // Refused before a pooled sandbox is spent on it (a cold launch refuses it too).
  ISB_TRY(PortsApartFromIsb(rec.spec));
  if (auto ready = TakeReady(PoolFor(rec.spec, egress_spec))) {
    ISB_ASSIGN_OR_RETURN(api::SandboxInfo info, CreateFromPool(std::move(*ready), std::move(rec), egress_spec));
    info.create_ms = MsSince(start);
    return info;
  }
  rec.id = NewId();
  if (rec.id.empty()) return Error::Msg("no randomness for a sandbox id");
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
  Event(rec, "created");
  ISB_ASSIGN_OR_RETURN(api::SandboxInfo info, Info(rec));
  info.create_path = "cold";
  info.create_ms = MsSince(start);
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
  ISB_ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT id FROM sandboxes WHERE state != 'creating' ORDER BY created_at, id"));
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
    std::lock_guard lock(m_->execs_mu_);
    ++m_->execs_running_[id_];
  }
  ~ExecRunning() {
    std::lock_guard lock(m_->execs_mu_);
    if (--m_->execs_running_[id_] <= 0) m_->execs_running_.erase(id_);
  }
  ExecRunning(const ExecRunning&) = delete;
  ExecRunning& operator=(const ExecRunning&) = delete;
  SandboxManager* m_;
  std::string id_;
};

Result<api::ExecResult> SandboxManager::Exec(const std::string& id_or_name, const api::ExecRequest& req,
                                             const api::OutputSink& sink) {
  Busy busy(this);
  ISB_TRY(spec::Validate(req));
  ISB_ASSIGN_OR_RETURN(Record rec, Load(id_or_name));
  if (rec.state != "running") return Error::Of(Code::kConflict, "sandbox '" + rec.id + "' is stopped; start it first");
  ExecRunning running(this, rec.id);
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
    return Error::Of(Code::kConflict, "sandbox '" + rec.id + "': its spec's " + ids.error().message + "; it runs no command");
  spec.uid = ids->first;
  spec.gid = ids->second;
  spec.stdin_data = req.stdin_data;
  spec.timeout = req.timeout;
  spec.output_limit = kExecOutputLimit;
  spec.cancelled = req.cancelled;
  std::string session;
  if (req.tty) {
    ISB_ASSIGN_OR_RETURN(session, ReserveTerminal(rec.id, req.caller));
    spec.tty = true;
    spec.rows = req.rows;
    spec.cols = req.cols;
    spec.on_terminal = [&](std::shared_ptr<engine::ExecTerminal> t) {
      {
        std::lock_guard lock(terminals_mu_);
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
      std::lock_guard lock(m->terminals_mu_);
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
  auto out = engine::ExecInSandbox(Dir(rec.id) + "/control.sock", spec,
                                   sink ? engine::ExecSink([&](int s, std::string_view d) { sink(s, d); })
                                        : engine::ExecSink());
  record_activity();
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
  return r;
}

Result<std::string> SandboxManager::ReserveTerminal(const std::string& sandbox, const std::string& caller) {
  ISB_ASSIGN_OR_RETURN(std::string hex, RandomHex(16));
  std::string session = "ts-" + hex;
  std::lock_guard lock(terminals_mu_);
  size_t live = 0;
  for (const auto& [id, t] : terminals_) live += t.sandbox == sandbox ? 1 : 0;
  if (live >= api::kMaxTerminalSessions) {
    return Error::Of(Code::kConflict, "sandbox '" + sandbox + "' has " + std::to_string(live) +
                                          " live terminal sessions, the most it may have; end one first");
  }
  terminals_[session] = Terminal{sandbox, caller, nullptr};
  return session;
}

Result<std::shared_ptr<engine::ExecTerminal>> SandboxManager::FindTerminal(const std::string& id_or_name,
                                                                           const std::string& session,
                                                                           const std::string& caller) {
  ISB_ASSIGN_OR_RETURN(Record rec, Load(id_or_name));
  std::lock_guard lock(terminals_mu_);
  auto it = terminals_.find(session);
  if (it == terminals_.end() || it->second.sandbox != rec.id || it->second.caller != caller || !it->second.terminal)
    return api::NoTerminalSession(session, id_or_name);
  return it->second.terminal;
}

Status SandboxManager::ExecInput(const std::string& id_or_name, const std::string& session, const std::string& caller,
                                 const std::string& data, bool eof) {
  if (data.size() > api::kMaxTerminalInputBytes) {
    return Error::Of(Code::kTooLarge, "data: at most " + std::to_string(api::kMaxTerminalInputBytes) +
                                          " bytes per call, got " + std::to_string(data.size()));
  }
  ISB_ASSIGN_OR_RETURN(auto terminal, FindTerminal(id_or_name, session, caller));
  ISB_TRY(terminal->Write(data, kTerminalInputWait));
  if (eof) ISB_TRY(terminal->SendEof(kTerminalInputWait));
  return {};
}

Status SandboxManager::ExecResize(const std::string& id_or_name, const std::string& session, const std::string& caller,
                                  uint16_t rows, uint16_t cols) {
  ISB_TRY(spec::ValidateTerminalSize(rows, cols));
  ISB_ASSIGN_OR_RETURN(auto terminal, FindTerminal(id_or_name, session, caller));
  return terminal->Resize(rows, cols);
}

Result<api::SandboxInfo> SandboxManager::Stop(const std::string& id_or_name) {
  std::optional<SandboxLocks::Held> held;
  ISB_ASSIGN_OR_RETURN(Record rec, LoadLocked(id_or_name, &held));
  if (rec.state == "running") ISB_TRY(Halt(rec, "stopped", "requested"));
  return Info(rec);
}

Result<api::SandboxInfo> SandboxManager::Start(const std::string& id_or_name) {
  Busy busy(this);
  std::optional<SandboxLocks::Held> held;
  ISB_ASSIGN_OR_RETURN(Record rec, LoadLocked(id_or_name, &held));
  if (rec.state == "running" && Alive(rec)) return Info(rec);
  if (rec.state == "running") ISB_TRY(Halt(rec, "died", "its init exited"));
  // Checked again at every start: a sandbox stored before isb's directories were kept out must not reach them
  // (such a sandbox can only be removed).
  ISB_TRY(KeepIsbOut(rec.spec));
  if (Status launched = Launch(rec); !launched.ok()) {
    // Back to stopped as it was: its processes, cgroups and uid range gone, its layer unmounted.
    (void)Halt(rec, "failed", launched.error().message);
    return launched.error();
  }
  rec.last_active_at = Now();
  (void)db_->Exec("UPDATE sandboxes SET last_active_at = ?2 WHERE id = ?1", {rec.id, rec.last_active_at});
  Event(rec, "started");
  return Info(rec);
}

Result<api::SandboxInfo> SandboxManager::Extend(const std::string& id_or_name, std::chrono::seconds by) {
  if (by.count() < 1) return Invalid("by: must be at least 1s");
  std::optional<SandboxLocks::Held> held;
  ISB_ASSIGN_OR_RETURN(Record rec, LoadLocked(id_or_name, &held));
  int64_t until = std::max(rec.expires_at, Now()) + by.count();
  if (until > Now() + spec::kMaxExpiresS) return Invalid("by: a sandbox expires at most 30 days from now");
  rec.expires_at = until;
  ISB_TRY(db_->Exec("UPDATE sandboxes SET expires_at = ?2 WHERE id = ?1", {rec.id, until}));
  Event(rec, "extended", std::to_string(by.count()) + "s");
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
  if (auto st = options_.egress->Update(rec.id, spec); !st.ok())
    return Error::Of(st.error().code, "egress: " + st.error().message);
  rec.spec = next;
  ISB_TRY(db_->Exec("UPDATE sandboxes SET spec = ?2 WHERE id = ?1", {rec.id, spec::ToStoredJson(rec.spec)}));
  Event(rec, "egress_changed");
  return Info(rec);
}

Status SandboxManager::Remove(const std::string& id_or_name) {
  std::string forgotten;
  Status retired;
  {
    std::optional<SandboxLocks::Held> held;
    ISB_ASSIGN_OR_RETURN(Record rec, LoadLocked(id_or_name, &held));
    retired = Retire(rec, "removed", "requested", &forgotten);
  }
  TearDown(forgotten);
  return retired;
}

Status SandboxManager::Retire(Record& rec, const std::string& event, const std::string& reason,
                              std::string* forgotten) {
  Status halted = Halt(rec, event, reason, /*unmount_layer=*/false);
  if (options_.egress != nullptr) options_.egress->Release(rec.id);
  // A row that cannot be deleted keeps its state dir: the sandbox stays, stopped, for another removal.
  ISB_TRY(db_->Exec("DELETE FROM sandboxes WHERE id = ?1", {rec.id}));
  {
    std::lock_guard lock(samples_mu_);
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

Result<api::FileData> SandboxManager::ReadFile(const std::string& id_or_name, const std::string& path) {
  ISB_ASSIGN_OR_RETURN(Record rec, Load(id_or_name));
  if (!Alive(rec)) return Error::Of(Code::kConflict, "sandbox '" + rec.id + "' is not running");
  auto [uid, gid] = HostUser(rec.spec, rec.uid_base);
  ISB_TRY(CheckPath(path));
  ISB_ASSIGN_OR_RETURN(Fd root, SandboxRoot(rec.pid, rec.start_time));
  ISB_ASSIGN_OR_RETURN(Fd fd, OpenInRoot(root.get(), path, O_RDONLY, uid, gid));
  ISB_TRY(CheckServed(root.get(), fd.get(), path));
  struct stat st{};
  ::fstat(fd.get(), &st);
  if (static_cast<uint64_t>(st.st_size) > kMaxRead)
    return Error::Of(Code::kTooLarge, "path: " + path + " is larger than 4 MiB");
  api::FileData out;
  out.mode = st.st_mode & 07777;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::Sys("read " + path);
    if (n == 0) break;
    out.content.append(buf, static_cast<size_t>(n));
    if (out.content.size() > kMaxRead) return Error::Of(Code::kTooLarge, "path: " + path + " is larger than 4 MiB");
  }
  return out;
}

namespace {
std::string ModeText(unsigned mode) {
  char text[8];
  std::snprintf(text, sizeof text, "0%03o", mode);
  return text;
}
}  // namespace

Status SandboxManager::WriteFile(const std::string& id_or_name, const std::string& path, const api::FileData& data) {
  if (data.content.size() > kMaxWrite) return Error::Of(Code::kTooLarge, "content: at most 2 MiB");
  if (data.mode > 0777) return Invalid("mode: only permission bits (at most 0777)");
  ISB_ASSIGN_OR_RETURN(Record rec, Load(id_or_name));
  if (!Alive(rec)) return Error::Of(Code::kConflict, "sandbox '" + rec.id + "' is not running");
  // Created as the sandbox's user, as if it had written the file itself.
  auto [uid, gid] = HostUser(rec.spec, rec.uid_base);
  ISB_TRY(CheckPath(path));
  ISB_ASSIGN_OR_RETURN(Fd root, SandboxRoot(rec.pid, rec.start_time));
  // A file that is there, or else a new one, made only in a directory that is not on a refused mount (checked
  // before anything is made there), and never at the end of a symlink: a name that is a symlink to nothing is
  // refused, as cp refuses to write through one.
  Result<Fd> opened = OpenInRoot(root.get(), path, O_WRONLY, uid, gid);
  if (!opened.ok() && opened.error().code == Code::kNotFound) {
    const size_t slash = path.find_last_of('/');
    const std::string name = path.substr(slash + 1);
    if (name.empty() || name == "." || name == "..") return Invalid("path: " + path + " names no file");
    ISB_ASSIGN_OR_RETURN(Fd dir, OpenInRoot(root.get(), slash == 0 ? "/" : path.substr(0, slash),
                                            O_PATH | O_DIRECTORY, uid, gid));
    if (OnRefusedMount(root.get(), dir.get())) return RefusedError(path);
    // Made in that very directory, so no swap of a directory in the path between the check and here matters.
    opened = OpenAs(dir.get(), name, path, O_WRONLY | O_CREAT | O_EXCL, data.mode,
                    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, uid, gid);
    if (!opened.ok() && opened.error().code == Code::kConflict) {
      return Error::Of(Code::kConflict, "path: " + path + " is a symlink to nothing, or was made meanwhile; a "
                                        "symlink is never followed to make a file");
    }
  }
  if (!opened.ok()) return opened.error();
  Fd fd = std::move(*opened);
  ISB_TRY(CheckServed(root.get(), fd.get(), path));
  // Changed only once the mode is set: a mode the user may not give (a file it can write but does not own) is
  // refused with the file as it was.
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return Error::Sys("stat " + path);
  if ((st.st_mode & 07777) != data.mode) {
    AsSandboxUser as(uid, gid);
    if (::fchmod(fd.get(), data.mode) != 0) {
      if (errno == EPERM)
        return Error::Of(Code::kForbidden, "mode: the sandbox's user does not own " + path + ", so it may not change "
                                           "its mode; send the mode it has (" + ModeText(st.st_mode & 07777) + ")");
      return Error::Sys("chmod " + path);
    }
  }
  // The space is taken before a byte changes, so a full disk or tmpfs refuses the write with the file as it was
  // (a file system that cannot reserve space ahead is written as it comes). The new content then goes over the old
  // from the start, and what is left of the old past its end is cut.
  auto no_space = [&] { return Error::Of(Code::kTooLarge, "path: no space left for " + path + " in the sandbox"); };
  if (!data.content.empty() &&
      ::fallocate(fd.get(), FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(data.content.size())) != 0 &&
      (errno == ENOSPC || errno == EDQUOT)) {
    return no_space();
  }
  size_t off = 0;
  while (off < data.content.size()) {
    ssize_t n = ::pwrite(fd.get(), data.content.data() + off, data.content.size() - off, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == ENOSPC || errno == EDQUOT)) return no_space();
    if (n < 0) return Error::Sys("write " + path);
    off += static_cast<size_t>(n);
  }
  if (::ftruncate(fd.get(), static_cast<off_t>(data.content.size())) != 0) return Error::Sys("truncate " + path);
  return {};
}

Result<std::string> SandboxManager::Adopt() {
  SandboxLocks::Held all = locks_.LockAll();
  int adopted = 0, died = 0, undone = 0, orphans = 0;
  ISB_ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT id, state FROM sandboxes"));
  std::set<std::string> known;
  for (const auto& r : rows) {
    std::string id = AsText(r[0]), state = AsText(r[1]);
    known.insert(id);
    if (state == "creating") {
      // The previous daemon died mid-create: nobody was told of this sandbox. Undo it.
      engine::Cgroup cg = engine::Cgroup::Adopt(layout_, id);
      (void)cg.Remove();
      RemoveDir(id);
      (void)db_->Exec("DELETE FROM sandboxes WHERE id = ?1", {id});
      ++undone;
      continue;
    }
    auto rec = Load(id);
    if (!rec.ok()) continue;
    // Its address and rules, running or stopped: a stopped sandbox gets them back when it starts.
    if (auto slot = isb::ReadFile(Dir(id) + "/net_slot"); slot.ok() && options_.egress != nullptr) {
      Result<egress::EgressSpec> spec = ParseSandboxEgress(rec->spec.egress);
      std::string_view text = *slot;
      while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
      // nullopt: a file a crash left empty or cut short.
      std::optional<uint32_t> index = ParseDecimal<uint32_t>(text);
      Status st = !spec.ok() ? Status(spec.error())
                  : !index   ? Status(Error::Msg("its net_slot file does not hold a slot number"))
                             : options_.egress->Adopt(id, *index, *spec, api::OrgOf(rec->spec),
                                                      rec->state == "running" ? rec->pid : 0, rec->start_time);
      // A new daemon has a new CA for the sandbox (CAs are kept in memory only): its trust store follows.
      if (st.ok() && std::filesystem::exists(Dir(id) + "/" + kTrustBundleFile)) {
        Result<std::string> ca = options_.egress->SandboxCaPem(id);
        st = ca.ok() ? WriteTrustBundle(*rec, *ca) : Status(ca.error());
      }
      if (!st.ok()) std::fprintf(stderr, "isb: sandbox %s: egress not restored: %s\n", id.c_str(), st.error().message.c_str());
    }
    if (rec->state != "running") {
      // A daemon killed in the middle of a start may have left its sandbox running with the row not yet saying so,
      // and one killed in the middle of a stop its layer mounted: nothing of a stopped sandbox may live on.
      (void)engine::Cgroup::Adopt(layout_, id).Remove();
      (void)Layer(id).Detach();
      continue;
    }
    if (Alive(*rec)) {
      // One made before isb kept its own directories out, and mounting one, is stopped rather than left seeing it.
      if (Status kept = KeepIsbOut(rec->spec); !kept.ok()) {
        std::fprintf(stderr, "isb: sandbox %s stopped: %s\n", id.c_str(), kept.error().message.c_str());
        (void)Halt(*rec, "stopped", kept.error().message);
        continue;
      }
      // A port taken while no daemon ran is another program's: the sandbox is halted as a start that could not
      // publish is, rather than run while that program answers on its port.
      Status p = PortsApartFromIsb(rec->spec);
      if (p.ok()) p = ports_.Publish(id, rec->pid, rec->spec.ports);
      if (!p.ok()) {
        std::fprintf(stderr, "isb: sandbox %s stopped: %s\n", id.c_str(), p.error().message.c_str());
        (void)Halt(*rec, "failed", p.error().message);
        continue;
      }
      Event(*rec, "adopted");
      ++adopted;
    } else {
      (void)Halt(*rec, "died", "exited while no daemon was running");
      ++died;
    }
  }
  // cgroups of this daemon's sandboxes that the database no longer knows (their state dir is still here): kill
  // and remove. Other daemons' sandboxes and isb run's (run-*) are not this daemon's to touch.
  for (const std::string* root : {&layout_.memory, &layout_.v2_root}) {
    std::error_code ec;
    if (root->empty()) continue;
    for (const auto& e : std::filesystem::directory_iterator(*root + "/isb", ec)) {
      std::string name = e.path().filename().string();
      if (!e.is_directory() || !name.starts_with("sb-") || known.count(name) ||
          !std::filesystem::exists(Dir(name)))
        continue;
      engine::Cgroup cg = engine::Cgroup::Adopt(layout_, name);
      (void)cg.Remove();
      RemoveDir(name);
      ++orphans;
    }
  }
  // State dirs the database does not know and no cgroup led to (a pooled sandbox's layer made before its launch):
  // their layers are unmounted and their images removed.
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(options_.state_dir + "/sandboxes", ec)) {
    std::string name = e.path().filename().string();
    if (!name.starts_with("sb-") || known.count(name)) continue;
    RemoveDir(name);
  }
  // Lease files whose holder is gone.
  for (const auto& e : std::filesystem::directory_iterator(engine::IdAllocator::kHostLeaseDir, ec)) {
    try {
      engine::IdAllocator::ForHost().Reclaim(static_cast<uint32_t>(std::stoul(e.path().filename().string())));
    } catch (...) {
    }
  }
  const bool pooling = options_.pool_size > 0 || (options_.egress != nullptr && options_.net_pool_size > 0);
  if (pooling && !pool_thread_.joinable()) pool_thread_ = std::thread([this] { FillPool(); });
  return std::to_string(adopted) + " adopted, " + std::to_string(died) + " found dead, " + std::to_string(undone) +
         " unfinished creates undone, " + std::to_string(orphans) + " orphaned cgroups removed";
}

int SandboxManager::ReapOnce() {
  auto rows = db_->Query("SELECT id FROM sandboxes WHERE state != 'creating'");
  if (!rows.ok()) return 0;
  int removed = 0;
  for (const auto& r : *rows) {
    std::string id = AsText(r[0]);
    std::string why, forgotten;
    {
      SandboxLocks::Held held = locks_.Lock(id);
      // Whether an exec runs is looked at before the row is read (and again below): an exec that ends between the
      // two has written its activity before it stops counting as running, so the row read after shows it.
      bool exec_ran;
      {
        std::lock_guard exec_lock(execs_mu_);
        exec_ran = execs_running_.count(id) != 0;
      }
      auto rec = Load(id);  // re-checked under the lock: an exec or extend may have come in meanwhile
      if (!rec.ok()) continue;
      // One that died (its command crashed it, the OOM killer) is recorded as such and frees its ports, layer
      // and range now, not when someone next asks for it.
      if (rec->state == "running" && !Alive(*rec)) {
        (void)Halt(*rec, "died", "its init exited");
        continue;
      }
      const int64_t now = Now();
      uint64_t cpu = 0;
      if (rec->state == "running") {
        engine::Cgroup cg = engine::Cgroup::Adopt(layout_, id);
        if (auto st = cg.ReadStats(); st.ok()) cpu = st->cpu_usec;
        cg.Release();
      }
      // Idle needs a measured share under 2% since the last pass: on a daemon's first pass there is none yet, and
      // an exec running now (however quiet) is activity.
      bool busy = true, measured_busy = false;
      {
        std::lock_guard samples_lock(samples_mu_);
        auto prev = cpu_samples_.find(id);
        if (prev != cpu_samples_.end() && now > prev->second.first && cpu >= prev->second.second) {
          double share =
              static_cast<double>(cpu - prev->second.second) / 1e6 / static_cast<double>(now - prev->second.first);
          busy = measured_busy = share >= 0.02;
        }
        cpu_samples_[id] = {now, cpu};
      }
      // A share of 2% or more is activity, as an exec is: idle means under 2% for the whole idle_timeout, so a
      // sandbox whose background work has just ended is not removed at the first quiet pass.
      if (measured_busy && rec->last_active_at < now) {
        rec->last_active_at = now;
        (void)db_->Exec("UPDATE sandboxes SET last_active_at = ?2 WHERE id = ?1 AND last_active_at < ?2", {id, now});
      }
      {
        std::lock_guard exec_lock(execs_mu_);
        if (exec_ran || execs_running_.count(id)) busy = true;
      }
      if (now >= rec->expires_at) {
        why = "expired";
      } else if (now - rec->last_active_at >= rec->spec.idle_timeout.count() && !busy) {
        why = "idle for " + std::to_string(now - rec->last_active_at) + "s (no exec, under 2% of a core)";
      }
      if (why.empty()) continue;
      (void)Retire(*rec, "reaped", why, &forgotten);
      ++removed;
    }
    TearDown(forgotten);
  }
  return removed;
}

}  // namespace isb::daemon
