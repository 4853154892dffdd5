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

// fork(2) with `flags` (namespaces) and a pidfd. Returns 0 in the child, the pid in the parent, -errno on failure.
// REQUIRES: the calling process is single-threaded.
pid_t CloneWithPidfd(int flags, int* pidfd);

Status ValidateHostname(const std::string& name);

// Async-signal-safe steps run in the child; each returns 0 or -errno.
int SetHostname(const char* name, size_t len);
int BringUpLoopback();

}  // namespace isb::engine
