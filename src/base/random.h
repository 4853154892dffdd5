// Randomness from the OS, for ids and secrets.
#pragma once

#include <cstddef>
#include <string>

#include "base/result.h"

namespace isb {

// Fills `out` with `size` random bytes from getrandom(2).
Status RandomBytes(void* out, size_t size);
// `bytes` random bytes from getrandom(2), as lower-case hex.
Result<std::string> RandomHex(size_t bytes);

}  // namespace isb
