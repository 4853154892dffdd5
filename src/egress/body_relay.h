// One HTTP/1.1 body on its way through the proxy, as bytes in and bytes out: followed by its framing and passed on
// byte for byte, or, when a BodyFilter changes it, decoded, filtered and framed again (its length may change), in
// memory bounded by a read and what the filter keeps back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "egress/http_body.h"
#include "egress/message_filter.h"

namespace isb::egress {

// How a body goes out.
enum class Reframe {
  kAsSent,      // the body's own framing and bytes
  kChunked,     // Transfer-Encoding: chunked, a chunk for each piece the filter gives; trailers as they came
  kBuffered,    // held whole (at most kMaxBufferedBody), then sent with its new Content-Length
  kUntilClose,  // no framing: the body ends with the connection
};

// A filtered body of an HTTP/1.0 request is held whole up to this, as HTTP/1.0 has no chunked framing and its
// length is known only at its end; past it the request is refused (413).
inline constexpr size_t kMaxBufferedBody = 1 << 20;

// How a body arriving as `in` goes out. Unfiltered (or no body): as sent. Filtered: its length may change, so a
// Content-Length can no longer be sent ahead of it. A chunked body stays chunked. A Content-Length body becomes
// chunked for a receiver of HTTP/1.1 (`receiver_minor`: a request's own version; for a response, its request's);
// for HTTP/1.0 a request is held whole (kBuffered) and a response ends with the connection (kUntilClose), as one
// framed by the connection's end already does.
Reframe ChooseReframe(BodyFraming in, bool filtered, bool request, int receiver_minor);

class BodyRelay {
 public:
  // `filter` null: the body passes unchanged (then `out` must be kAsSent). A filtered chunked body's trailer
  // fields go on unless `keep_trailers` is false.
  BodyRelay(BodyFraming in, Reframe out, std::unique_ptr<BodyFilter> filter, bool keep_trailers = true);

  enum class State { kMore, kDone, kMalformed, kTooLarge, kRefused };
  struct Step {
    size_t used = 0;  // bytes of the input that belong to the body (all of them while kMore)
    State state = State::kMore;
    std::string reason;  // kMalformed, kTooLarge, kRefused (the filter's BodyFilter::Refusal): one line
  };
  // Takes the body's next bytes from the start of `bytes`, none past its end, and appends what goes on to `out`
  // (nothing of a piece found malformed, or that the filter refused). After kDone, kMalformed, kTooLarge or kRefused
  // every call returns the same, using nothing.
  Step Feed(std::string_view bytes, std::string& out);
  // The input ended (the connection): the end of a body framed by it (kDone, the rest appended to `out`); for any
  // other, kMalformed: it ended early.
  Step End(std::string& out);

  // Bytes of an unfiltered Content-Length body still to come: they may go on without passing through Feed (a
  // splice), and Skipped says how many did.
  uint64_t opaque_remaining() const;
  void Skipped(uint64_t n);
  // The content's length as it went out (kBuffered: its Content-Length, once kDone).
  uint64_t length_out() const { return length_out_; }

 private:
  bool Pass(std::string_view content, std::string& out);  // through the filter, then framed; false: refused
  void Frame(std::string_view content, std::string& out);
  Step Finish(size_t used, std::string& out);
  Step Stop(Step step);
  Step Refused(size_t used);

  BodyFraming in_;
  Reframe out_;
  std::unique_ptr<BodyFilter> filter_;
  uint64_t remaining_ = 0;  // a Content-Length body's bytes still to come
  ChunkedScanner scanner_;
  std::string data_;      // a chunked piece's content, decoded
  std::string filtered_;  // what the filter gave, to be framed
  std::string trailers_;  // a filtered chunked body's trailer lines, sent after its last chunk
  bool keep_trailers_ = true;
  uint64_t length_out_ = 0;
  bool stopped_ = false;
  Step last_;
};

}  // namespace isb::egress
