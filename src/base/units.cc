// Unit parsing, strict: anything not fully consumed is an error that quotes the input.
#include "base/units.h"

#include <charconv>
#include <string>

namespace isb {
namespace {

Error Bad(std::string_view what, std::string_view text, std::string_view example) {
  return Error::Msg("invalid " + std::string(what) + " '" + std::string(text) + "' (expected e.g. " +
                    std::string(example) + ")");
}

// Parses a non-negative decimal with at most 3 fractional digits into thousandths.
bool ParseMilli(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
  if (whole.empty() || (dot != std::string_view::npos && (frac.empty() || frac.size() > 3))) return false;
  uint64_t w = 0;
  auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), w);
  if (ec != std::errc() || p != whole.data() + whole.size()) return false;
  uint64_t f = 0;
  for (size_t i = 0; i < 3; ++i) {
    char c = i < frac.size() ? frac[i] : '0';
    if (c < '0' || c > '9') return false;
    f = f * 10 + static_cast<uint64_t>(c - '0');
  }
  if (w > (UINT64_MAX / 1000) - 1) return false;
  *out = w * 1000 + f;
  return true;
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  std::string_view s = text;
  if (s.ends_with("iB"))
    s.remove_suffix(2);
  else if (s.ends_with("B") && s.size() > 1 && !(s[s.size() - 2] >= '0' && s[s.size() - 2] <= '9'))
    s.remove_suffix(1);
  uint64_t mult = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'k':
      case 'K':
        mult = 1ull << 10;
        break;
      case 'm':
      case 'M':
        mult = 1ull << 20;
        break;
      case 'g':
      case 'G':
        mult = 1ull << 30;
        break;
      case 't':
      case 'T':
        mult = 1ull << 40;
        break;
      default:
        break;
    }
    if (mult != 1) s.remove_suffix(1);
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return Bad("size", text, "512M, 2G, 65536");
  if (v > UINT64_MAX / mult) return Bad("size", text, "a value below 16E");
  return v * mult;
}

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  std::string_view s = text;
  uint64_t unit_ms = 1000;
  if (s.ends_with("ms")) {
    unit_ms = 1;
    s.remove_suffix(2);
  } else if (s.ends_with("s")) {
    s.remove_suffix(1);
  } else if (s.ends_with("m")) {
    unit_ms = 60'000;
    s.remove_suffix(1);
  } else if (s.ends_with("h")) {
    unit_ms = 3'600'000;
    s.remove_suffix(1);
  } else if (s.ends_with("d")) {
    unit_ms = 86'400'000;
    s.remove_suffix(1);
  }
  uint64_t milli = 0;
  if (!ParseMilli(s, &milli)) return Bad("duration", text, "30s, 500ms, 5m, 2h");
  if (milli > UINT64_MAX / unit_ms) return Bad("duration", text, "less than a century");
  return std::chrono::milliseconds(milli * unit_ms / 1000);
}

Result<std::pair<uint32_t, uint32_t>> ParseIds(std::string_view text) {
  auto id = [](std::string_view s, uint32_t* out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return !s.empty() && ec == std::errc() && p == s.data() + s.size() && *out < 65536;
  };
  size_t colon = text.find(':');
  uint32_t uid = 0, gid = 0;
  bool ok = id(text.substr(0, colon), &uid);
  gid = uid;
  if (ok && colon != std::string_view::npos) ok = id(text.substr(colon + 1), &gid);
  if (!ok) return Bad("user", text, "1000 or 1000:1000, each below 65536");
  return std::pair{uid, gid};
}

Result<uint32_t> ParseCpus(std::string_view text) {
  uint64_t milli = 0;
  if (!ParseMilli(text, &milli) || milli == 0 || milli > 1'000'000) return Bad("CPU amount", text, "2 or 0.5");
  return static_cast<uint32_t>(milli);
}

}  // namespace isb
