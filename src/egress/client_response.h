// The HTTP/1.1 response the daemon's own clients (the judge) read from a server: status, framing and body, parsed
// from the bytes received so far. A pure function over bytes, so the fuzzer reaches all of it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace isb::egress {

inline constexpr size_t kMaxClientResponseHead = 16 * 1024;

struct ResponseResult {
  enum Kind { kNeedMore, kDone, kMalformed };
  Kind kind = kNeedMore;
  int status = 0;      // kDone: the final status (interim 1xx answers are skipped)
  std::string body;    // kDone: the body, de-chunked
  std::string reason;  // kMalformed: a fixed sentence (it never quotes the server's bytes)
};

// `bytes` is everything the server sent so far on a connection that carried one request; `eof` whether it closed.
// The body is framed by Transfer-Encoding: chunked, else Content-Length, else the end of the connection; one
// larger than `max_body` is malformed, and so is anything two parsers could frame differently (both framings,
// differing lengths, a transfer coding other than chunked).
ResponseResult ParseHttpResponse(std::string_view bytes, bool eof, size_t max_body);

}  // namespace isb::egress
