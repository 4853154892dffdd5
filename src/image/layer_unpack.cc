// The layer unpacker: each tar entry placed below the layer's directory through fds opened beneath it, following no
// symlink, with directories' final modes and times applied at the end.
#include "image/layer_unpack.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <map>
#include <set>
#include <string_view>

#include "base/fd.h"

namespace isb::image {
namespace {

constexpr size_t kMaxPath = 4096;
constexpr size_t kMaxSkipped = 1000;
constexpr std::string_view kWhiteout = ".wh.";
constexpr std::string_view kOpaque = ".wh..wh..opq";
// What max_bytes charges besides file data (layer_unpack.h says why): an entry's inode and name, the size of the
// tar header it came in, and a directory's first block.
constexpr uint64_t kEntryCost = 512;
constexpr uint64_t kDirCost = 4096;

// An entry's name below the layer's root: its components and their join.
struct Name {
  std::vector<std::string> parts;
  std::string path;  // "a/b"; "" for the root
};

// A name as the messages show it: at most 256 bytes of it.
std::string Shown(std::string_view raw) {
  return raw.size() <= 256 ? std::string(raw) : std::string(raw.substr(0, 256)) + "...";
}

// Errors say what is wrong with the name without naming it: the caller does ("the name has ...").
Result<Name> Normalize(std::string_view raw) {
  Name n;
  size_t start = raw.find_first_not_of('/');
  while (start != std::string_view::npos && start < raw.size()) {
    const size_t end = std::min(raw.find('/', start), raw.size());
    std::string_view part = raw.substr(start, end - start);
    if (part == "..") {
      return Error::Of(Code::kInvalidArgument, "has a \"..\" component (a layer names nothing outside itself)");
    }
    if (!part.empty() && part != ".") {
      if (!n.path.empty()) n.path += '/';
      n.path += part;
      n.parts.emplace_back(part);
    }
    start = end + 1;
  }
  if (n.path.size() > kMaxPath) {
    return Error::Of(Code::kInvalidArgument, "is longer than " + std::to_string(kMaxPath) + " bytes");
  }
  return n;
}

std::string ParentPath(const Name& n) {
  const size_t slash = n.path.rfind('/');
  return slash == std::string::npos ? std::string() : n.path.substr(0, slash);
}

std::string Join(const std::string& dir, const std::string& leaf) { return dir.empty() ? leaf : dir + "/" + leaf; }

timespec MtimeOf(const TarEntry& e) { return timespec{e.mtime, static_cast<long>(e.mtime_nsec)}; }

class Unpacker {
 public:
  Unpacker(TarReader& tar, const UnpackLimits& limits) : tar_(tar), limits_(limits) {}

  Result<UnpackReport> Run(const std::string& dir) {
    root_.Reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!root_.valid()) return Error::Sys("layer directory " + dir);
    for (;;) {
      ISB_ASSIGN_OR_RETURN(std::optional<TarEntry> e, tar_.Next());
      if (!e) break;
      ISB_TRY(CountEntry());
      entry_ = Shown(e->path);
      ISB_TRY(Charge(kEntryCost));
      ISB_TRY(Place(*e));
    }
    entry_ = ".";
    ISB_TRY(FinishDirs());
    ISB_TRY(tar_.Drain());
    if (skipped_more_ > 0) report_.skipped.push_back("and " + std::to_string(skipped_more_) + " more skipped");
    return std::move(report_);
  }

 private:
  Error Fail(Code code, const std::string& why) const {
    return Error::Of(code, "layer entry \"" + entry_ + "\": " + why);
  }
  Error SysFail(const std::string& what, int err = errno) const {
    Error e = Error::Sys("layer entry \"" + entry_ + "\": " + what, err);
    return e;
  }

  // One more entry against max_entries: a tar entry or a directory made for a missing parent.
  Status CountEntry() {
    if (++entries_ > limits_.max_entries) {
      return Error::Of(Code::kTooLarge, "layer: more than " + std::to_string(limits_.max_entries) +
                                            " entries, missing parent directories made included (the limit "
                                            "max_entries)");
    }
    return {};
  }

