// Whole-file helpers.
#include "base/file.h"

#include <sys/syscall.h>

#include <linux/openat2.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fd.h"

namespace isb {

Result<std::string> ReadFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::Sys("open " + path);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::Sys("read " + path);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Status WriteKernelFile(const std::string& path, std::string_view data) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::Sys("open " + path);
  ssize_t n = ::write(fd.get(), data.data(), data.size());
  if (n < 0) return Error::Sys("write '" + std::string(data) + "' to " + path);
  if (static_cast<size_t>(n) != data.size()) return Error::Msg("short write to " + path);
  return {};
}

Status WriteFile(const std::string& path, std::string_view data, int mode) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd.valid()) return Error::Sys("create " + path);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::Sys("write " + path);
    off += static_cast<size_t>(n);
  }
  return {};
}

Status WriteFileAtomically(const std::string& path, std::string_view data, int mode) {
  const std::string part = path + ".new" + std::to_string(::gettid());
  if (Status st = WriteFile(part, data, mode); !st.ok()) {
    ::unlink(part.c_str());
    return st;
  }
  if (::rename(part.c_str(), path.c_str()) != 0) {
    Error e = Error::Sys("rename " + part + " to " + path);
    ::unlink(part.c_str());
    return e;
  }
  return {};
}

Status MakeDirs(const std::string& path, int mode) {
  if (path.empty()) return {};
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i != path.size() && path[i] != '/') continue;
    std::string prefix = path.substr(0, i);
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) return Error::Sys("mkdir " + prefix);
  }
  return {};
}

int OpenNoSymlinks(const char* path, uint64_t flags) {
  open_how how{};
  how.flags = flags | O_CLOEXEC | O_NOFOLLOW;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how));
}

}  // namespace isb
