// Sending descriptors over a unix socket (SCM_RIGHTS) with one message. Allocates nothing, so the sandbox's init
// and the spawner may use it too.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace isb {

inline constexpr size_t kMaxPassedFds = 4;

// sendmsg(2) of `len` bytes with `nfds` descriptors (none when 0; at most kMaxPassedFds), MSG_NOSIGNAL. Returns
// what sendmsg returned; -1 with EINVAL for too many descriptors.
ssize_t SendWithFds(int sock, const void* data, size_t len, const int* fds, size_t nfds);

// recvmsg(2) of up to `len` bytes (retried on EINTR; `flags` such as MSG_DONTWAIT added) with at most one
// descriptor, received close-on-exec into *fd (-1 when none came; any others are closed). Returns what recvmsg
// returned.
ssize_t RecvWithFd(int sock, void* data, size_t len, int* fd, int flags = 0);

}  // namespace isb
