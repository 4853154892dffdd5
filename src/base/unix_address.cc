// Unix socket addresses.
#include "base/unix_address.h"

#include <sys/socket.h>

#include <cstring>

namespace isb {

Result<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return Error::Msg("unix socket path '" + path + "' is empty or longer than " +
                      std::to_string(sizeof addr.sun_path - 1) + " bytes; use a shorter state directory");
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

}  // namespace isb
