// Files inside a running sandbox: read and written as its own user, reached only through its root, never on isb's
// own mounts or the kernel's trees.
#include "daemon/sandbox_manager.h"

#include "api/org_sandboxes.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
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
#include "daemon/sandbox_record.h"

namespace isb::daemon {

using nlohmann::json;
using store::AsInt;
using store::AsText;

namespace {

constexpr size_t kMaxRead = 4 << 20;
constexpr size_t kMaxWrite = 2 << 20;

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
  AsSandboxUser(uid_t uid, gid_t gid) : dumpable_(::prctl(PR_GET_DUMPABLE)) {
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
    // A change of the fs ids sets the process's dumpable flag to fs.suid_dumpable: the daemon's (0: no core dump
    // of the values it holds) is put back.
    if (dumpable_ >= 0) ::prctl(PR_SET_DUMPABLE, dumpable_);
  }
  AsSandboxUser(const AsSandboxUser&) = delete;
  AsSandboxUser& operator=(const AsSandboxUser&) = delete;

 private:
  int dumpable_;
  std::vector<gid_t> groups_;
};

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
    err.code = e == ENOENT                                                                    ? Code::kNotFound
               : e == EISDIR || e == ENOTDIR || e == ELOOP || e == ENXIO || e == ENAMETOOLONG ? Code::kInvalidArgument
               : e == EACCES || e == EPERM || e == EROFS || e == EXDEV                        ? Code::kForbidden
               : e == ETXTBSY || e == EAGAIN || e == EEXIST                                   ? Code::kConflict
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
  struct statx sx {};
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
  struct stat st {};
  struct statfs sf {};
  if (::fstat(fd, &st) != 0 || ::fstatfs(fd, &sf) != 0) return Error::Sys("stat " + path);
  if (!S_ISREG(st.st_mode)) return Invalid("path: " + path + " is not a regular file");
  for (unsigned long magic : std::initializer_list<unsigned long>{
           PROC_SUPER_MAGIC, SYSFS_MAGIC, DEVPTS_SUPER_MAGIC, CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC, DEBUGFS_MAGIC,
           SECURITYFS_MAGIC, BPF_FS_MAGIC, TRACEFS_MAGIC})
    if (static_cast<unsigned long>(sf.f_type) == magic)
      return Error::Of(Code::kForbidden, "path: " + path + " is on a refused filesystem");
  if (OnRefusedMount(root, fd)) return RefusedError(path);
  return {};
}

}  // namespace

