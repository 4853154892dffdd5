// The HTTP/1.x response head an intercepted connection's origin sends: status line, header fields, and how its body
// is framed. Strict where a proxy and a client could read the framing differently; such a response is refused (the
// client gets a 502), never passed on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egress/http_head.h"

namespace isb::egress {

inline constexpr size_t kMaxResponseHead = 64 * 1024;

struct ResponseHead {
  int minor_version = 1;  // HTTP/1.0 or HTTP/1.1
  int status = 0;         // 100 to 599
  std::string reason;     // the reason phrase as sent (may be empty)
  std::vector<HttpHeader> headers;
  std::optional<uint64_t> content_length;
  bool chunked = false;      // Transfer-Encoding whose last coding is chunked
  bool until_close = false;  // Transfer-Encoding without chunked last: the body ends when the connection does
  size_t size = 0;           // bytes of the head, blank line included

  const std::string* Find(std::string_view name) const { return FindHeader(headers, name); }
};

struct ResponseHeadResult {
  enum Kind { kParsed, kNeedMore, kMalformed };
  Kind kind = kNeedMore;
  std::string reason;  // kMalformed: a fixed sentence saying what was wrong
  ResponseHead head;   // kParsed only
};

// Parses the response head at the start of `bytes`; kNeedMore until its blank line arrives (at most
// kMaxResponseHead bytes).
ResponseHeadResult ParseResponseHead(std::string_view bytes);

// The status of the first response on a relayed (not intercepted) plain HTTP connection, read from its first bytes
// without parsing the rest: whether the origin took an upgrade (101) or a CONNECT (2xx). kStatusNeedMore until
// kStatusPrefix bytes are in; then the code of a prefix "HTTP/1.0 DDD" or "HTTP/1.1 DDD" (100 to 999), else
// kNotAStatus. A head ParseResponseHead parses always gives its own status here.
inline constexpr size_t kStatusPrefix = 12;
inline constexpr int kStatusNeedMore = 0;
inline constexpr int kNotAStatus = -1;
int PeekResponseStatus(std::string_view first_bytes);

}  // namespace isb::egress
