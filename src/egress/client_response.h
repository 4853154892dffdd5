// The HTTP/1.1 response the daemon's own clients (the judge) read from a server: status, framing and body, parsed
// from the bytes received so far with the parsers interception uses (http_response.h for the head, http_body.h for
// the framing and chunks). A pure function over bytes, so the fuzzer reaches all of it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace isb::egress {

struct ResponseResult {
  enum Kind { kNeedMore, kDone, kMalformed };
  Kind kind = kNeedMore;
  int status = 0;      // kDone: the final status (interim 1xx answers are skipped)
  std::string body;    // kDone: the body, de-chunked
  std::string reason;  // kMalformed: a fixed sentence (it never quotes the server's bytes)
};

// `bytes` is everything the server sent so far on a connection that carried one request (a POST); `eof` whether it
// closed. The head is held to ParseResponseHead's rules (one framing, strict lines, at most kMaxResponseHead bytes);
// the body is framed by ResponseBody and de-chunked by ChunkedScanner. A body larger than `max_body` is malformed,
// and so is a transfer coding other than chunked alone (its body would arrive coded).
ResponseResult ParseHttpResponse(std::string_view bytes, bool eof, size_t max_body);

}  // namespace isb::egress
