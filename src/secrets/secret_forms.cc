// Forms of placeholders and values: encoders written out here (each byte's spelling decided by one small function),
// the flexible percent-encoded search, and Basic credentials decoded with base/base64.h.
#include "secrets/secret_forms.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <set>

#include "base/base64.h"

namespace isb::secrets {

namespace {

constexpr char kUpperHex[] = "0123456789ABCDEF";
constexpr char kLowerHex[] = "0123456789abcdef";

bool Unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

void AppendPercent(std::string& out, unsigned char c, HexCase hex) {
  const char* digits = hex == HexCase::kUpper ? kUpperHex : kLowerHex;
  out += '%';
  out += digits[c >> 4];
  out += digits[c & 15];
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct JsonStyle {
  bool slash = false;  // "/" as "\/"
  bool upper = false;  // \u00XX with upper-case hex
  bool ascii = false;  // non-ASCII as \uXXXX
  bool html = false;   // < > & as \u003c \u003e \u0026
};

void AppendU(std::string& out, uint32_t unit, bool upper) {
  const char* digits = upper ? kUpperHex : kLowerHex;
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += digits[(unit >> shift) & 15];
}

// The code point of the UTF-8 sequence at `text[at]` and its length, or length 0 when it is not valid UTF-8.
std::pair<uint32_t, size_t> DecodeUtf8(std::string_view text, size_t at) {
  const unsigned char lead = static_cast<unsigned char>(text[at]);
  size_t length = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 && lead < 0xE0 ? 2 : 0;
  if (length == 0 || at + length > text.size()) return {0, 0};
  uint32_t cp = lead & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[at + i]);
    if ((c & 0xC0) != 0x80) return {0, 0};
    cp = (cp << 6) | (c & 0x3F);
  }
  const bool overlong = (length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
  return {cp, length};
}

std::string JsonEscapeStyled(std::string_view text, JsonStyle style) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '/':
        out += style.slash ? "\\/" : "/";
        continue;
      default:
        break;
    }
    if (c < 0x20 || (style.html && (c == '<' || c == '>' || c == '&'))) {
      AppendU(out, c, style.upper);
      continue;
    }
    if (c >= 0x80 && style.ascii) {
      auto [cp, length] = DecodeUtf8(text, i);
      if (length > 0) {
        if (cp >= 0x10000) {
          AppendU(out, 0xD800 + ((cp - 0x10000) >> 10), style.upper);
          AppendU(out, 0xDC00 + ((cp - 0x10000) & 0x3FF), style.upper);
        } else {
          AppendU(out, cp, style.upper);
        }
        i += length - 1;
        continue;
      }
    }
    out += static_cast<char>(c);
  }
  return out;
}

void AddOnce(std::vector<std::string>& forms, std::string form) {
  if (std::find(forms.begin(), forms.end(), form) == forms.end()) forms.push_back(std::move(form));
}

bool ValidFieldValue(std::string_view value) {
  return std::none_of(value.begin(), value.end(), [](char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    return (u < 0x20 && u != '\t') || u == 0x7F;
  });
}

// The Basic credentials of an Authorization value (the scheme's case aside), decoded; false when it is not one.
bool BasicCredentials(std::string_view name, std::string_view value, size_t& token_at, std::string& credentials) {
  auto iequals = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  };
  if (!iequals(name, "Authorization") && !iequals(name, "Proxy-Authorization")) return false;
  if (value.size() < 6 || !iequals(value.substr(0, 5), "Basic") || (value[5] != ' ' && value[5] != '\t')) return false;
  token_at = value.find_first_not_of(" \t", 5);
  if (token_at == std::string_view::npos) return false;
  Result<std::string> decoded = Base64Decode(value.substr(token_at));
  if (!decoded.ok()) return false;
  credentials = std::move(*decoded);
  return true;
}

}  // namespace

std::string PercentEncode(std::string_view text, HexCase hex) {
  std::string out;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (Unreserved(u)) {
      out += c;
    } else {
      AppendPercent(out, u, hex);
    }
  }
  return out;
}

std::string PercentEncodeAll(std::string_view text, HexCase hex) {
  std::string out;
  for (char c : text) AppendPercent(out, static_cast<unsigned char>(c), hex);
  return out;
}

std::string JsonEscape(std::string_view text) { return JsonEscapeStyled(text, {}); }

