// A UTF-8 check over a text that arrives in pieces (a WebSocket text message, fragmented or decompressed): a
// sequence may straddle two pieces, and a bad byte is found as soon as it arrives, as RFC 6455 asks of endpoints.
#pragma once

#include <cstdint>
#include <string_view>

namespace isb::net {

class Utf8Stream {
 public:
  // The next bytes; false once the text so far cannot begin valid UTF-8 (overlong forms, surrogates, code points
  // past U+10FFFF included), and from then on.
  bool Take(std::string_view bytes);
  // The text has ended: true if it is valid UTF-8 as a whole (no sequence left cut short).
  bool Finish() const { return !bad_ && need_ == 0; }

 private:
  bool bad_ = false;
  int need_ = 0;        // continuation bytes still to come in the current sequence
  uint8_t low_ = 0x80;  // the range the next continuation byte must be in (narrowed after some lead bytes)
  uint8_t high_ = 0xBF;
};

// Whether `text` is valid UTF-8 as a whole.
bool IsUtf8(std::string_view text);

}  // namespace isb::net
