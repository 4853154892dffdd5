// Fuzzes the chunked-body scanner: fed at once or in pieces of any size, it finds the same end (or the same fault),
// never claims more bytes than it was given, and claims them all while it wants more.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "egress/http_body.h"

namespace {

using isb::egress::ChunkedScanner;

struct Total {
  size_t used = 0;
  ChunkedScanner::State state = ChunkedScanner::State::kMore;
};

Total Scan(std::string_view bytes, size_t piece) {
  ChunkedScanner scanner;
  Total total;
  for (size_t at = 0; at < bytes.size() && total.state == ChunkedScanner::State::kMore; at += piece) {
    std::string_view part = bytes.substr(at, piece);
    ChunkedScanner::Step step = scanner.Feed(part);
    if (step.used > part.size()) std::abort();
    if (step.state == ChunkedScanner::State::kMore && step.used != part.size()) std::abort();
    if (step.state == ChunkedScanner::State::kMalformed && step.reason.empty()) std::abort();
    total.used += step.used;
    total.state = step.state;
  }
  return total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = data[0] % 17 + 1;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  Total whole = Scan(bytes, bytes.size() + 1);
  Total split = Scan(bytes, piece);
  if (whole.state != split.state) std::abort();
  // Where the body ends, or the byte at fault, does not depend on how the bytes arrived.
  if (whole.used != split.used) std::abort();
  if (whole.state == ChunkedScanner::State::kDone && bytes.substr(whole.used - 2, 2) != "\r\n") std::abort();
  return 0;
}
