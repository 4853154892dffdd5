// Fuzzes the HTTP request-head parser: any bytes must give a result without reading past the input, and a parsed
// head must keep the promises the proxy relies on (a checked host, a port, no CR/LF/NUL in a value, one framing).
// The first line also goes to NamesAnHttpVersion, which the proxy asks of a tunnel's first line.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "egress/http_head.h"
#include "net/host_name.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string_view line = bytes.substr(0, bytes.find('\n'));
  if (isb::egress::NamesAnHttpVersion(line)) {
    // Then the line, blanks at its end aside, has a blank before a last word that starts with "HTTP/".
    std::string_view trimmed = line;
    while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\t')) trimmed.remove_suffix(1);
    const size_t blank = trimmed.find_last_of(" \t");
    if (blank == std::string_view::npos || trimmed.size() - blank - 1 < 5) std::abort();
    for (size_t i = 0; i < 5; ++i)
      if (std::toupper(static_cast<unsigned char>(trimmed[blank + 1 + i])) != "HTTP/"[i]) std::abort();
  }
  isb::egress::HeadResult r = isb::egress::ParseHttpHead(bytes);
  if (r.seen > size) std::abort();
  if (r.kind == isb::egress::HeadResult::kNeedMore && r.seen != size) std::abort();
  if (r.kind == isb::egress::HeadResult::kMalformed && (r.status < 400 || r.reason.empty())) std::abort();
  if (r.kind != isb::egress::HeadResult::kParsed) return 0;
  const isb::egress::HttpHead& h = r.head;
  if (h.size != r.seen || h.size < 4 || bytes.substr(h.size - 4, 4) != "\r\n\r\n") std::abort();
  if (h.host.empty() || h.port == 0 || (h.content_length && h.chunked)) std::abort();
  if (!h.host_is_address) {
    auto again = isb::net::CanonicalHostName(h.host);
    if (!again.ok() || *again != h.host) std::abort();
  }
  for (const auto& header : h.headers) {
    if (header.value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) std::abort();
  }
  // The head alone parses the same; without its last byte it is incomplete.
  isb::egress::HeadResult alone = isb::egress::ParseHttpHead(bytes.substr(0, h.size));
  if (alone.kind != r.kind || alone.head.host != h.host || alone.head.port != h.port) std::abort();
  if (isb::egress::ParseHttpHead(bytes.substr(0, h.size - 1)).kind != isb::egress::HeadResult::kNeedMore) std::abort();
  return 0;
}
