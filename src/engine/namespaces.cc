// clone and the namespace-local settings.
#include "engine/namespaces.h"

#include <linux/securebits.h>
#include <net/if.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace isb::engine {

Result<NamespaceOwner> NamespaceOwner::Become(uid_t uid, gid_t gid) {
  NamespaceOwner o;
  o.old_uid_ = ::geteuid();
  o.old_gid_ = ::getegid();
  long bits = ::syscall(SYS_prctl, PR_GET_SECUREBITS, 0, 0, 0, 0);
  if (bits < 0) return Error::Sys("PR_GET_SECUREBITS");
  o.old_bits_ = static_cast<int>(bits);
  o.old_dumpable_ = static_cast<int>(::syscall(SYS_prctl, PR_GET_DUMPABLE, 0, 0, 0, 0));
  if (o.old_dumpable_ < 0 || ::syscall(SYS_prctl, PR_GET_PDEATHSIG, &o.old_death_signal_, 0, 0, 0) != 0)
    return Error::Sys("PR_GET_DUMPABLE or PR_GET_PDEATHSIG");
  o.old_parent_ = ::getppid();
  if (::syscall(SYS_prctl, PR_SET_SECUREBITS, bits | SECBIT_NO_SETUID_FIXUP, 0, 0, 0) != 0)
    return Error::Sys("keep capabilities across the change of euid (PR_SET_SECUREBITS)");
  o.active_ = true;  // from here the destructor puts back what changed
  if (::syscall(SYS_setresgid, -1, gid, -1) != 0) return Error::Sys("setresgid to the namespace's owner");
  if (::syscall(SYS_setresuid, -1, uid, -1) != 0) return Error::Sys("setresuid to the namespace's owner");
  return o;
}

NamespaceOwner::NamespaceOwner(NamespaceOwner&& other) noexcept
    : active_(other.active_),
      old_uid_(other.old_uid_),
      old_gid_(other.old_gid_),
      old_bits_(other.old_bits_),
      old_dumpable_(other.old_dumpable_),
      old_death_signal_(other.old_death_signal_),
      old_parent_(other.old_parent_) {
  other.active_ = false;
}

NamespaceOwner::~NamespaceOwner() {
  if (!active_) return;
  if (::syscall(SYS_setresuid, -1, old_uid_, -1) != 0 || ::syscall(SYS_setresgid, -1, old_gid_, -1) != 0 ||
      ::syscall(SYS_prctl, PR_SET_SECUREBITS, old_bits_, 0, 0, 0) != 0)
    std::abort();
  (void)::syscall(SYS_prctl, PR_SET_DUMPABLE, old_dumpable_, 0, 0, 0);
  (void)::syscall(SYS_prctl, PR_SET_PDEATHSIG, old_death_signal_, 0, 0, 0);
  // A parent that died while the signal was unset sent none: this process ends as it would have.
  if (old_death_signal_ != 0 && ::getppid() != old_parent_) ::raise(old_death_signal_);
}

pid_t CloneWithPidfd(int flags, int* pidfd) {
  // Raw clone without a new stack behaves as fork: the child continues on a copy of the caller's stack.
  long rc = ::syscall(SYS_clone, static_cast<unsigned long>(flags) | CLONE_PIDFD | SIGCHLD, nullptr, pidfd, nullptr, 0);
  if (rc < 0) return -errno;
  return static_cast<pid_t>(rc);
}

Status ValidateHostname(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 63 && name.front() != '-' && name.back() != '-';
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-');
  if (!ok) return Error::Msg("invalid hostname '" + name + "': use 1-63 letters, digits and inner hyphens");
  return {};
}

int SetHostname(const char* name, size_t len) { return ::sethostname(name, len) == 0 ? 0 : -errno; }

int BringUpLoopback() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  ifreq req{};
  std::memcpy(req.ifr_name, "lo", 3);
  int rc = ::ioctl(fd, SIOCGIFFLAGS, &req);
  if (rc == 0) {
    req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP | IFF_RUNNING);
    rc = ::ioctl(fd, SIOCSIFFLAGS, &req);
  }
  int err = rc == 0 ? 0 : -errno;
  ::close(fd);
  return err;
}

}  // namespace isb::engine
