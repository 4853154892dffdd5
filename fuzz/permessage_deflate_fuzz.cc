// Fuzzes permessage-deflate: any bytes inflated as a message (in pieces, under a limit) give the content or a
// refusal, never more than the limit; any bytes deflated and inflated again come back the same; any text as a
// Sec-WebSocket-Extensions value parses, or is refused, and each permessage-deflate element's parameters likewise.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "net/permessage_deflate.h"

namespace {

constexpr size_t kLimit = 1 << 16;

isb::Result<std::string> Inflate(isb::net::WsInflater& inflater, std::string_view compressed, size_t piece) {
  std::string out;
  while (!compressed.empty()) {
    ISB_ASSIGN_OR_RETURN(size_t used, inflater.Take(compressed, out, piece));
    if (used > compressed.size() || out.size() > kLimit) std::abort();
    compressed.remove_prefix(used);
  }
  for (int rounds = 0;; ++rounds) {
    ISB_ASSIGN_OR_RETURN(bool whole, inflater.Finish(out, piece));
    if (out.size() > kLimit || rounds > static_cast<int>(kLimit)) std::abort();
    if (whole) return out;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const size_t piece = size > 0 ? 1 + data[0] % 64 : 1;
  isb::net::WsInflater inflater(size > 0 && (data[0] & 0x80) != 0, kLimit);
  (void)Inflate(inflater, bytes, piece);

  isb::net::WsDeflater deflater(9 + (size > 0 ? data[0] % 7 : 0), false);
  isb::net::WsInflater back(false, kLimit);
  for (int round = 0; round < 2; ++round) {
    std::string compressed;
    deflater.Take(bytes.substr(0, kLimit), compressed);
    deflater.Finish(compressed);
    isb::Result<std::string> again = Inflate(back, compressed, piece);
    if (!again.ok() || *again != bytes.substr(0, kLimit)) std::abort();
  }

  auto list = isb::net::ParseExtensionList(bytes);
  if (list.ok()) {
    for (const auto& extension : *list) {
      if (extension.name.empty()) std::abort();
      if (extension.name == isb::net::kPermessageDeflate) {
        (void)isb::net::ParseDeflateParams(extension, false);
        (void)isb::net::ParseDeflateParams(extension, true);
      }
    }
  }
  return 0;
}
