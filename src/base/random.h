// Randomness from the OS, for ids and secrets.
#pragma once

#include <cstddef>
#include <string>

#include "base/result.h"

namespace isb {

// `bytes` random bytes from getrandom(2), as lower-case hex.
Result<std::string> RandomHex(size_t bytes);

}  // namespace isb
