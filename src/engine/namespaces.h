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
// thread's capabilities (SECBIT_NO_SETUID_FIXUP while it lives): the clone is as privileged as before. So the
// launcher needs CAP_SETPCAP and that securebit unlocked. Raw system calls: only the calling thread changes. A child
// cloned into a new user namespace starts with the default securebits (the kernel resets them there), so the bit
// never reaches a sandbox.
class NamespaceOwner {
 public:
  static Result<NamespaceOwner> Become(uid_t uid, gid_t gid);
  NamespaceOwner(NamespaceOwner&& other) noexcept;
  NamespaceOwner& operator=(NamespaceOwner&&) = delete;
  // Back to the old ids and securebits (aborts if it cannot: the thread must not stay another), and to the
  // process's old dumpable flag and parent-death signal, which the kernel resets on every change of euid.
  ~NamespaceOwner();

 private:
  NamespaceOwner() = default;
  bool active_ = false;
  uid_t old_uid_ = 0;
  gid_t old_gid_ = 0;
  int old_bits_ = 0;
  int old_dumpable_ = 0;
  int old_death_signal_ = 0;
  pid_t old_parent_ = 0;
};

// fork(2) with `flags` (namespaces) and a pidfd. Returns 0 in the child, the pid in the parent, -errno on failure.
// REQUIRES: the calling process is single-threaded.
pid_t CloneWithPidfd(int flags, int* pidfd);

Status ValidateHostname(const std::string& name);

// Async-signal-safe steps run in the child; each returns 0 or -errno.
int SetHostname(const char* name, size_t len);
int BringUpLoopback();

}  // namespace isb::engine
