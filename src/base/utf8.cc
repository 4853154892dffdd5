// UTF-8 sequence lengths, as RFC 3629 bounds them.
#include "base/utf8.h"

namespace isb {

size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  }
  unsigned char c1 = b(i + 1);
  if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
  if (c == 0xED && c1 > 0x9F) return 0;  // surrogates
  if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
  if (c == 0xF4 && c1 > 0x8F) return 0;  // above U+10FFFF
  return n;
}

size_t Utf8IncompleteTail(std::string_view s) {
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    auto c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: its lead is further back
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (need <= back) return 0;
    // Only a start that can still become a character waits: not a byte no character begins with, nor a second
    // byte Utf8SequenceLength would refuse (overlong, surrogate, above U+10FFFF).
    if (c < 0xC2 || c > 0xF4) return 0;
    if (back >= 2) {
      auto c1 = static_cast<unsigned char>(s[s.size() - back + 1]);
      if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F))
        return 0;
    }
    return back;
  }
  return 0;
}

}  // namespace isb
