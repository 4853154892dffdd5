#include "base/fd_passing.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace isb {

ssize_t SendWithFds(int sock, const void* data, size_t len, const int* fds, size_t nfds) {
  if (nfds > kMaxPassedFds) {
    errno = EINVAL;
    return -1;
  }
  iovec iov{const_cast<void*>(data), len};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (nfds > 0) {
    m.msg_control = control;
    m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  return ::sendmsg(sock, &m, MSG_NOSIGNAL);
}

}  // namespace isb