Result<api::FileData> SandboxManager::ReadFile(const std::string& id_or_name, const std::string& path) {
  ISB_ASSIGN_OR_RETURN(Record rec, Load(id_or_name));
  if (!Alive(rec)) return Error::Of(Code::kConflict, "sandbox '" + rec.id + "' is not running");
  auto [uid, gid] = HostUser(rec.spec, rec.uid_base);
  ISB_TRY(CheckPath(path));
  ISB_ASSIGN_OR_RETURN(Fd root, runtime_->OpenRoot(Handle(rec)));
  ISB_ASSIGN_OR_RETURN(Fd fd, OpenInRoot(root.get(), path, O_RDONLY, uid, gid));
  ISB_TRY(CheckServed(root.get(), fd.get(), path));
  struct stat st {};
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
  ISB_ASSIGN_OR_RETURN(Fd root, runtime_->OpenRoot(Handle(rec)));
  // A file that is there, or else a new one, made only in a directory that is not on a refused mount (checked
  // before anything is made there), and never at the end of a symlink: a name that is a symlink to nothing is
  // refused, as cp refuses to write through one.
  Result<Fd> opened = OpenInRoot(root.get(), path, O_WRONLY, uid, gid);
  if (!opened.ok() && opened.error().code == Code::kNotFound) {
    const size_t slash = path.find_last_of('/');
    const std::string name = path.substr(slash + 1);
    if (name.empty() || name == "." || name == "..") return Invalid("path: " + path + " names no file");
    ISB_ASSIGN_OR_RETURN(
        Fd dir, OpenInRoot(root.get(), slash == 0 ? "/" : path.substr(0, slash), O_PATH | O_DIRECTORY, uid, gid));
    if (OnRefusedMount(root.get(), dir.get())) return RefusedError(path);
    // Made in that very directory, so no swap of a directory in the path between the check and here matters.
    opened = OpenAs(dir.get(), name, path, O_WRONLY | O_CREAT | O_EXCL, data.mode,
                    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, uid, gid);
    if (!opened.ok() && opened.error().code == Code::kConflict) {
      return Error::Of(Code::kConflict, "path: " + path +
                                            " is a symlink to nothing, or was made meanwhile; a "
                                            "symlink is never followed to make a file");
    }
  }
  if (!opened.ok()) return opened.error();
  Fd fd = std::move(*opened);
  ISB_TRY(CheckServed(root.get(), fd.get(), path));
  // Changed only once the mode is set: a mode the user may not give (a file it can write but does not own) is
  // refused with the file as it was.
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::Sys("stat " + path);
  if ((st.st_mode & 07777) != data.mode) {
    AsSandboxUser as(uid, gid);
    if (::fchmod(fd.get(), data.mode) != 0) {
      if (errno == EPERM)
        return Error::Of(Code::kForbidden, "mode: the sandbox's user does not own " + path +
                                               ", so it may not change "
                                               "its mode; send the mode it has (" +
                                               ModeText(st.st_mode & 07777) + ")");
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

// ---- secrets given as files ----

Status SandboxManager::CheckSecretFiles(const api::SandboxSpec& spec) const {
  if (spec.secrets.empty()) return {};
  if (options_.secrets == nullptr)
    return Error::Of(Code::kUnavailable, "secrets: the daemon runs without a secret store");
  for (const spec::SpecSecretFile& f : spec.secrets) ISB_TRY(options_.secrets->FileSecret(api::OrgOf(spec), f.name));
  return {};
}

Status SandboxManager::WriteSecretFiles(const Record& rec, const std::string& only) {
  if (rec.spec.secrets.empty()) return {};
  if (options_.secrets == nullptr)
    return Error::Of(Code::kUnavailable, "secrets: the daemon runs without a secret store");
  auto [uid, gid] = HostUser(rec.spec, rec.uid_base);
  ISB_ASSIGN_OR_RETURN(Fd root, runtime_->OpenRoot(Handle(rec)));
  ISB_ASSIGN_OR_RETURN(Fd dir, OpenInRoot(root.get(), spec::kSecretsDir, O_PATH | O_DIRECTORY, uid, gid));
  // Only on the tmpfs isb mounted there: a sandbox that took it away (its root may unmount it) gets no file in its
  // layer, where the value would outlive it.
  struct statfs sf {};
  std::optional<FilePlace> at = PlaceOf(dir.get()), top = PlaceOf(root.get());
  if (::fstatfs(dir.get(), &sf) != 0 || static_cast<unsigned long>(sf.f_type) != TMPFS_MAGIC || !at || !top ||
      at->Same(*top))
    return Error::Of(Code::kConflict, std::string("secrets: ") + spec::kSecretsDir +
                                          " in the sandbox is not the tmpfs isb mounted there; no file is written");
  const size_t prefix = std::string(spec::kSecretsDir).size() + 1;
  for (const spec::SpecSecretFile& f : rec.spec.secrets) {
    if (!only.empty() && f.name != only) continue;
    const std::string file = f.target.substr(prefix), fresh = "." + file + ".isb-new";
    Result<secrets::SecretStore::Value> secret = options_.secrets->FileSecret(api::OrgOf(rec.spec), f.name);
    AsSandboxUser as(uid, gid);
    if (!secret.ok()) {
      if (secret.error().code != Code::kNotFound) return secret.error();
      (void)::unlinkat(dir.get(), file.c_str(), 0);  // deleted: the sandbox has it no more
      continue;
    }
    // Written beside, then renamed over: a reader sees one version whole.
    open_how how{};
    // Non-blocking: a FIFO the sandbox put there fails (ENXIO) rather than holding the daemon.
    how.flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
    how.mode = f.mode;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    Fd out(static_cast<int>(::syscall(SYS_openat2, dir.get(), fresh.c_str(), &how, sizeof how)));
    if (!out.valid()) return Error::Sys("secrets: write " + f.target);
    struct stat st {};
    if (::fstat(out.get(), &st) != 0 || !S_ISREG(st.st_mode))
      return Error::Of(Code::kConflict, "secrets: " + f.target + " is not a regular file; no value is written");
    std::string_view value = secret->value.view();
    while (!value.empty()) {
      ssize_t n = ::write(out.get(), value.data(), value.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Error::Sys("secrets: write " + f.target);
      value.remove_prefix(static_cast<size_t>(n));
    }
    if (::fchmod(out.get(), f.mode) != 0 || ::renameat(dir.get(), fresh.c_str(), dir.get(), file.c_str()) != 0)
      return Error::Sys("secrets: write " + f.target);
  }
  return {};
}

void SandboxManager::SecretChanged(const std::string& org, const std::string& name) {
  auto rows = db_->Query("SELECT id FROM sandboxes WHERE org = ?1 AND state = 'running'", {org});
  if (!rows.ok()) return;
  for (const auto& row : *rows) {
    std::optional<SandboxLocks::Held> held;
    Result<Record> rec = LoadLocked(AsText(row[0]), &held);
    if (!rec.ok() || rec->state != "running") continue;
    bool uses = std::any_of(rec->spec.secrets.begin(), rec->spec.secrets.end(),
                            [&](const spec::SpecSecretFile& f) { return f.name == name; });
    if (!uses) continue;
    if (Status st = WriteSecretFiles(*rec, name); !st.ok())
      std::fprintf(stderr, "isb: secrets: %s: %s\n", rec->id.c_str(), st.error().message.c_str());
  }
}

}  // namespace isb::daemon
