// A pooled sandbox's hostname and scratch sizes, set from a thread inside its namespaces.
#include "engine/namespace_fit.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <thread>

#include "base/fd.h"
#include "engine/mounts.h"
#include "engine/spawner.h"

namespace isb::engine {
namespace {

// Rewrites the file at `path` in place (its owner and mode stay those the sandbox's setup gave it), never through a
// symlink.
Status Rewrite(const char* path, const std::string& contents) {
  Fd fd(::open(path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return Error::Sys(std::string("open the sandbox's ") + path);
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t n = ::write(fd.get(), contents.data() + off, contents.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::Sys(std::string("write the sandbox's ") + path);
    off += static_cast<size_t>(n);
  }
  return {};
}

// Runs on a thread of its own, which enters the namespaces and is never used again.
Status FitFromInside(int init, const NamespaceFit& fit) {
  // A thread that shares its root and working directory with others may not enter a mount namespace.
  if (::unshare(CLONE_FS) != 0) return Error::Sys("unshare CLONE_FS");
  if (::setns(init, CLONE_NEWUTS | CLONE_NEWNS) != 0) return Error::Sys("entering the sandbox's namespaces");
  if (!fit.hostname.empty()) {
    if (::sethostname(fit.hostname.data(), fit.hostname.size()) != 0) return Error::Sys("set the sandbox's hostname");
    ISB_TRY(Rewrite("/etc/hostname", fit.hostname + "\n"));
    ISB_TRY(Rewrite("/etc/hosts", HostsFile(fit.hostname)));
  }
  if (fit.scratch_bytes != 0) {
    // The flags the engine mounted them with (engine/mounts.cc): a remount sets the mount's flags anew.
    for (const char* scratch : {"/tmp", "/dev/shm"}) {
      if (::mount("tmpfs", scratch, "tmpfs", MS_REMOUNT | MS_NOSUID | MS_NODEV,
                  ScratchTmpfs(fit.scratch_bytes).c_str()) != 0)
        return Error::Sys(std::string("resize the sandbox's ") + scratch);
    }
  }
  return {};
}

}  // namespace

Status FitNamespaces(pid_t pid, uint64_t start_time, const NamespaceFit& fit) {
  if (fit.hostname.empty() && fit.scratch_bytes == 0) return {};
  Fd init = OpenProcess(pid, start_time);
  if (!init.valid()) return Error::Of(Code::kConflict, "the sandbox is not running");
  Status result = Error::Msg("the namespace thread did not run");
  std::thread inside([&] { result = FitFromInside(init.get(), fit); });
  inside.join();
  return result;
}

}  // namespace isb::engine
