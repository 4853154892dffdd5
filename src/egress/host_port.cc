// Host name normalization and host[:port] splitting, strict: what is not understood is refused.
#include "egress/host_port.h"

#include <cstdio>

#include "egress/address.h"

namespace isb::egress {
namespace {

Error Invalid(std::string reason) { return Error::Of(Code::kInvalidArgument, std::move(reason)); }

bool IsLdh(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'; }

bool AllDigits(std::string_view s) {
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

Status CheckLabel(std::string_view label) {
  if (label.empty()) return Invalid("has an empty label");
  if (label.size() > 63) return Invalid("has a label longer than 63 characters");
  if (label.front() == '-' || label.back() == '-') {
    return Invalid("has a label that starts or ends with '-' ('" + std::string(label) + "')");
  }
  return {};
}

}  // namespace

Result<std::string> NormalizeHostName(std::string_view name) {
  if (name.ends_with('.')) name.remove_suffix(1);
  if (name.empty()) return Invalid("is empty");
  if (name.size() > 253) return Invalid("is longer than 253 characters");
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) return Invalid("is not ASCII; write an international name in its punycode (xn--) form");
    char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (!IsLdh(lower) && lower != '.') return Invalid("contains '" + Printable(std::string_view(&c, 1)) + "'");
    out += lower;
  }
  if (ParseIpAddress(out).ok()) return Invalid("is an IP address, not a name");
  size_t start = 0;
  while (true) {
    size_t dot = out.find('.', start);
    std::string_view label = std::string_view(out).substr(start, dot == std::string::npos ? dot : dot - start);
    ISB_TRY(CheckLabel(label));
    if (dot == std::string::npos) {
      if (AllDigits(label)) return Invalid("ends in an all-numeric label, which resolvers may read as an address");
      break;
    }
    start = dot + 1;
  }
  return out;
}

std::optional<uint16_t> ParsePort(std::string_view text) {
  if (text.empty() || text.size() > 5 || !AllDigits(text)) return std::nullopt;
  unsigned value = 0;
  for (char c : text) value = value * 10 + static_cast<unsigned>(c - '0');
  if (value == 0 || value > 65535) return std::nullopt;
  return static_cast<uint16_t>(value);
}

std::optional<HostPort> SplitHostPort(std::string_view text) {
  if (text.starts_with('[')) {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    HostPort hp{text.substr(1, close - 1), std::nullopt, true};
    std::string_view rest = text.substr(close + 1);
    if (rest.empty()) return hp;
    if (rest[0] != ':') return std::nullopt;
    hp.port = rest.substr(1);
    return hp;
  }
  size_t colon = text.find(':');
  if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos) {
    return HostPort{text, std::nullopt};
  }
  return HostPort{text.substr(0, colon), text.substr(colon + 1)};
}

std::string Printable(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < 200; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (text.size() > 200) out += "...";
  return out;
}

}  // namespace isb::egress
