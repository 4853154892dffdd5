// The seccomp filter every sandbox process runs under, compiled once in the parent into a BPF program.
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "base/result.h"

namespace isb::engine {

// A compiled filter. Installing it in the child is one syscall on memory the parent prepared: no allocation.
struct SeccompProgram {
  std::vector<sock_filter> code;
  sock_fprog prog() const {
    return sock_fprog{static_cast<unsigned short>(code.size()), const_cast<sock_filter*>(code.data())};
  }
};

// One refused syscall with the reason it is refused; SECURITY.md is generated from the same list.
struct SeccompRule {
  const char* syscall;
  const char* why;
};
const std::vector<SeccompRule>& RefusedSyscalls();

// A socket address family a sandbox may open, with what it is for; every other family below AF_MAX fails
// with EAFNOSUPPORT, as on a kernel built without it (AF_PACKET keeps EPERM). Netlink is allowed for the
// protocols listed in AllowedNetlinkProtocols() only; another fails with EPROTONOSUPPORT. SECURITY.md lists both.
struct SocketFamilyRule {
  int family;
  const char* name;
  const char* why;
};
const std::vector<SocketFamilyRule>& AllowedSocketFamilies();
const std::vector<SocketFamilyRule>& AllowedNetlinkProtocols();

// The filter: default allow; the refused list fails with EPERM; clone/unshare that would create a user namespace
// fail with EPERM; clone3 fails with ENOSYS (its flags live in memory a filter cannot read, and libc then falls
// back to clone); personality other than the default (PER_LINUX); packet and raw sockets; socket families and
// netlink protocols outside the allowed lists; TIOCSTI/TIOCLINUX; any other
// architecture kills the process.
// A system call name the build's libseccomp does not know is an error, not a rule silently left out.
Result<SeccompProgram> BuildSeccompProgram();
// The same with `refused` in place of RefusedSyscalls().
Result<SeccompProgram> BuildSeccompProgram(const std::vector<SeccompRule>& refused);

// The same filter, compiled when isb was built: what sandboxes run under. A test checks it equals
// BuildSeccompProgram().
const SeccompProgram& CompiledSeccompProgram();

// Installs `p` on the calling thread. Requires no_new_privs. Async-signal-safe.
int InstallSeccomp(const sock_fprog& p);

}  // namespace isb::engine
