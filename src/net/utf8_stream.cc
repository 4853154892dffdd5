// The check follows the table of well-formed byte sequences in Unicode's chapter 3 (Table 3-7): the second byte's
// range depends on the lead byte, which is what rules out overlong forms, surrogates and code points past U+10FFFF.
#include "net/utf8_stream.h"

namespace isb::net {

bool Utf8Stream::Take(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size() && !bad_; ++i) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    if (need_ > 0) {
      if (b < low_ || b > high_) {
        bad_ = true;
        break;
      }
      low_ = 0x80;
      high_ = 0xBF;
      --need_;
      continue;
    }
    if (b < 0x80) continue;
    if (b >= 0xC2 && b <= 0xDF) {
      need_ = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need_ = 2;
      if (b == 0xE0) low_ = 0xA0;   // overlong below U+0800
      if (b == 0xED) high_ = 0x9F;  // UTF-16 surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      need_ = 3;
      if (b == 0xF0) low_ = 0x90;   // overlong below U+10000
      if (b == 0xF4) high_ = 0x8F;  // past U+10FFFF
    } else {
      bad_ = true;
    }
  }
  return !bad_;
}

bool IsUtf8(std::string_view text) {
  Utf8Stream check;
  return check.Take(text) && check.Finish();
}

}  // namespace isb::net
