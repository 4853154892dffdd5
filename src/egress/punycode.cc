// The Bootstring encoder of RFC 3492 with Punycode's parameters.
#include "egress/punycode.h"

#include <cstdint>
#include <vector>

namespace isb::egress {
namespace {

constexpr uint32_t kBase = 36, kTmin = 1, kTmax = 26, kSkew = 38, kDamp = 700, kInitialBias = 72, kInitialN = 128;

Error BadUtf8() { return Error::Of(Code::kInvalidArgument, "invalid UTF-8"); }

Result<std::vector<uint32_t>> DecodeUtf8(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    auto b = static_cast<unsigned char>(s[i]);
    size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > s.size()) return BadUtf8();
    uint32_t cp = len == 1 ? b : b & (0x7f >> len);
    for (size_t k = 1; k < len; ++k) {
      auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xc0) != 0x80) return BadUtf8();
      cp = cp << 6 | (c & 0x3f);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return BadUtf8();
    out.push_back(cp);
    i += len;
  }
  return out;
}

char Digit(uint32_t d) { return static_cast<char>(d < 26 ? 'a' + d : '0' + (d - 26)); }

uint32_t Adapt(uint32_t delta, uint32_t points, bool first) {
  delta = first ? delta / kDamp : delta / 2;
  delta += delta / points;
  uint32_t k = 0;
  while (delta > ((kBase - kTmin) * kTmax) / 2) {
    delta /= kBase - kTmin;
    k += kBase;
  }
  return k + (kBase - kTmin + 1) * delta / (delta + kSkew);
}

}  // namespace

Result<std::string> ToPunycodeLabel(std::string_view utf8_label) {
  ISB_ASSIGN_OR_RETURN(std::vector<uint32_t> input, DecodeUtf8(utf8_label));
  // Bounds the arithmetic below well inside 32 bits; a DNS label has at most 63 bytes anyway.
  if (input.size() > 255) return Error::Of(Code::kInvalidArgument, "label longer than 255 characters");
  std::string out;
  for (uint32_t c : input) {
    if (c < 0x80) out += static_cast<char>(c);
  }
  auto basic = static_cast<uint32_t>(out.size());
  if (basic == input.size()) return out;
  if (basic > 0) out += '-';
  uint32_t n = kInitialN, delta = 0, bias = kInitialBias, handled = basic;
  while (handled < input.size()) {
    uint32_t m = UINT32_MAX;
    for (uint32_t c : input) {
      if (c >= n && c < m) m = c;
    }
    delta += (m - n) * (handled + 1);
    n = m;
    for (uint32_t c : input) {
      if (c < n) ++delta;
      if (c != n) continue;
      uint32_t q = delta;
      for (uint32_t k = kBase;; k += kBase) {
        uint32_t t = k <= bias ? kTmin : (k >= bias + kTmax ? kTmax : k - bias);
        if (q < t) break;
        out += Digit(t + (q - t) % (kBase - t));
        q = (q - t) / (kBase - t);
      }
      out += Digit(q);
      bias = Adapt(delta, handled + 1, handled == basic);
      delta = 0;
      ++handled;
    }
    ++delta;
    ++n;
  }
  return "xn--" + out;
}

}  // namespace isb::egress