  // `bytes` more against max_bytes; charged_ never passes it.
  Status Charge(uint64_t bytes) {
    if (bytes > limits_.max_bytes - charged_) {
      return Fail(Code::kTooLarge, "the layer takes more than " + std::to_string(limits_.max_bytes) +
                                       " bytes (the limit max_bytes: file data, " + std::to_string(kEntryCost) +
                                       " bytes an entry and " + std::to_string(kDirCost) + " a directory made)");
    }
    charged_ += bytes;
    return {};
  }

  // A name kept in made_ or dirs_ until the end: its bytes against max_name_bytes.
  Status KeepName(const std::string& path) {
    names_kept_ += path.size();
    if (names_kept_ > limits_.max_name_bytes) {
      return Fail(Code::kTooLarge, "the names kept for hardlinks and directories' modes take more than " +
                                       std::to_string(limits_.max_name_bytes) + " bytes (the limit max_name_bytes)");
    }
    return {};
  }
  Status KeepMade(const std::string& path) { return made_.insert(path).second ? KeepName(path) : Status{}; }
  Status KeepDir(const std::string& path, const DirTimes& times) {
    return dirs_.insert_or_assign(path, times).second ? KeepName(path) : Status{};
  }

  Status Place(const TarEntry& e) {
    Result<Name> name = Normalize(e.path);
    if (!name.ok()) return Fail(Code::kInvalidArgument, "the name " + name.error().message);
    const Name& n = *name;
    if (e.uid > kMaxImageId || e.gid > kMaxImageId) {
      return Fail(Code::kInvalidArgument, "owner " + std::to_string(e.uid) + ":" + std::to_string(e.gid) +
                                              " is outside the image ids 0.." + std::to_string(kMaxImageId));
    }
    if (n.parts.empty()) {
      if (e.type != TarEntry::Type::kDir)
        return Fail(Code::kInvalidArgument, "names the layer's root, not as a directory");
      return Directory(e, n);
    }
    if (n.parts.back().starts_with(kWhiteout)) return Whiteout(n);
    switch (e.type) {
      case TarEntry::Type::kChar:
      case TarEntry::Type::kBlock:
        Skipped(n.path + ": device node skipped");
        return {};
      case TarEntry::Type::kFifo:
        Skipped(n.path + ": fifo skipped");
        return {};
      case TarEntry::Type::kFile:
        return File(e, n);
      case TarEntry::Type::kDir:
        return Directory(e, n);
      case TarEntry::Type::kSymlink:
        return Symlink(e, n);
      case TarEntry::Type::kHardlink:
        return Hardlink(e, n);
    }
    return {};
  }

  // The directory of `parts` (all of them), each opened beneath the last; missing ones made when `create`.
  Result<Fd> OpenDir(const std::vector<std::string>& parts, size_t count, bool create) {
    Fd cur(::fcntl(root_.get(), F_DUPFD_CLOEXEC, 0));
    if (!cur.valid()) return SysFail("dup of the layer directory");
    std::string so_far;
    for (size_t i = 0; i < count; ++i) {
      so_far = Join(so_far, parts[i]);
      int fd = OpenBeneath(cur.get(), parts[i], O_RDONLY | O_DIRECTORY);
      if (fd < 0 && errno == ENOENT && create) {
        ISB_TRY(CountEntry());
        ISB_TRY(Charge(kDirCost));
        if (::mkdirat(cur.get(), parts[i].c_str(), 0700) != 0) return SysFail("mkdir of parent \"" + so_far + "\"");
        fd = OpenBeneath(cur.get(), parts[i], O_RDONLY | O_DIRECTORY);
        if (fd >= 0 && ::fchmod(fd, 0755) != 0) return SysFail("chmod of parent \"" + so_far + "\"");
      }
      if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
        // O_DIRECTORY says ENOTDIR for a symlink before O_NOFOLLOW says ELOOP: look at what is there.
        struct stat st;
        if (::fstatat(cur.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
          return Fail(Code::kInvalidArgument,
                      "parent \"" + so_far + "\" is a symlink (the unpacker follows no symlink)");
        }
        return Fail(Code::kInvalidArgument, "parent \"" + so_far + "\" is not a directory");
      }
      if (fd < 0) return SysFail("open of \"" + so_far + "\"");
      cur.Reset(fd);
    }
    return cur;
  }
  // The directory an entry goes in, borrowed from a one-entry cache (a layer's entries come directory by directory):
  // valid until the next OpenParent. Removals take only names inside it today; ClearSlot forgets it should one ever
  // take it or a directory above it.
  Result<int> OpenParent(const Name& n) {
    const std::string parent = ParentPath(n);
    if (!cached_.valid() || cached_path_ != parent) {
      cached_.Reset();
      ISB_ASSIGN_OR_RETURN(cached_, OpenDir(n.parts, n.parts.size() - 1, true));
      cached_path_ = parent;
    }
    return cached_.get();
  }

