// Base64 (RFC 4648, the standard alphabet).
#include "base/base64.h"

#include <array>
#include <cstdint>

namespace isb {

std::string Base64Encode(std::string_view data) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  auto at = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(data[k])); };
  for (; i + 3 <= data.size(); i += 3) {
    uint32_t v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(v >> shift) & 63];
  }
  size_t rest = data.size() - i;
  if (rest > 0) {
    uint32_t v = at(i) << 16 | (rest == 2 ? at(i + 1) << 8 : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text, Base64Padding padding) {
  static const std::array<int8_t, 256> kValue = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int k = 0; k < 64; ++k) t[static_cast<unsigned char>(alphabet[k])] = static_cast<int8_t>(k);
    return t;
  }();
  if (padding == Base64Padding::kRequired) {
    if (text.size() % 4 != 0)
      return Error::Of(Code::kInvalidArgument, "invalid base64: the length is not a multiple of 4");
    // At most two '=', at the end of the last group of four.
    for (int pad = 0; pad < 2 && !text.empty() && text.back() == '='; ++pad) text.remove_suffix(1);
  } else {
    while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  }
  if (text.size() % 4 == 1) return Error::Of(Code::kInvalidArgument, "invalid base64: bad length");
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    int8_t v = kValue[static_cast<unsigned char>(text[i])];
    if (v < 0)
      return Error::Of(Code::kInvalidArgument, "invalid base64: unexpected character at offset " + std::to_string(i));
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

}  // namespace isb
