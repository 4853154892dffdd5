// Fuzzes the status peek of relayed plain HTTP connections, which decides whether an origin took an upgrade: any
// bytes give "need more", "not a status line" or a three-digit code, read from the first twelve bytes alone, and
// never a status other than the one the full response-head parser reads.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "egress/http_response.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isb::egress;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const int status = PeekResponseStatus(bytes);
  if (size < kStatusPrefix) {
    if (status != kStatusNeedMore) std::abort();
    return 0;
  }
  if (status != kNotAStatus && (status < 100 || status > 999)) std::abort();
  if (PeekResponseStatus(bytes.substr(0, kStatusPrefix)) != status) std::abort();
  ResponseHeadResult full = ParseResponseHead(bytes);
  if (full.kind == ResponseHeadResult::kParsed && full.head.status != status) std::abort();
  return 0;
}
