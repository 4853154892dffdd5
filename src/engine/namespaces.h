// Namespace creation and the per-namespace settings (hostname, loopback) made from inside.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <string>

#include "base/result.h"

namespace isb::engine {

// The namespaces created at clone. The cgroup namespace is created later, by the child, once it is in its
// cgroup: a cgroup namespace's root is the cgroup of its creator at creation time.
inline constexpr int kCloneNamespaces =
    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET;

// While one lives, the calling thread's effective uid and gid are the given ones, so that a user namespace it creates
// is theirs (the kernel makes a namespace's owner its creator's euid). The real and saved ids stay, and so do the
// thread's capabilities (SECBIT_NO_SETUID_FIXUP while it lives): the clone is as privileged as before. Raw system
// calls: only the calling thread changes. A child cloned meanwhile inherits the securebit and must clear it
// (ClearSetuidFixupBit) before it changes ids.
class NamespaceOwner {
 public:
  static Result<NamespaceOwner> Become(uid_t uid, gid_t gid);
  NamespaceOwner(NamespaceOwner&& other) noexcept;
  NamespaceOwner& operator=(NamespaceOwner&&) = delete;
  ~NamespaceOwner();  // back to the old ids and securebits (aborts if it cannot: the thread must not stay another)

 private:
  NamespaceOwner() = default;
  bool active_ = false;
  uid_t old_uid_ = 0;
  gid_t old_gid_ = 0;
  int old_bits_ = 0;
};

// In a child cloned under a NamespaceOwner: the usual rules again (a change of uid from root drops capabilities).
// 0 or -errno.
int ClearSetuidFixupBit();

// fork(2) with `flags` (namespaces) and a pidfd. Returns 0 in the child, the pid in the parent, -errno on failure.
// REQUIRES: the calling process is single-threaded.
pid_t CloneWithPidfd(int flags, int* pidfd);

Status ValidateHostname(const std::string& name);

// Async-signal-safe steps run in the child; each returns 0 or -errno.
int SetHostname(const char* name, size_t len);
int BringUpLoopback();

}  // namespace isb::engine
