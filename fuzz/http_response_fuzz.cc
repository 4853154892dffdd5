// Fuzzes the response-head parser of intercepted connections: any bytes give a result without reading past the
// input, and a parsed head keeps the promises the relay relies on (one framing, its exact size, clean values).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "egress/http_response.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using isb::egress::ResponseHeadResult;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ResponseHeadResult r = isb::egress::ParseResponseHead(bytes);
  if (r.kind == ResponseHeadResult::kMalformed && r.reason.empty()) std::abort();
  if (r.kind != ResponseHeadResult::kParsed) return 0;
  const isb::egress::ResponseHead& h = r.head;
  if (h.size > size || h.size < 4 || bytes.substr(h.size - 4, 4) != "\r\n\r\n") std::abort();
  if (h.status < 100 || h.status > 599 || (h.minor_version != 0 && h.minor_version != 1)) std::abort();
  if ((h.content_length && (h.chunked || h.until_close)) || (h.chunked && h.until_close)) std::abort();
  for (const auto& header : h.headers) {
    if (header.value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) std::abort();
  }
  ResponseHeadResult alone = isb::egress::ParseResponseHead(bytes.substr(0, h.size));
  if (alone.kind != r.kind || alone.head.size != h.size || alone.head.status != h.status) std::abort();
  if (isb::egress::ParseResponseHead(bytes.substr(0, h.size - 1)).kind != ResponseHeadResult::kNeedMore) std::abort();
  return 0;
}
