// The address of a unix socket at a filesystem path.
#pragma once

#include <sys/un.h>

#include <string>

#include "base/result.h"

namespace isb {

// Fails with a clear message when `path` does not fit sun_path (108 bytes with its NUL).
Result<sockaddr_un> UnixAddress(const std::string& path);

}  // namespace isb
