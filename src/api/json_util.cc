// JSON parsing with depth and size limits, UTF-8 validation and base64, all total functions over untrusted bytes.
#include "api/json_util.h"

#include <array>

namespace isb::api {
namespace {

// Length of the UTF-8 sequence starting at s[i], or 0 when it is invalid (overlong, surrogate, > U+10FFFF).
size_t SeqLen(std::string_view s, size_t i) {
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

// Rejects nesting deeper than max_depth, and more than kMaxJsonValues values, with a scan that tracks strings: the
// parser never recurses too far, and a body of 8 MiB cannot become millions of values (an empty array costs the
// parser tens of bytes for every two bytes of input).
Status CheckDepth(std::string_view text, int max_depth) {
  int depth = 0;
  size_t values = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if ((c == '[' || c == '{' || c == ',') && ++values > kMaxJsonValues) {
      return Error::Of(Code::kInvalidArgument,
                       "JSON has more than " + std::to_string(kMaxJsonValues) + " values (at byte " + std::to_string(i) + ")");
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return Error::Of(Code::kInvalidArgument,
                         "JSON nested deeper than " + std::to_string(max_depth) + " levels at byte " + std::to_string(i));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return {};
}

}  // namespace

Result<json> ParseJson(std::string_view text, int max_depth) {
  ISB_TRY(CheckDepth(text, max_depth));
  // nlohmann reports the position only through its exception; it is caught here and goes no further.
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return Error::Of(Code::kInvalidArgument, "body is not valid JSON (byte " + std::to_string(e.byte) + ")");
  } catch (const std::exception& e) {
    return Error::Of(Code::kInvalidArgument, std::string("body is not valid JSON: ") + e.what());
  }
}

std::string Dump(const json& value, int indent) {
  return value.dump(indent, ' ', false, json::error_handler_t::replace);
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = SeqLen(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string SanitizeUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = SeqLen(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

size_t Utf8Length(std::string_view s) {
  size_t count = 0;
  for (size_t i = 0; i < s.size(); ++count) {
    size_t n = SeqLen(s, i);
    i += n == 0 ? 1 : n;
  }
  return count;
}

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

Result<std::string> Base64Decode(std::string_view text) {
  static const std::array<int8_t, 256> kValue = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int k = 0; k < 64; ++k) t[static_cast<unsigned char>(alphabet[k])] = static_cast<int8_t>(k);
    return t;
  }();
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return Error::Of(Code::kInvalidArgument, "invalid base64: bad length");
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    int8_t v = kValue[static_cast<unsigned char>(text[i])];
    if (v < 0) return Error::Of(Code::kInvalidArgument, "invalid base64: unexpected character at offset " + std::to_string(i));
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

}  // namespace isb::api
