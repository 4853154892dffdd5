// Rootfs planning and execution.
#include "engine/mounts.h"

#include <fcntl.h>
#include <ftw.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>

#include "base/file.h"
#include "base/units.h"
#include "engine/idmap.h"
#include "engine/image_trees.h"

namespace isb::engine {
std::string HostsFile(const std::string& hostname) { return "127.0.0.1 localhost " + hostname + "\n::1 localhost\n"; }

std::string ScratchTmpfs(uint64_t bytes) {
  return bytes == 0 ? "mode=1777" : "mode=1777,size=" + std::to_string((bytes + 4095) / 4096 * 4096);
}

namespace {

constexpr unsigned long kRoBind = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV;

// The host directories that make up the default view, when no image is given.
constexpr const char* kHostDirs[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};
// What of the host's /etc the default view shows: the dynamic loader's cache (ld.so.conf only matters to
// ldconfig), the alternatives symlinks that /usr depends on, TLS roots and the time zone. Nothing that names the
// host's users, services or secrets. Each is a mount, and mounts are most of a sandbox's start-up: keep it short.
constexpr const char* kHostEtc[] = {"ld.so.cache", "alternatives", "ssl", "localtime"};
// OCI's default masked and read-only /proc paths.
constexpr const char* kMaskedFiles[] = {"kcore",       "keys",     "latency_stats", "timer_list", "timer_stats",
                                        "sched_debug", "kallsyms", "kpageflags",    "kpagecount", "kpagecgroup"};
constexpr const char* kMaskedDirs[] = {"acpi", "asound", "scsi", "driver"};
constexpr const char* kReadOnly[] = {"bus", "fs", "irq", "sys", "sysrq-trigger"};
constexpr const char* kDevices[] = {"null", "zero", "full", "random", "urandom", "tty"};
constexpr int kMaxPtys = 64;

const char kPasswd[] =
    "root:x:0:0:root:/root:/bin/sh\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
const char kGroup[] = "root:x:0:\ntty:x:5:\nnogroup:x:65534:\n";
const char kNsswitch[] = "passwd: files\ngroup: files\nhosts: files dns\n";

bool IsDir(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status CheckAbsolute(const std::string& path, const char* what) {
  if (path.empty() || path[0] != '/' || path.find("/../") != std::string::npos || path.ends_with("/.."))
    return Error::Msg(std::string(what) + " '" + path + "' must be an absolute path without '..'");
  return {};
}

class Planner {
 public:
  explicit Planner(RootfsPlan* plan) : p_(plan) {}

  void Mount(const std::string& src, const std::string& dst, const char* fstype, unsigned long flags,
             const std::string& data = "", bool optional = false) {
    p_->Add({MountStep::kMount, p_->Keep(src), p_->Keep(dst), fstype, flags, data.empty() ? nullptr : p_->Keep(data), 0,
             optional});
  }
  void Bind(const std::string& src, const std::string& dst, bool read_only, bool optional = false) {
    Mount(src, dst, nullptr, MS_BIND | MS_REC, "", optional);
    if (read_only) LockTree(dst, true, optional);
  }
  // A caller's bind: its source is reached without following symlinks (the caller resolved it beforehand). Nosuid
  // and nodev even when writable.
  void BindNoFollow(const std::string& src, const std::string& dst, bool read_only) {
    p_->Add({MountStep::kBindNoFollow, p_->Keep(src), p_->Keep(dst), nullptr, 0, nullptr, 0, false});
    LockTree(dst, read_only);
  }
  // Image layer `layer` at `dst`: the parent's idmapped tree, else a bind as BindNoFollow; read-only, nosuid, nodev.
  void Image(const std::string& src, const std::string& dst, size_t layer) {
    p_->Add({MountStep::kImage, p_->Keep(src), p_->Keep(dst), nullptr, 0, nullptr, 0, false, false, layer});
    LockTree(dst, true);
  }
  // Nosuid, nodev and (when asked) read-only for the bind at `dst` and every mount that came along with it.
  void LockTree(const std::string& dst, bool read_only, bool optional = false) {
    TreeAttrs(dst, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (read_only ? MOUNT_ATTR_RDONLY : 0), optional);
  }
  // `attrs` (MOUNT_ATTR_*) added to the mount at `dst` and every mount below it.
  void TreeAttrs(const std::string& dst, unsigned long attrs, bool optional = false) {
    p_->Add({MountStep::kTreeAttrs, nullptr, p_->Keep(dst), nullptr, attrs, nullptr, 0, optional});
  }
  void Chdir(const std::string& dst) {
    p_->Add({MountStep::kChdir, nullptr, p_->Keep(dst), nullptr, 0, nullptr, 0, false});
  }
  void Mkdir(const std::string& dst, unsigned mode = 0755) {
    p_->Add({MountStep::kMkdir, nullptr, p_->Keep(dst), nullptr, 0, nullptr, mode, false});
  }
  void MkdirBestEffort(const std::string& dst) {
    p_->Add({MountStep::kMkdir, nullptr, p_->Keep(dst), nullptr, 0, nullptr, 0755, false, true});
  }
  // mkdir -p for a path under `root`, one step per component.
  void MkdirAll(const std::string& root, const std::string& path) {
    for (size_t i = 1; i <= path.size(); ++i)
      if (i == path.size() || path[i] == '/') Mkdir(root + path.substr(0, i));
  }
  void Touch(const std::string& dst) {
    p_->Add({MountStep::kTouch, nullptr, p_->Keep(dst), nullptr, 0, nullptr, 0644, false});
  }
  void Symlink(const std::string& target, const std::string& dst) {
    p_->Add({MountStep::kSymlink, p_->Keep(target), p_->Keep(dst), nullptr, 0, nullptr, 0, false});
  }
  void Write(const std::string& dst, const std::string& contents) {
    p_->Add({MountStep::kWriteFile, p_->Keep(contents), p_->Keep(dst), nullptr, 0, nullptr, 0644, false});
  }
  // Best effort: an image's /etc that the sandbox's root does not own (an image bound without its id mapping)
  // keeps its own files.
  void Replace(const std::string& dst, const std::string& contents) {
    p_->Add({MountStep::kReplaceFile, p_->Keep(contents), p_->Keep(dst), nullptr, 0, nullptr, 0644, false, true});
  }
  void Pivot(const std::string& root) {
    p_->Add({MountStep::kPivotRoot, nullptr, p_->Keep(root), nullptr, 0, nullptr, 0, false});
  }

 private:
  RootfsPlan* p_;
};

void PlanHostView(Planner& pl, const std::string& root, const SandboxConfig& config) {
  for (const char* d : kHostDirs) {
    std::string host = std::string("/") + d;
    char link[4096];
    ssize_t n = ::readlink(host.c_str(), link, sizeof link - 1);
    if (n > 0) {
      pl.Symlink(std::string(link, static_cast<size_t>(n)), root + host);
    } else if (IsDir(host)) {
      pl.Mkdir(root + host);
      pl.Bind(host, root + host, true);
    }
  }
  pl.Mkdir(root + "/etc");
  pl.Write(root + "/etc/passwd", kPasswd);
  pl.Write(root + "/etc/group", kGroup);
  pl.Write(root + "/etc/nsswitch.conf", kNsswitch);
  pl.Write(root + "/etc/hostname", config.hostname + "\n");
  pl.Write(root + "/etc/hosts", HostsFile(config.hostname));
  pl.Write(root + "/etc/resolv.conf", config.resolv_conf);
  for (const char* e : kHostEtc) {
    std::string host = std::string("/etc/") + e;
    struct stat st {};
    if (::lstat(host.c_str(), &st) != 0) continue;
    char link[4096];
    ssize_t n;
    if (S_ISLNK(st.st_mode) && (n = ::readlink(host.c_str(), link, sizeof link - 1)) > 0) {
      pl.Symlink(std::string(link, static_cast<size_t>(n)), root + host);
    } else if (S_ISDIR(st.st_mode)) {
      pl.Mkdir(root + host);
      pl.Bind(host, root + host, true);
      // The TLS roots, not the host's TLS keys: unreadable to a sandbox with a user namespace anyway (the
      // directory is root's), but a privileged sandbox's root would read them.
      if (std::strcmp(e, "ssl") == 0 && IsDir("/etc/ssl/private"))
        pl.Mount("tmpfs", root + "/etc/ssl/private", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0");
    } else if (S_ISREG(st.st_mode)) {
      pl.Touch(root + host);
      pl.Bind(host, root + host, true);
    }
  }
  for (const char* d : {"/root", "/home", "/var", "/var/tmp", "/run", "/opt", "/mnt"}) pl.Mkdir(root + d);
}

void PlanProc(Planner& pl, const std::string& root) {
  const std::string proc = root + "/proc";
  pl.Mkdir(proc, 0555);
  pl.Mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC);
  // The sandbox's /proc has what the host's has (one kernel): masks for entries this kernel lacks are left out.
  auto exists = [](const char* name) { return ::access((std::string("/proc/") + name).c_str(), F_OK) == 0; };
  for (const char* f : kMaskedFiles)
    if (exists(f)) pl.Mount("/dev/null", proc + "/" + f, nullptr, MS_BIND, "", true);
  for (const char* d : kMaskedDirs)
    if (exists(d))
      pl.Mount("tmpfs", proc + "/" + d, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0", true);
  for (const char* r : kReadOnly) {
    if (!exists(r)) continue;
    pl.Mount(proc + "/" + r, proc + "/" + r, nullptr, MS_BIND | MS_REC, "", true);
    pl.Mount("", proc + "/" + r, nullptr, kRoBind | MS_NOEXEC, "", true);
  }
}

void PlanDev(Planner& pl, const std::string& root, uint64_t scratch_bytes) {
  const std::string dev = root + "/dev";
  pl.Mkdir(dev);
  // Not nodev: the device nodes below are binds of the host's, whose own mount decides; nothing can be created
  // here anyway (no CAP_MKNOD).
  pl.Mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k");
  // Read-only binds (not nodev: they are devices): reads and writes of a device go on, but its mode and owner (the
  // host's own /dev/null's) are out of reach even of a privileged sandbox's root.
  for (const char* d : kDevices) {
    pl.Touch(dev + "/" + d);
    pl.Mount(std::string("/dev/") + d, dev + "/" + d, nullptr, MS_BIND);
    pl.TreeAttrs(dev + "/" + d, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID);
  }
  pl.Mkdir(dev + "/pts");
  // At most kMaxPtys terminals: every devpts instance draws on the host's one pool (kernel.pty.max, 4096 less the
  // 1024 kept for the host's own), which a sandbox would otherwise empty for every other.
  pl.Mount("devpts", dev + "/pts", "devpts", MS_NOSUID | MS_NOEXEC,
           "newinstance,ptmxmode=0666,mode=0620,gid=5,max=" + std::to_string(kMaxPtys));
  pl.Symlink("pts/ptmx", dev + "/ptmx");
  pl.Mkdir(dev + "/shm");
  pl.Mount("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV, ScratchTmpfs(scratch_bytes));
  pl.Symlink("/proc/self/fd", dev + "/fd");
  pl.Symlink("/proc/self/fd/0", dev + "/stdin");
  pl.Symlink("/proc/self/fd/1", dev + "/stdout");
  pl.Symlink("/proc/self/fd/2", dev + "/stderr");
}

}  // namespace

const char* RootfsPlan::Keep(std::string s) {
  strings_.push_back(std::move(s));
  return strings_.back().c_str();
}

std::string RootfsPlan::Describe(size_t i) const {
  if (i >= steps_.size()) return "unknown step";
  const MountStep& s = steps_[i];
  auto str = [](const char* p) { return std::string(p ? p : ""); };
  switch (s.kind) {
    case MountStep::kMount:
      if (s.flags & MS_REMOUNT) return "remount " + str(s.target) + " read-only";
      return "mount " + (s.fstype ? str(s.fstype) : "bind of " + str(s.source)) + " on " + str(s.target);
    case MountStep::kMkdir:
      return "create directory " + str(s.target);
    case MountStep::kTouch:
      return "create mount point " + str(s.target);
    case MountStep::kSymlink:
      return "create symlink " + str(s.target);
    case MountStep::kWriteFile:
      return "write " + str(s.target);
    case MountStep::kReplaceFile:
      return "replace " + str(s.target);
    case MountStep::kPivotRoot:
      return "pivot_root into " + str(s.target);
    case MountStep::kChdir:
      return "change directory to " + str(s.target);
    case MountStep::kBindNoFollow:
      return "bind " + str(s.source) + " (no symlinks) on " + str(s.target);
    case MountStep::kImage:
      return "image " + str(s.source) + " (no symlinks) on " + str(s.target);
    case MountStep::kTreeAttrs:
      return std::string("make ") + str(s.target) + " and the mounts below it " +
             (s.flags & MOUNT_ATTR_RDONLY ? "read-only, " : "") +
             (s.flags & MOUNT_ATTR_NODEV ? "nosuid and nodev" : "nosuid");
  }
  return "unknown step";
}

std::string StagingDir(const std::string& runtime_dir) { return runtime_dir + "/staging"; }

namespace {

// Every layer of the image as the single image is checked: an absolute directory (not a symlink to one: each is
// reached without following symlinks) whose path overlayfs would not split.
Status CheckImageLayers(const SandboxConfig& config, const std::vector<std::string>& layers,
                        const std::string& staging) {
  if (layers.empty()) return {};
  if (layers.size() > kMaxImageLayers)
    return Error::Msg("image_layers: " + std::to_string(layers.size()) + " layers, more than the " +
                      std::to_string(kMaxImageLayers) + " one sandbox stacks; flatten the lower layers into one");
  const bool single = config.image_layers.empty();
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string what = single ? "image" : "image layer " + std::to_string(i);
    ISB_TRY(CheckAbsolute(layers[i], single ? "--image" : what.c_str()));
    if (!IsDir(layers[i])) return Error::Msg(what + " '" + layers[i] + "' is not a directory");
  }
  // These go into overlayfs's options (the staging dir, where the layers are bound, and the writable layer), which
  // split on these: "/x:/etc" would add the host's /etc as a layer. The layers themselves no longer do (their binds
  // are the layers), but a path like that is refused all the same.
  std::vector<const std::string*> paths = {&config.writable_dir, &staging};
  for (const std::string& layer : layers) paths.push_back(&layer);
  for (const std::string* path : paths)
    if (path->find_first_of(kOverlaySpecialChars) != std::string::npos)
      return Error::Msg("'" + *path +
                        "' cannot be an overlay layer: a path with ':', ',' or '\\' would be read as "
                        "more than one layer or option");
  return {};
}

}  // namespace

Result<RootfsPlan> PlanRootfs(const SandboxConfig& config, const std::string& staging) {
  RootfsPlan plan;
  Planner pl(&plan);
  const std::vector<std::string> layers = ImageLayers(config);
  ISB_TRY(CheckImageLayers(config, layers, staging));
  for (const auto& b : config.binds) {
    ISB_TRY(CheckAbsolute(b.source, "bind source"));
    ISB_TRY(CheckAbsolute(b.target, "bind target"));
    if (::access(b.source.c_str(), F_OK) != 0) return Error::Sys("bind source " + b.source);
  }
  ISB_TRY(CheckAbsolute(config.workdir, "--workdir"));

  // Nothing done below may propagate back to the host.
  pl.Mount("", "/", nullptr, MS_REC | MS_PRIVATE);
  pl.Mount("tmpfs", staging, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
  // The default view with a discarded layer is that tmpfs itself: one mount, already nosuid and a mount point.
  const bool root_is_staging = layers.empty() && config.writable_dir.empty();
  const std::string root = root_is_staging ? staging : staging + "/root";
  if (!root_is_staging) pl.Mkdir(root);
  if (root_is_staging) {
    PlanHostView(pl, root, config);
  } else if (!layers.empty()) {
    if (config.writable_dir.empty()) {
      pl.Mkdir(staging + "/upper");
      pl.Mkdir(staging + "/work");
    }
    // Each layer is reached without following any symlink (overlayfs itself would follow them in its lowerdir):
    // bound into the staging dir, this sandbox's own, read-only (overlayfs never writes a lower layer; the flags
    // are added to the layer's own, so a noexec there stays), and layered from there, the top layer first.
    std::string lowerdir;
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string name = config.image_layers.empty() ? "image" : "l" + std::to_string(i);
      pl.Mkdir(staging + "/" + name);
      pl.Image(layers[i], staging + "/" + name, i);
      lowerdir = lowerdir.empty() ? name : name + ":" + lowerdir;
    }
    // The overlay's options are what the sandbox reads in its mountinfo: named relative to the staging dir (a kept
    // layer bound in there), they say nothing of where on the host its layers are.
    std::string upper = "upper", work = "work";
    if (!config.writable_dir.empty()) {
      pl.Mkdir(staging + "/layer");
      pl.Mount(config.writable_dir, staging + "/layer", nullptr, MS_BIND);
      upper = "layer/upper";
      work = "layer/work";
    }
    std::string options = "lowerdir=" + lowerdir + ",upperdir=" + upper + ",workdir=" + work;
    // A layered image's opaque directories are read from user.overlay.opaque, and the overlay's own markers in the
    // writable layer written as user.overlay.*: the sandbox's root mounts it in its own user namespace, where
    // trusted.* xattrs can be neither read nor written. Not for a single image: a privileged sandbox's kept layer
    // holds trusted.overlay.* markers already, and no single image's user.overlay.* xattrs were ever read.
    if (!config.image_layers.empty()) options += ",userxattr";
    pl.Chdir(staging);
    pl.Mount("overlay", root, "overlay", MS_NOSUID | MS_NODEV, options);
    // The sandbox's own names and resolver, as in the default view, in place of the image's (in the writable
    // layer; an image's /etc/resolv.conf is often a symlink into a /run that nothing fills here).
    pl.MkdirBestEffort(root + "/etc");
    pl.Replace(root + "/etc/hostname", config.hostname + "\n");
    pl.Replace(root + "/etc/hosts", HostsFile(config.hostname));
    // Only when isb names a resolver (a list): an open sandbox keeps the image's own, which it can reach.
    if (!config.resolv_conf.empty()) pl.Replace(root + "/etc/resolv.conf", config.resolv_conf);
  } else {
    // The kept layer is the root: bound in, then made nosuid and nodev (with whatever is mounted below it) while
    // staying writable.
    pl.Mount(config.writable_dir + "/root", root, nullptr, MS_BIND | MS_REC);
    pl.LockTree(root, /*read_only=*/false);
    PlanHostView(pl, root, config);
  }
  PlanProc(pl, root);
  PlanDev(pl, root, config.limits.memory_bytes);
  pl.Mkdir(root + "/tmp", 01777);
  pl.Mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, ScratchTmpfs(config.limits.memory_bytes));
  if (config.secrets_tmpfs) {
    // Files of at most 1 MiB each, at most 64 of them: 72 MiB holds them all, and a tmpfs takes only what it holds.
    pl.MkdirAll(root, "/run/secrets");
    pl.Mount("tmpfs", root + "/run/secrets", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=72m");
  }
  pl.Mkdir(root + "/sys");
  pl.Mount("sysfs", root + "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
  for (const auto& b : config.binds) {
    struct stat st {};
    ::stat(b.source.c_str(), &st);
    std::string parent = b.target.substr(0, b.target.rfind('/'));
    if (!parent.empty()) pl.MkdirAll(root, parent);
    if (S_ISDIR(st.st_mode))
      pl.Mkdir(root + b.target);
    else
      pl.Touch(root + b.target);
    pl.BindNoFollow(b.source, root + b.target, b.read_only);
  }
  pl.Pivot(root);
  return plan;
}

namespace {

// Mount targets are resolved without following any symlink (OpenNoSymlinks, base/file.h): an image's symlink
// (say /tmp -> /host/dir) would otherwise redirect a step of the setup onto the host.

// Opens the parent directory of `path` and points *name at its last component.
int OpenParent(const char* path, const char** name) {
  const char* slash = std::strrchr(path, '/');
  char parent[4096];
  size_t n = slash == nullptr ? 0 : static_cast<size_t>(slash - path);
  if (slash == nullptr || n >= sizeof parent) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(parent, path, n ? n : 1);
  parent[n ? n : 1] = '\0';
  *name = slash + 1;
  return OpenNoSymlinks(parent, O_PATH | O_DIRECTORY);
}

// "/proc/self/fd/N" into buf, without allocating.
const char* FdPath(int fd, char (&buf)[32]) {
  char digits[16];
  int k = 0;
  do {
    digits[k++] = static_cast<char>('0' + fd % 10);
    fd /= 10;
  } while (fd > 0);
  std::memcpy(buf, "/proc/self/fd/", 14);
  for (int i = 0; i < k; ++i) buf[14 + i] = digits[k - 1 - i];
  buf[14 + k] = '\0';
  return buf;
}

int RunStep(const MountStep& s) {
  const char* name = nullptr;
  switch (s.kind) {
    case MountStep::kMount: {
      int fd = OpenNoSymlinks(s.target, O_PATH);
      if (fd < 0) return -1;
      char buf[32];
      int rc = ::mount(s.source, FdPath(fd, buf), s.fstype, s.flags, s.data);
      int saved = errno;
      ::close(fd);
      errno = saved;
      return rc;
    }
    case MountStep::kMkdir: {
      int dir = OpenParent(s.target, &name);
      if (dir < 0) return -1;
      int rc = ::mkdirat(dir, name, s.mode);  // exact: ExecuteRootfs runs with umask 0
      if (rc != 0 && errno == EEXIST) {
        int existing = OpenNoSymlinks(s.target, O_PATH | O_DIRECTORY);  // a directory, not a symlink to one
        rc = existing < 0 ? -1 : ::close(existing);
      }
      int saved = errno;
      ::close(dir);
      errno = saved;
      return rc;
    }
    case MountStep::kReplaceFile: {
      // Written beside it under a name of isb's, then renamed over it (a file, a symlink): a write that fails
      // leaves the old file in place, never none.
      int dir = OpenParent(s.target, &name);
      if (dir < 0) return -1;
      char temp[NAME_MAX + 1] = ".isb-new-";
      const size_t prefix = std::strlen(temp), len = std::strlen(name);
      if (prefix + len > NAME_MAX) {
        ::close(dir);
        errno = ENAMETOOLONG;
        return -1;
      }
      std::memcpy(temp + prefix, name, len + 1);
      (void)::unlinkat(dir, temp, 0);  // one a failed start left
      const size_t n = std::strlen(s.source);
      int fd = ::openat(dir, temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, s.mode);
      bool ok = fd >= 0 && ::write(fd, s.source, n) == static_cast<ssize_t>(n);
      int saved = errno;
      if (fd >= 0) ::close(fd);
      if (ok && ::renameat(dir, temp, dir, name) != 0) ok = false, saved = errno;
      if (!ok && fd >= 0) ::unlinkat(dir, temp, 0);
      ::close(dir);
      errno = saved;
      return ok ? 0 : -1;
    }
    case MountStep::kTouch:
    case MountStep::kWriteFile: {
      int dir = OpenParent(s.target, &name);
      if (dir < 0) return -1;
      // Non-blocking, then a regular file or nothing: a FIFO left at a target (the sandbox's root may make one in
      // its layer, an image may hold one) would block the open for good, with nothing in the sandbox yet to read it.
      int flags =
          O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (s.kind == MountStep::kWriteFile ? O_TRUNC : 0);
      int fd = ::openat(dir, name, flags, s.mode);
      int saved = errno;
      ::close(dir);
      if (fd < 0) {
        errno = saved == ENXIO ? EINVAL : saved;  // ENXIO: a FIFO (or socket) no one reads
        return -1;
      }
      struct stat st {};
      if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        errno = EINVAL;
        return -1;
      }
      int rc = 0;
      if (s.kind == MountStep::kWriteFile) {
        size_t len = std::strlen(s.source);
        rc = ::write(fd, s.source, len) == static_cast<ssize_t>(len) ? 0 : -1;
      }
      saved = errno;
      ::close(fd);
      errno = saved;
      return rc;
    }
    case MountStep::kSymlink: {
      int dir = OpenParent(s.target, &name);
      if (dir < 0) return -1;
      int rc = ::symlinkat(s.source, dir, name);
      if (rc != 0 && errno == EEXIST) rc = 0;
      int saved = errno;
      ::close(dir);
      errno = saved;
      return rc;
    }
    case MountStep::kImage:
      if (int tree = TakeImageTree(s.layer); tree >= 0) {
        int dst = OpenNoSymlinks(s.target, O_PATH);
        int rc = dst < 0 ? -1 : ::move_mount(tree, "", dst, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
        int saved = errno;
        ::close(tree);
        if (dst >= 0) ::close(dst);
        errno = saved;
        if (rc == 0 || dst < 0) return rc;
        // Not moved: bound as it is, as without a tree.
      }
      [[fallthrough]];
    case MountStep::kBindNoFollow: {
      int src = OpenNoSymlinks(s.source, O_PATH);
      if (src < 0) return -1;
      struct stat st {};
      if (::fstat(src, &st) != 0 || S_ISLNK(st.st_mode)) {  // O_NOFOLLOW opened a last component that is a link
        ::close(src);
        errno = ELOOP;
        return -1;
      }
      int dst = OpenNoSymlinks(s.target, O_PATH);
      int rc = -1;
      if (dst >= 0) {
        char src_path[32], dst_path[32];
        rc = ::mount(FdPath(src, src_path), FdPath(dst, dst_path), nullptr, MS_BIND | MS_REC, nullptr);
      }
      int saved = errno;
      ::close(src);
      if (dst >= 0) ::close(dst);
      errno = saved;
      return rc;
    }
    case MountStep::kTreeAttrs: {
      int fd = OpenNoSymlinks(s.target, O_PATH);
      if (fd < 0) return -1;
      mount_attr attr{};
      attr.attr_set = s.flags;
      int rc = ::mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr);
      int saved = errno;
      ::close(fd);
      errno = saved;
      return rc;
    }
    case MountStep::kChdir: {
      int dir = OpenNoSymlinks(s.target, O_PATH | O_DIRECTORY);
      if (dir < 0) return -1;
      int rc = ::fchdir(dir);
      int saved = errno;
      ::close(dir);
      errno = saved;
      return rc;
    }
    case MountStep::kPivotRoot: {
      int dir = OpenNoSymlinks(s.target, O_PATH | O_DIRECTORY);
      if (dir < 0) return -1;
      // pivot_root(".", ".") stacks the old root under the new one; detaching it leaves only the new root.
      int rc = (::fchdir(dir) != 0 || ::syscall(SYS_pivot_root, ".", ".") != 0 || ::umount2(".", MNT_DETACH) != 0 ||
                ::chdir("/") != 0)
                   ? -1
                   : 0;
      int saved = errno;
      ::close(dir);
      errno = saved;
      return rc;
    }
  }
  errno = EINVAL;
  return -1;
}

}  // namespace

int ExecuteRootfs(const RootfsPlan& plan) {
  const mode_t old_umask = ::umask(0);  // modes in the plan are exact
  struct RestoreUmask {
    mode_t m;
    ~RestoreUmask() { ::umask(m); }
  } restore{old_umask};
  const auto& steps = plan.steps();
  for (size_t i = 0; i < steps.size(); ++i) {
    if (RunStep(steps[i]) == 0) continue;
    if (steps[i].optional && errno == ENOENT) continue;
    // What an image's own files may refuse a sandbox that does not own them; a full disk or an I/O error still fails.
    if (steps[i].best_effort && (errno == EACCES || errno == EPERM || errno == EOVERFLOW || errno == EISDIR ||
                                 errno == EBUSY || errno == ELOOP || errno == ENOTDIR || errno == EROFS))
      continue;
    return static_cast<int>(i);
  }
  return -1;
}

namespace {
uid_t g_old_base, g_new_base;
bool g_shift_failed;
int ShiftOne(const char* path, const struct stat* st, int, FTW*) {
  auto shift = [](uint32_t id) { return id - g_old_base < kRangeSize ? id - g_old_base + g_new_base : id; };
  if (::lchown(path, shift(st->st_uid), shift(st->st_gid)) != 0) g_shift_failed = true;
  // lchown clears setuid/setgid bits on regular files; put the mode back.
  if (S_ISREG(st->st_mode) && (st->st_mode & (S_ISUID | S_ISGID)))
    ::fchmodat(AT_FDCWD, path, st->st_mode & 07777, AT_SYMLINK_NOFOLLOW);
  return 0;
}
}  // namespace

Status PrepareWritableDir(const std::string& dir, uid_t base, uid_t root_uid, gid_t root_gid, bool image) {
  ISB_TRY(CheckAbsolute(dir, "--writable"));
  ISB_TRY(MakeDirs(dir, 0700));
  // The sandbox's root's, and no one else's (but the host's root): it reaches its layers through it, and no host
  // user reaches what the sandbox left in them (a set-uid file of its range would make that user its namespace's
  // owner, on a filesystem mounted without nosuid).
  if (::chown(dir.c_str(), root_uid, root_gid) != 0 || ::chmod(dir.c_str(), 0700) != 0)
    return Error::Sys("chown " + dir);
  const std::string marker = dir + "/.isb-range";
  auto old = ReadFile(marker);
  const std::vector<std::string> subs =
      image ? std::vector<std::string>{"upper", "work"} : std::vector<std::string>{"root"};
  for (const auto& sub : subs) {
    std::string p = dir + "/" + sub;
    if (::mkdir(p.c_str(), 0755) == 0 && ::chown(p.c_str(), root_uid, root_gid) != 0) return Error::Sys("chown " + p);
  }
  if (old.ok()) {
    std::optional<uid_t> parsed = ParseDecimal<uid_t>(*old);
    if (!parsed)
      return Error::Msg("the writable layer " + dir +
                        " has a range marker that is not a number; it cannot be moved "
                        "to this sandbox's ids");
    const uid_t old_base = *parsed;
    if (old_base != base) {
      g_old_base = old_base;
      g_new_base = base;
      g_shift_failed = false;
      for (const char* sub : {"upper", "work", "root"}) {
        std::string p = dir + "/" + sub;
        if (IsDir(p) && ::nftw(p.c_str(), ShiftOne, 64, FTW_PHYS) != 0) return Error::Sys("walk " + p);
      }
      if (g_shift_failed) return Error::Msg("could not move the writable layer " + dir + " to this sandbox's ids");
    }
  }
  return WriteFileAtomically(marker, std::to_string(base));
}

}  // namespace isb::engine
