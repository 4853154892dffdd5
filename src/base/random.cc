// OS randomness.
#include "base/random.h"

#include <sys/random.h>

#include <vector>

namespace isb {

Status RandomBytes(void* out, size_t size) {
  auto* p = static_cast<unsigned char*>(out);
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::getrandom(p + got, size - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::Sys("getrandom");
    got += static_cast<size_t>(n);
  }
  return {};
}

Result<std::string> RandomHex(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  ISB_TRY(RandomBytes(raw.data(), raw.size()));
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