std::vector<std::string> JsonForms(std::string_view text) {
  std::vector<std::string> forms;
  for (int bits = 0; bits < 16; ++bits)
    AddOnce(forms, JsonEscapeStyled(text, {(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0, (bits & 8) != 0}));
  return forms;
}

namespace {

// The base64 characters of `text` at `offset` (0 to 2) bytes into a longer text that depend on nothing else:
// character c holds bits [6c, 6c + 6) of the bytes, so only those wholly inside `text`.
std::string Base64Run(std::string_view text, size_t offset, bool url) {
  const std::string encoded = Base64Encode(std::string(offset, '\0') + std::string(text));
  const size_t first = (8 * offset + 5) / 6;
  const size_t end = 8 * (offset + text.size()) / 6;
  if (end < first + 8) return {};
  std::string run = encoded.substr(first, end - first);
  if (url) {
    std::replace(run.begin(), run.end(), '+', '-');
    std::replace(run.begin(), run.end(), '/', '_');
  }
  return run;
}

}  // namespace

std::vector<std::string> Base64Runs(std::string_view text) {
  std::vector<std::string> runs;
  for (size_t offset = 0; offset < 3; ++offset)
    for (bool url : {false, true})
      if (std::string run = Base64Run(text, offset, url); !run.empty()) AddOnce(runs, std::move(run));
  return runs;
}

BodyKind BodyKindOf(const std::string* content_type) {
  if (content_type == nullptr) return BodyKind::kRaw;
  std::string type = content_type->substr(0, content_type->find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  if (type == "application/json" || type.ends_with("+json")) return BodyKind::kJson;
  if (type == "application/x-www-form-urlencoded") return BodyKind::kForm;
  return BodyKind::kRaw;
}

std::vector<Replacement> SwapPairs(std::string_view placeholder, std::string_view value, BodyKind kind) {
  const std::string in_body = kind == BodyKind::kJson   ? JsonEscape(value)
                              : kind == BodyKind::kForm ? PercentEncode(value)
                                                        : std::string(value);
  const std::string encoded = PercentEncode(value);
  return {{std::string(placeholder), in_body},
          {PercentEncodeAll(placeholder, HexCase::kUpper), encoded},
          {PercentEncodeAll(placeholder, HexCase::kLower), encoded}};
}

std::vector<Replacement> ScrubPairs(std::string_view placeholder, std::string_view value) {
  std::vector<std::string> forms{std::string(value)};
  for (HexCase hex : {HexCase::kUpper, HexCase::kLower}) {
    std::string encoded = PercentEncode(value, hex);
    AddOnce(forms, encoded);
    // Form encoding writes a space as '+'.
    std::string spaced;
    for (size_t i = 0; i < encoded.size(); ++i) {
      if (encoded.compare(i, 3, "%20") == 0) {
        spaced += '+';
        i += 2;
      } else {
        spaced += encoded[i];
      }
    }
    AddOnce(forms, spaced);
  }
  for (std::string& form : JsonForms(value)) AddOnce(forms, std::move(form));
  std::vector<Replacement> pairs;
  for (std::string& form : forms) pairs.push_back({std::move(form), std::string(placeholder)});
  // Inside base64 (an echoed Basic header, a token): the value's run becomes the placeholder's at the same offset.
  for (size_t offset = 0; offset < 3; ++offset) {
    for (bool url : {false, true}) {
      std::string run = Base64Run(value, offset, url);
      if (!run.empty()) pairs.push_back({std::move(run), Base64Run(placeholder, offset, url)});
    }
  }
  return pairs;
}

std::vector<std::string> PlaceholderForms(std::string_view placeholder) {
  std::vector<std::string> forms{std::string(placeholder)};
  AddOnce(forms, PercentEncodeAll(placeholder, HexCase::kUpper));
  AddOnce(forms, PercentEncodeAll(placeholder, HexCase::kLower));
  for (std::string& run : Base64Runs(placeholder)) AddOnce(forms, std::move(run));
  return forms;
}

FlexibleHit FindFlexible(std::string_view text, std::string_view placeholder, size_t from) {
  if (placeholder.empty()) return {};
  for (size_t start = from; start < text.size(); ++start) {
    size_t at = start;
    bool encoded = false;
    size_t i = 0;
    for (; i < placeholder.size() && at < text.size(); ++i) {
      if (text[at] == placeholder[i]) {
        ++at;
        continue;
      }
      if (text[at] != '%' || at + 2 >= text.size()) break;
      const int high = HexValue(text[at + 1]), low = HexValue(text[at + 2]);
      if (high < 0 || low < 0 || static_cast<char>(high * 16 + low) != placeholder[i]) break;
      at += 3;
      encoded = true;
    }
    if (i == placeholder.size()) return {start, at - start, encoded};
  }
  return {};
}

size_t SwapInTarget(std::string& target, std::string_view placeholder, std::string_view value) {
  const std::string encoded = PercentEncode(value);
  size_t swaps = 0;
  for (FlexibleHit hit = FindFlexible(target, placeholder); hit.start != std::string_view::npos;
       hit = FindFlexible(target, placeholder, hit.start + encoded.size())) {
    target.replace(hit.start, hit.length, encoded);
    ++swaps;
  }
  return swaps;
}

size_t SwapInHeader(std::string_view name, std::string& header_value, std::string_view placeholder,
                    std::string_view value) {
  size_t token_at = 0;
  std::string credentials;
  if (BasicCredentials(name, header_value, token_at, credentials)) {
    size_t swaps = 0;
    for (size_t at = credentials.find(placeholder); at != std::string::npos;
         at = credentials.find(placeholder, at + value.size())) {
      credentials.replace(at, placeholder.size(), value);
      ++swaps;
    }
    if (swaps > 0) header_value.replace(token_at, std::string::npos, Base64Encode(credentials));
    return swaps;
  }
  const bool raw_fits = ValidFieldValue(value);
  const std::string encoded = PercentEncode(value);
  size_t swaps = 0;
  for (FlexibleHit hit = FindFlexible(header_value, placeholder); hit.start != std::string_view::npos;) {
    const std::string_view with = hit.encoded || !raw_fits ? std::string_view(encoded) : value;
    header_value.replace(hit.start, hit.length, with);
    ++swaps;
    hit = FindFlexible(header_value, placeholder, hit.start + with.size());
  }
  return swaps;
}

bool HeaderCarries(std::string_view name, std::string_view header_value, std::string_view placeholder) {
  size_t token_at = 0;
  std::string credentials;
  if (BasicCredentials(name, header_value, token_at, credentials) && credentials.find(placeholder) != std::string::npos)
    return true;
  if (FindFlexible(header_value, placeholder).start != std::string_view::npos) return true;
  for (const std::string& run : Base64Runs(placeholder))
    if (header_value.find(run) != std::string_view::npos) return true;
  return false;
}

}  // namespace isb::secrets
