// The flattener: each layer walked beneath its own directory and applied onto the result through fds opened beneath
// it, following no symlink, with directories' final modes and times applied at the end.
#include "image/layer_flatten.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <map>
#include <memory>
#include <utility>

#include "base/fd.h"
#include "image/layer_unpack.h"

namespace isb::image {
namespace {

std::string Join(const std::string& dir, const std::string& leaf) { return dir.empty() ? leaf : dir + "/" + leaf; }

std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string LeafOf(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// A name as the messages show it: at most 256 bytes of it (as the unpacker shows one).
std::string Shown(const std::string& path) { return path.size() <= 256 ? path : path.substr(0, 256) + "..."; }

// A mode as the unpacker stores it: permission, sticky, and no set-id bits.
uint32_t KeptMode(const struct stat& st) { return st.st_mode & 07777 & ~static_cast<uint32_t>(S_ISUID | S_ISGID); }

class Flattener {
 public:
  explicit Flattener(const FlattenLimits& limits) : limits_(limits) {}

  Result<FlattenReport> Run(const std::vector<std::string>& layers, const std::string& out) {
    out_.Reset(::open(out.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!out_.valid()) return Error::Sys("flatten: result directory " + out);
    for (size_t i = 0; i < layers.size(); ++i) {
      layer_ = "layer " + std::to_string(i + 1) + " of " + std::to_string(layers.size());
      entry_ = ".";
      Fd root(::open(layers[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!root.valid()) return SysFail("open of the layer's directory");
      for (const auto& [inode, path] : links_) names_kept_ -= path.size();
      links_.clear();
      struct stat st;
      if (::fstat(root.get(), &st) != 0) return SysFail("stat");
      // The root is always merged (overlayfs ignores a layer root's opaque marker).
      ISB_TRY(TakeDir(root.get(), out_.get(), "", st));
      ISB_TRY(MergeInto(root.get(), out_.get(), ""));
    }
    entry_ = ".";
    ISB_TRY(FinishDirs());
    return report_;
  }

 private:
  Error Fail(Code code, const std::string& why) const {
    return Error::Of(code, "flatten: " + layer_ + ", entry \"" + entry_ + "\": " + why);
  }
  Error SysFail(const std::string& what, int err = errno) const {
    return Error::Sys("flatten: " + layer_ + ", entry \"" + entry_ + "\": " + what, err);
  }

  Status CountEntry() {
    if (++entries_ > limits_.max_entries)
      return Fail(Code::kTooLarge,
                  "the result has more than " + std::to_string(limits_.max_entries) + " names (the limit max_entries)");
    return {};
  }
  Status Charge(uint64_t bytes) {
    if (bytes > limits_.max_bytes - report_.bytes)
      return Fail(Code::kTooLarge, "the result's files take more than " + std::to_string(limits_.max_bytes) +
                                       " bytes (the limit max_bytes)");
    report_.bytes += bytes;
    return {};
  }
  Status KeepName(const std::string& path) {
    names_kept_ += path.size();
    if (names_kept_ > limits_.max_name_bytes)
      return Fail(Code::kTooLarge, "the names kept for directories and hardlinks take more than " +
                                       std::to_string(limits_.max_name_bytes) + " bytes (the limit max_name_bytes)");
    return {};
  }

  // The result's directory at `path` ("" for its root), opened beneath the result one name at a time: a path may be
  // as long as the unpacker allows (4096 bytes), which no single open takes.
  Result<Fd> OpenResultDir(const std::string& path) {
    Fd fd(OpenBeneath(out_.get(), ".", O_RDONLY | O_DIRECTORY));
    for (size_t start = 0; fd.valid() && start < path.size();) {
      const size_t end = std::min(path.find('/', start), path.size());
      fd = Fd(OpenBeneath(fd.get(), path.substr(start, end - start), O_RDONLY | O_DIRECTORY));
      start = end + 1;
    }
    if (!fd.valid()) return SysFail("open of \"" + Shown(path.empty() ? "." : path) + "\" in the result");
    return fd;
  }

  // Applies every name of the layer's directory `src` onto the result's directory `dst`, both at `path`.
  Status MergeInto(int src, int dst, const std::string& path) {
    const int copy = ::fcntl(src, F_DUPFD_CLOEXEC, 0);
    std::unique_ptr<DIR, int (*)(DIR*)> dir(copy >= 0 ? ::fdopendir(copy) : nullptr, ::closedir);
    if (dir == nullptr) {
      if (copy >= 0) ::close(copy);
      return SysFail("listing");
    }
    for (;;) {
      errno = 0;
      const dirent* ent = ::readdir(dir.get());
      if (ent == nullptr) {
        if (errno != 0) return SysFail("listing");
        return {};
      }
      const std::string name = ent->d_name;
      if (name == "." || name == "..") continue;
      const std::string child = Join(path, name);
      entry_ = Shown(child);
      ISB_TRY(Apply(src, dst, name, child));
    }
  }

  Status Apply(int src, int dst, const std::string& name, const std::string& path) {
    struct stat st;
    if (::fstatat(src, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return SysFail("stat");
    if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
      // A whiteout: the name below goes, and nothing takes its place.
      ISB_TRY(ClearSlot(dst, name, path, false));
      return {};
    }
    if (S_ISDIR(st.st_mode)) return Directory(src, dst, name, path, st);
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
      return Fail(Code::kInvalidArgument, "a device, fifo or socket, which no stored layer holds");
    ISB_TRY(ClearSlot(dst, name, path, false));
    if (S_ISLNK(st.st_mode)) return Symlink(src, dst, name, st);
    return File(src, dst, name, path, st);
  }

  // Makes room for `name` in the result's `dst`: what is there goes (a directory with all below it), but for a
  // directory when `merge_dir`. True when a directory stays.
  Result<bool> ClearSlot(int dst, const std::string& name, const std::string& path, bool merge_dir) {
    struct stat st;
    if (::fstatat(dst, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return false;
      return SysFail("stat in the result");
    }
    if (merge_dir && S_ISDIR(st.st_mode)) return true;
    ISB_TRY(RemoveTree(dst, name, path, st));
    ForgetDirs(path);
    ++report_.removed;
    return false;
  }

  Status RemoveTree(int parent, const std::string& name, const std::string& path, const struct stat& st) {
    if (S_ISDIR(st.st_mode)) {
      Fd dir(OpenBeneath(parent, name, O_RDONLY | O_DIRECTORY));
      if (!dir.valid()) return SysFail("open of \"" + Shown(path) + "\" in the result to replace it");
      ISB_ASSIGN_OR_RETURN(std::vector<std::string> names, List(dir.get()));
      for (const std::string& child : names) {
        struct stat cst;
        if (::fstatat(dir.get(), child.c_str(), &cst, AT_SYMLINK_NOFOLLOW) != 0) return SysFail("stat in the result");
        ISB_TRY(RemoveTree(dir.get(), child, path + "/" + child, cst));
      }
    }
    if (::unlinkat(parent, name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0)
      return SysFail("removal of \"" + Shown(path) + "\" from the result");
    return {};
  }

  Result<std::vector<std::string>> List(int dirfd) {
    const int copy = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    std::unique_ptr<DIR, int (*)(DIR*)> dir(copy >= 0 ? ::fdopendir(copy) : nullptr, ::closedir);
    if (dir == nullptr) {
      if (copy >= 0) ::close(copy);
      return SysFail("listing in the result");
    }
    std::vector<std::string> names;
    while (const dirent* ent = ::readdir(dir.get())) {
      const std::string_view name = ent->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    return names;
  }

  // Forgets `path` and every directory below it (removed from the result).
  void ForgetDirs(const std::string& path) { names_kept_ -= EraseTree(dirs_, path); }

  static bool IsOpaque(int dir) {
    for (const char* key : {"trusted.overlay.opaque", "user.overlay.opaque"}) {
      char v[2];
      if (::fgetxattr(dir, key, v, sizeof v) == 1 && v[0] == 'y') return true;
    }
    return false;
  }

  Status Directory(int src, int dst, const std::string& name, const std::string& path, const struct stat& st) {
    Fd s(OpenBeneath(src, name, O_RDONLY | O_DIRECTORY));
    if (!s.valid()) return SysFail("open");
    ISB_ASSIGN_OR_RETURN(bool kept, ClearSlot(dst, name, path, !IsOpaque(s.get())));
    if (!kept) {
      ISB_TRY(CountEntry());
      // 0700 until the end: the final mode may forbid writing what comes below.
      if (::mkdirat(dst, name.c_str(), 0700) != 0) return SysFail("mkdir in the result");
      ++report_.dirs;
    }
    Fd d(OpenBeneath(dst, name, O_RDONLY | O_DIRECTORY));
    if (!d.valid()) return SysFail("open in the result");
    ISB_TRY(TakeDir(s.get(), d.get(), path, st));
    return MergeInto(s.get(), d.get(), path);
  }

  // A layer's directory over the result's: its owner and xattrs now, its mode and mtime at the end.
  Status TakeDir(int src, int dst, const std::string& path, const struct stat& st) {
    if (::fchown(dst, st.st_uid, st.st_gid) != 0) return SysFail("chown in the result");
    ISB_ASSIGN_OR_RETURN(std::vector<std::string> old, XattrNames(dst));
    for (const std::string& key : old) {
      if (LayerXattrKept(key) && ::fremovexattr(dst, key.c_str()) != 0) return SysFail("removexattr " + key);
    }
    ISB_TRY(CopyXattrs(src, dst));
    if (dirs_.insert_or_assign(path, DirTimes{KeptMode(st), st.st_mtim}).second) ISB_TRY(KeepName(path));
    return {};
  }

  Result<std::vector<std::string>> XattrNames(int fd) {
    const ssize_t size = ::flistxattr(fd, nullptr, 0);
    if (size < 0) return SysFail("listxattr");
    std::string list(static_cast<size_t>(size), '\0');
    const ssize_t got = size == 0 ? 0 : ::flistxattr(fd, list.data(), list.size());
    if (got < 0) return SysFail("listxattr");
    std::vector<std::string> names;
    for (size_t at = 0; at < static_cast<size_t>(got);) {
      const size_t end = list.find('\0', at);
      if (end == std::string::npos) break;
      names.push_back(list.substr(at, end - at));
      at = end + 1;
    }
    return names;
  }

  // The extended attributes the unpacker keeps (user.*, never user.overlay.*), from `src` to `dst`.
  Status CopyXattrs(int src, int dst) {
    ISB_ASSIGN_OR_RETURN(std::vector<std::string> names, XattrNames(src));
    for (const std::string& key : names) {
      if (!LayerXattrKept(key)) continue;
      const ssize_t size = ::fgetxattr(src, key.c_str(), nullptr, 0);
      if (size < 0) return SysFail("getxattr " + key);
      std::string value(static_cast<size_t>(size), '\0');
      const ssize_t n = size == 0 ? 0 : ::fgetxattr(src, key.c_str(), value.data(), value.size());
      if (n < 0) return SysFail("getxattr " + key);
      if (::fsetxattr(dst, key.c_str(), value.data(), static_cast<size_t>(n), 0) != 0)
        return SysFail("setxattr " + key);
    }
    return {};
  }

  Status Symlink(int src, int dst, const std::string& name, const struct stat& st) {
    std::array<char, 4097> target;
    const ssize_t n = ::readlinkat(src, name.c_str(), target.data(), target.size());
    if (n < 0) return SysFail("readlink");
    if (static_cast<size_t>(n) >= target.size()) return Fail(Code::kInvalidArgument, "a symlink target too long");
    ISB_TRY(CountEntry());
    if (::symlinkat(std::string(target.data(), static_cast<size_t>(n)).c_str(), dst, name.c_str()) != 0)
      return SysFail("symlink in the result");
    if (::fchownat(dst, name.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) != 0) return SysFail("lchown");
    const timespec times[2] = {st.st_mtim, st.st_mtim};
    if (::utimensat(dst, name.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) return SysFail("utimensat");
    ++report_.symlinks;
    return {};
  }

  Status File(int src, int dst, const std::string& name, const std::string& path, const struct stat& st) {
    const std::pair<dev_t, ino_t> inode{st.st_dev, st.st_ino};
    if (st.st_nlink > 1) {
      if (auto it = links_.find(inode); it != links_.end()) return Hardlink(dst, name, it->second);
    }
    Fd s(OpenBeneath(src, name, O_RDONLY));
    struct stat opened;
    if (!s.valid() || ::fstat(s.get(), &opened) != 0) return SysFail("open");
    if (!S_ISREG(opened.st_mode) || opened.st_ino != st.st_ino || opened.st_size != st.st_size)
      return Fail(Code::kConflict, "changed while it was flattened");
    ISB_TRY(CountEntry());
    ISB_TRY(Charge(static_cast<uint64_t>(st.st_size)));
    Fd d(OpenBeneath(dst, name, O_WRONLY | O_CREAT | O_EXCL, 0600));
    if (!d.valid()) return SysFail("create in the result");
    ISB_TRY(CopyData(s.get(), d.get(), static_cast<uint64_t>(st.st_size)));
    // chown before chmod: chown clears set-id bits, and the mode is the last word.
    if (::fchown(d.get(), st.st_uid, st.st_gid) != 0) return SysFail("chown in the result");
    if (::fchmod(d.get(), KeptMode(st)) != 0) return SysFail("chmod in the result");
    ISB_TRY(CopyXattrs(s.get(), d.get()));
    const timespec times[2] = {st.st_mtim, st.st_mtim};
    if (::futimens(d.get(), times) != 0) return SysFail("utimensat in the result");
    ++report_.files;
    if (st.st_nlink > 1) {
      links_.emplace(inode, path);
      ISB_TRY(KeepName(path));
    }
    return {};
  }

  // Another name of a file this layer hardlinks: linked to the result's copy made for its first name.
  Status Hardlink(int dst, const std::string& name, const std::string& first) {
    ISB_TRY(CountEntry());
    ISB_ASSIGN_OR_RETURN(Fd from, OpenResultDir(ParentOf(first)));
    // Flags 0: nothing is followed.
    if (::linkat(from.get(), LeafOf(first).c_str(), dst, name.c_str(), 0) != 0)
      return SysFail("link to \"" + Shown(first) + "\" in the result");
    ++report_.hardlinks;
    return {};
  }

  // `size` bytes of `src` into `dst`: copy_file_range (which may share the blocks), or read and write where the
  // file system cannot.
  Status CopyData(int src, int dst, uint64_t size) {
    uint64_t done = 0;
    bool plain = false;
    while (done < size) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(size - done, 1u << 30));
      ssize_t n = -1;
      if (!plain) {
        n = ::copy_file_range(src, nullptr, dst, nullptr, want, 0);
        if (n < 0 && done == 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
          plain = true;
          continue;
        }
      } else {
        std::array<char, 64 << 10> buf;
        n = ::read(src, buf.data(), std::min(want, buf.size()));
        for (ssize_t off = 0; n > 0 && off < n;) {
          const ssize_t w = ::write(dst, buf.data() + off, static_cast<size_t>(n - off));
          if (w < 0 && errno == EINTR) continue;
          if (w < 0) return SysFail("write in the result");
          off += w;
        }
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return SysFail("copy of the file's data");
      if (n == 0) return Fail(Code::kConflict, "changed while it was flattened (shorter than its size)");
      done += static_cast<uint64_t>(n);
    }
    return {};
  }

  // Directories' modes and times, deepest first, once nothing more is written below them.
  Status FinishDirs() {
    layer_ = "the result";
    for (const auto& [path, times] : DeepestFirst(dirs_)) {
      entry_ = path.empty() ? "." : Shown(path);
      ISB_ASSIGN_OR_RETURN(Fd fd, OpenResultDir(path));
      if (::fchmod(fd.get(), times.mode) != 0) return SysFail("chmod");
      const timespec ts[2] = {times.mtime, times.mtime};
      if (::futimens(fd.get(), ts) != 0) return SysFail("utimensat");
    }
    return {};
  }

  const FlattenLimits& limits_;
  Fd out_;
  FlattenReport report_;
  std::string layer_;                                     // "layer 2 of 5", for messages
  std::string entry_;                                     // the name being applied, for messages
  uint64_t entries_ = 0;                                  // against max_entries
  uint64_t names_kept_ = 0;                               // against max_name_bytes: the keys of dirs_, values of links_
  std::map<std::string, DirTimes> dirs_;                  // the result's directories, their final mode and mtime
  std::map<std::pair<dev_t, ino_t>, std::string> links_;  // this layer's hardlinked files: the result's first name
};

}  // namespace

Result<FlattenReport> FlattenLayers(const std::vector<std::string>& layers, const std::string& out,
                                    const FlattenLimits& limits) {
  return Flattener(limits).Run(layers, out);
}

}  // namespace isb::image
