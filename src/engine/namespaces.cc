// clone and the namespace-local settings.
#include "engine/namespaces.h"

#include <net/if.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cstring>

namespace isb::engine {

pid_t CloneWithPidfd(int flags, int* pidfd) {
  // Raw clone without a new stack behaves as fork: the child continues on a copy of the caller's stack.
  long rc = ::syscall(SYS_clone, static_cast<unsigned long>(flags) | CLONE_PIDFD | SIGCHLD, nullptr, pidfd,
                      nullptr, 0);
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