  // Makes room for `leaf` in `parent`: what is there goes (a directory with all below it), except a directory when
  // `merge_dir`. True when a directory stays.
  Result<bool> ClearSlot(int parent, const std::string& leaf, const std::string& path, bool merge_dir) {
    struct stat st;
    if (::fstatat(parent, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return false;
      return SysFail("stat of \"" + path + "\"");
    }
    if (merge_dir && S_ISDIR(st.st_mode)) return true;
    ISB_TRY(RemoveTree(parent, leaf, path));
    if (cached_path_ == path || cached_path_.starts_with(path + "/")) cached_.Reset();
    names_kept_ -= EraseTree(dirs_, path) + EraseTree(made_, path);
    return false;
  }

  Status RemoveTree(int parent, const std::string& leaf, const std::string& path) {
    struct stat st;
    if (::fstatat(parent, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return SysFail("stat of \"" + path + "\"");
    if (S_ISDIR(st.st_mode)) {
      Fd dir(OpenBeneath(parent, leaf, O_RDONLY | O_DIRECTORY));
      if (!dir.valid()) return SysFail("open of \"" + path + "\" to replace it");
      ISB_ASSIGN_OR_RETURN(std::vector<std::string> names, List(dir.get(), path));
      for (const std::string& child : names) ISB_TRY(RemoveTree(dir.get(), child, path + "/" + child));
    }
    if (::unlinkat(parent, leaf.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0) {
      return SysFail("removal of \"" + path + "\" to replace it");
    }
    return {};
  }

  Result<std::vector<std::string>> List(int dirfd, const std::string& path) {
    const int copy = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    DIR* d = copy >= 0 ? ::fdopendir(copy) : nullptr;
    if (d == nullptr) {
      if (copy >= 0) ::close(copy);
      return SysFail("listing of \"" + path + "\"");
    }
    std::vector<std::string> names;
    while (const dirent* ent = ::readdir(d)) {
      const std::string_view name = ent->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    ::closedir(d);
    return names;
  }

  // A line of UnpackReport::skipped; past kMaxSkipped lines only counted, so that a layer cannot grow the report
  // past its own size many times over (a 4 KiB name with thousands of dropped xattrs).
  void Skipped(std::string line) {
    if (report_.skipped.size() < kMaxSkipped) {
      report_.skipped.push_back(std::move(line));
    } else {
      ++skipped_more_;
    }
  }

  uint32_t FinalMode(const TarEntry& e) {
    uint32_t mode = e.mode & 07777;
    if ((mode & (S_ISUID | S_ISGID)) != 0) {
      ++report_.setid_stripped;
      mode &= ~static_cast<uint32_t>(S_ISUID | S_ISGID);
    }
    return mode;
  }

  Status SetXattrs(int fd, const TarEntry& e, const std::string& path) {
    for (const auto& [key, value] : e.xattrs) {
      if (!LayerXattrKept(key)) {
        Skipped(path + ": xattr " + Shown(key) + " dropped");
        continue;
      }
      if (::fsetxattr(fd, key.c_str(), value.data(), value.size(), 0) != 0) return SysFail("setxattr " + key);
    }
    return {};
  }

  Status File(const TarEntry& e, const Name& n) {
    ISB_ASSIGN_OR_RETURN(int parent, OpenParent(n));
    ISB_TRY(ClearSlot(parent, n.parts.back(), n.path, false));
    ISB_TRY(Charge(e.size));
    Fd fd(OpenBeneath(parent, n.parts.back(), O_WRONLY | O_CREAT | O_EXCL, 0600));
    if (!fd.valid()) return SysFail("create");
    std::array<uint8_t, 64 << 10> buf;
    for (;;) {
      ISB_ASSIGN_OR_RETURN(size_t got, tar_.ReadData(buf));
      if (got == 0) break;
      for (size_t done = 0; done < got;) {
        const ssize_t w = ::write(fd.get(), buf.data() + done, got - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return SysFail("write");
        done += static_cast<size_t>(w);
      }
      report_.bytes += got;
    }
    // chown before chmod: chown clears set-id bits, and the mode is the last word.
    if (::fchown(fd.get(), e.uid, e.gid) != 0) return SysFail("chown");
    if (::fchmod(fd.get(), FinalMode(e)) != 0) return SysFail("chmod");
    ISB_TRY(SetXattrs(fd.get(), e, n.path));
    const timespec times[2] = {MtimeOf(e), MtimeOf(e)};
    if (::futimens(fd.get(), times) != 0) return SysFail("utimensat");
    ISB_TRY(KeepMade(n.path));
    ++report_.files;
    return {};
  }

  Status Directory(const TarEntry& e, const Name& n) {
    Fd fd;
    if (n.parts.empty()) {
      fd.Reset(::fcntl(root_.get(), F_DUPFD_CLOEXEC, 0));
    } else {
      ISB_ASSIGN_OR_RETURN(int parent, OpenParent(n));
      ISB_ASSIGN_OR_RETURN(bool kept, ClearSlot(parent, n.parts.back(), n.path, true));
      // 0700 until the end: the final mode may forbid writing what comes below.
      if (!kept) {
        ISB_TRY(Charge(kDirCost));
        if (::mkdirat(parent, n.parts.back().c_str(), 0700) != 0) return SysFail("mkdir");
      }
      fd.Reset(OpenBeneath(parent, n.parts.back(), O_RDONLY | O_DIRECTORY));
    }
    if (!fd.valid()) return SysFail("open");
    if (::fchown(fd.get(), e.uid, e.gid) != 0) return SysFail("chown");
    ISB_TRY(SetXattrs(fd.get(), e, n.path.empty() ? "." : n.path));
    ISB_TRY(KeepDir(n.path, DirTimes{FinalMode(e), MtimeOf(e)}));
    ++report_.dirs;
    return {};
  }

  Status Symlink(const TarEntry& e, const Name& n) {
    if (e.link.empty()) return Fail(Code::kInvalidArgument, "a symlink with an empty target");
    ISB_ASSIGN_OR_RETURN(int parent, OpenParent(n));
    const std::string& leaf = n.parts.back();
    ISB_TRY(ClearSlot(parent, leaf, n.path, false));
    if (::symlinkat(e.link.c_str(), parent, leaf.c_str()) != 0) return SysFail("symlink");
    if (::fchownat(parent, leaf.c_str(), e.uid, e.gid, AT_SYMLINK_NOFOLLOW) != 0) return SysFail("lchown");
    const timespec times[2] = {MtimeOf(e), MtimeOf(e)};
    if (::utimensat(parent, leaf.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) return SysFail("utimensat");
    for (const auto& x : e.xattrs) Skipped(n.path + ": xattr " + Shown(x.first) + " dropped");
    ISB_TRY(KeepMade(n.path));
    ++report_.symlinks;
    return {};
  }

  Status Hardlink(const TarEntry& e, const Name& n) {
    Result<Name> target = Normalize(e.link);
    if (!target.ok()) {
      return Fail(Code::kInvalidArgument, "the hardlink target \"" + Shown(e.link) + "\" " + target.error().message);
    }
    if (target->path == n.path) return Fail(Code::kInvalidArgument, "a hardlink to itself");
    if (!made_.contains(target->path)) {
      return Fail(Code::kInvalidArgument, "a hardlink to \"" + Shown(e.link) +
                                              "\", which is no file this layer extracted before it (a hardlink may "
                                              "only name an earlier file of its own layer)");
    }
    ISB_ASSIGN_OR_RETURN(Fd from, OpenDir(target->parts, target->parts.size() - 1, false));
    ISB_ASSIGN_OR_RETURN(int parent, OpenParent(n));
    ISB_TRY(ClearSlot(parent, n.parts.back(), n.path, false));
    // Flags 0: a symlink target is linked as the symlink itself, never followed.
    if (::linkat(from.get(), target->parts.back().c_str(), parent, n.parts.back().c_str(), 0) != 0) {
      return SysFail("link to \"" + target->path + "\"");
    }
    ISB_TRY(KeepMade(n.path));
    ++report_.hardlinks;
    return {};
  }

  Status Whiteout(const Name& n) {
    const std::string& leaf = n.parts.back();
    if (leaf == kOpaque) {
      ISB_ASSIGN_OR_RETURN(int dir, OpenParent(n));
      for (const char* key : {"trusted.overlay.opaque", "user.overlay.opaque"}) {
        if (::fsetxattr(dir, key, "y", 1, 0) != 0) return SysFail(std::string("setxattr ") + key);
      }
      ++report_.opaque_dirs;
      return {};
    }
    if (leaf.starts_with(std::string(kWhiteout) + std::string(kWhiteout))) {
      Skipped(n.path + ": reserved whiteout name skipped");
      return {};
    }
    const std::string hidden = leaf.substr(kWhiteout.size());
    if (hidden.empty() || hidden == "." || hidden == "..") {
      return Fail(Code::kInvalidArgument, "a whiteout of no name (\"" + leaf + "\")");
    }
    ISB_ASSIGN_OR_RETURN(int parent, OpenParent(n));
    const std::string path = Join(ParentPath(n), hidden);
    ISB_TRY(ClearSlot(parent, hidden, path, false));
    if (::mknodat(parent, hidden.c_str(), S_IFCHR, makedev(0, 0)) != 0) return SysFail("mknod of the whiteout");
    ++report_.whiteouts;
    return {};
  }

  // Directories' modes and times, deepest first, once nothing more is written below them.
  Status FinishDirs() {
    for (const auto& [path, times] : DeepestFirst(dirs_)) {
      entry_ = path.empty() ? "." : Shown(path);
      ISB_ASSIGN_OR_RETURN(Name n, Normalize(path));
      ISB_ASSIGN_OR_RETURN(Fd fd, OpenDir(n.parts, n.parts.size(), false));
      if (::fchmod(fd.get(), times.mode) != 0) return SysFail("chmod");
      const timespec ts[2] = {times.mtime, times.mtime};
      if (::futimens(fd.get(), ts) != 0) return SysFail("utimensat");
    }
    return {};
  }

  TarReader& tar_;
  const UnpackLimits& limits_;
  Fd root_;
  UnpackReport report_;
  std::string entry_;          // the entry being placed, for messages
  uint64_t entries_ = 0;       // against max_entries: tar entries and parent directories made
  uint64_t charged_ = 0;       // against max_bytes: file data and kEntryCost, kDirCost
  uint64_t names_kept_ = 0;    // against max_name_bytes: the bytes of the keys of dirs_ and made_
  uint64_t skipped_more_ = 0;  // skipped lines past kMaxSkipped
  Fd cached_;                  // OpenParent's last directory
  std::string cached_path_;
  std::map<std::string, DirTimes> dirs_;  // directories this layer declared, their final mode and mtime
  std::set<std::string> made_;            // non-directories this layer made: what a hardlink may name
};

}  // namespace

int OpenBeneath(int dirfd, const std::string& name, uint64_t flags, mode_t mode) {
  open_how how{};
  how.flags = flags | O_CLOEXEC | O_NOFOLLOW;
  how.mode = (flags & O_CREAT) != 0 ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, dirfd, name.c_str(), &how, sizeof how));
}

bool LayerXattrKept(const std::string& name) {
  return name.starts_with("user.") && !name.starts_with("user.overlay.") && name.find('\0') == std::string::npos;
}

std::vector<std::pair<std::string, DirTimes>> DeepestFirst(const std::map<std::string, DirTimes>& dirs) {
  std::vector<std::pair<std::string, DirTimes>> order(dirs.begin(), dirs.end());
  auto depth = [](const std::string& p) { return p.empty() ? -1 : std::count(p.begin(), p.end(), '/'); };
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto& a, const auto& b) { return depth(a.first) > depth(b.first); });
  return order;
}

Result<UnpackReport> UnpackLayer(TarReader& tar, const std::string& dir, const UnpackLimits& limits) {
  return Unpacker(tar, limits).Run(dir);
}

}  // namespace isb::image
