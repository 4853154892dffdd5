// Byte sources: an fd, a string view, and a source observed on the way.
#include "image/byte_source.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace isb::image {

Result<size_t> ReadFull(ByteSource& in, std::span<uint8_t> out) {
  size_t got = 0;
  while (got < out.size()) {
    ISB_ASSIGN_OR_RETURN(size_t n, in.Read(out.subspan(got)));
    if (n == 0) break;
    got += n;
  }
  return got;
}

Result<size_t> FdSource::Read(std::span<uint8_t> out) {
  for (;;) {
    const ssize_t n = ::read(fd_, out.data(), out.size());
    if (n >= 0) return static_cast<size_t>(n);
    if (errno != EINTR) return Error::Sys("read of fd " + std::to_string(fd_));
  }
}

Result<size_t> StringSource::Read(std::span<uint8_t> out) {
  const size_t n = std::min(out.size(), rest_.size());
  if (n > 0) std::memcpy(out.data(), rest_.data(), n);
  rest_.remove_prefix(n);
  return n;
}

Result<size_t> ObservedSource::Read(std::span<uint8_t> out) {
  ISB_ASSIGN_OR_RETURN(size_t n, in_.Read(out));
  if (n > 0) observe_(std::span<const uint8_t>(out.data(), n));
  return n;
}

}  // namespace isb::image
