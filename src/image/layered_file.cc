// A file of an image as a sandbox's overlay shows it.
#include "image/layered_file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/fd.h"

namespace isb::image {
namespace {

Fd OpenBeneath(int root, const std::string& path, int flags) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return Fd(static_cast<int>(::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how)));
}

bool IsWhiteout(const struct stat& st) { return S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0); }

bool Opaque(int dir) {
  char value[2];
  for (const char* attr : {"trusted.overlay.opaque", "user.overlay.opaque"}) {
    if (::fgetxattr(dir, attr, value, sizeof value) == 1 && value[0] == 'y') return true;
  }
  return false;
}

enum class InLayer { kAbsent, kHidden, kFound };

// Whether the directories on the way to `path` in one layer (which lacks `path` itself) hide the layers below:
// a whiteout or an opaque directory on the way does; the way ending in this layer does not.
InLayer AncestorsOf(int root, const std::string& path) {
  for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    const std::string dir = path.substr(0, slash);
    Fd where = OpenBeneath(root, dir, O_PATH | O_NOFOLLOW);
    if (!where.valid()) return errno == ENOENT ? InLayer::kAbsent : InLayer::kHidden;
    struct stat st {};
    if (::fstat(where.get(), &st) != 0) return InLayer::kHidden;
    if (S_ISLNK(st.st_mode)) return InLayer::kAbsent;   // a link to a directory: what it names is read where it is
    if (!S_ISDIR(st.st_mode)) return InLayer::kHidden;  // a whiteout or a file where a directory would be
    Fd d = OpenBeneath(root, dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
    if (d.valid() && Opaque(d.get())) return InLayer::kHidden;
  }
  return InLayer::kAbsent;
}

// `text`'s parts added to `parts`, a ".." taking one off (never above the root).
void AddParts(std::vector<std::string>& parts, const std::string& text) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('/', start);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(start, end - start);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
}

// Where the link at `path` (relative to the image's root) points: `target` taken from the image's root or from the
// link's directory. "" for a target that is the root itself.
std::string LinkTarget(const std::string& path, const std::string& target) {
  std::vector<std::string> parts;
  const size_t slash = path.rfind('/');
  if (!target.starts_with('/') && slash != std::string::npos) AddParts(parts, path.substr(0, slash));
  AddParts(parts, target);
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "/") + p;
  return out;
}

std::optional<std::string> ReadIn(const std::vector<std::string>& layers, const std::string& path, size_t max_bytes,
                                  int links) {
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    Fd root(::open(it->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) return std::nullopt;
    Fd where = OpenBeneath(root.get(), path, O_PATH | O_NOFOLLOW);
    if (!where.valid()) {
      if (errno != ENOENT || AncestorsOf(root.get(), path) == InLayer::kHidden) return std::nullopt;
      continue;
    }
    struct stat st {};
    if (::fstat(where.get(), &st) != 0) return std::nullopt;
    if (S_ISLNK(st.st_mode)) {
      char target[4096];
      const ssize_t n = ::readlinkat(where.get(), "", target, sizeof target);
      if (n <= 0 || static_cast<size_t>(n) == sizeof target || links >= 8) return std::nullopt;
      const std::string next = LinkTarget(path, std::string(target, static_cast<size_t>(n)));
      if (next.empty()) return std::nullopt;
      return ReadIn(layers, next, max_bytes, links + 1);
    }
    if (IsWhiteout(st) || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > max_bytes) return std::nullopt;
    // Opened for reading only now that it is known to be a regular file (no device or FIFO is ever opened).
    Fd f(::open(("/proc/self/fd/" + std::to_string(where.get())).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!f.valid()) return std::nullopt;
    std::string text(static_cast<size_t>(st.st_size), '\0');
    const ssize_t n = ::pread(f.get(), text.data(), text.size(), 0);
    if (n < 0) return std::nullopt;
    text.resize(static_cast<size_t>(n));
    return text;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> ReadLayeredFile(const std::vector<std::string>& layers, const std::string& path,
                                           size_t max_bytes) {
  return ReadIn(layers, path, max_bytes, 0);
}

}  // namespace isb::image
