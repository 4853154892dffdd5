// OS randomness.
#include "base/random.h"

#include <sys/random.h>

#include <vector>

namespace isb {

Result<std::string> RandomHex(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::Sys("getrandom");
    got += static_cast<size_t>(n);
  }
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes);
  for (unsigned char c : raw) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

}  // namespace isb
