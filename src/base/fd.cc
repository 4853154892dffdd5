// Fd and pipe creation.
#include "base/fd.h"

#include <fcntl.h>
#include <unistd.h>

namespace isb {

void Fd::Reset(int fd) {
  // close() is not retried on EINTR: on Linux the descriptor is released either way.
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Result<Pipe> MakePipe() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Error::Sys("pipe2");
  return Pipe{Fd(p[0]), Fd(p[1])};
}

}  // namespace isb
