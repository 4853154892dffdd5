// Where an HTTP/1.1 message's body ends, for a proxy that forwards bodies unchanged: the framing of a request and of
// a response, a chunked body scanned (not decoded) across any split of its bytes, and whether a connection stays
// open for the next request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "egress/http_head.h"
#include "egress/http_response.h"

namespace isb::egress {

struct BodyFraming {
  enum Kind { kNone, kLength, kChunked, kUntilClose } kind = kNone;
  uint64_t length = 0;  // kLength
};

// A request's body: chunked, Content-Length, or none (RFC 9112 6.3: a request without either has no body).
BodyFraming RequestBody(const HttpHead& request);
// A response's body for a request with `method`: none after HEAD and for 1xx, 204 and 304; else chunked,
// Content-Length, or until the connection closes.
BodyFraming ResponseBody(std::string_view method, const ResponseHead& response);

// Why `request` may not go on to any origin, or empty: a GET, HEAD, DELETE or TRACE with a body (chunked, or a
// Content-Length above 0). RFC 9110 gives such a body no meaning (TRACE may not have one), and an origin that ignores
// it ("CL.0") reads it as the next request on the connection: one, for any Host, the policy never saw.
std::string BodylessMethodRefusal(const HttpHead& request);

// Whether the connection stays open after a message with these headers: HTTP/1.1 unless a Connection header lists
// "close"; HTTP/1.0 only when it lists "keep-alive".
bool Persists(int minor_version, const std::vector<HttpHeader>& headers);
// Whether any `name` header lists `token` (comma-separated, ASCII case-insensitive).
bool ListsToken(const std::vector<HttpHeader>& headers, std::string_view name, std::string_view token);

inline constexpr size_t kMaxChunkLine = 4096;  // a size line with its extensions
inline constexpr size_t kMaxChunkTrailers = 16 * 1024;

// Follows a chunked body through its chunk-size lines, data, and trailer section, byte-exact and strict (CRLF line
// ends, hexadecimal sizes of at most 15 digits, no control bytes in extensions and trailers, each trailer line a field
// name and a colon before its value).
class ChunkedScanner {
 public:
  enum class State { kMore, kDone, kMalformed };
  struct Step {
    size_t used = 0;  // bytes of `bytes` that belong to the body (all of them while kMore)
    State state = State::kMore;
    std::string reason;  // kMalformed: a fixed sentence
  };
  // Consumes the next bytes of the body. After kDone or kMalformed, every call returns the same state, using none.
  // With `data`, the chunks' data bytes (the body de-chunked) are appended to it; with `trailers`, the trailer
  // section's field lines, each with its CRLF (not the blank line that ends the body).
  Step Feed(std::string_view bytes, std::string* data = nullptr, std::string* trailers = nullptr);

 private:
  enum class Phase {
    kSize,
    kExtension,
    kSizeLf,
    kData,
    kDataCr,
    kDataLf,
    kTrailerStart,
    kTrailerName,
    kTrailer,
    kTrailerLf,
    kLastLf,
    kDone,
    kMalformed
  };
  Step Fail(size_t used, std::string reason);

  Phase phase_ = Phase::kSize;
  uint64_t remaining_ = 0;  // kData: bytes of the chunk still to come; kSize: the size so far
  size_t digits_ = 0;
  size_t line_ = 0;      // bytes of the current size line
  size_t trailers_ = 0;  // bytes of the trailer section
  std::string reason_;
};

}  // namespace isb::egress
