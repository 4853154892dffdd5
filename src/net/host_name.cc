// Host-name checks over the bytes as sent; inet_aton/inet_pton decide what the C library would take as an address.
#include "net/host_name.h"

#include <arpa/inet.h>

namespace isb::net {
namespace {

Error Invalid(const char* reason) { return Error::Of(Code::kInvalidArgument, reason); }

bool LabelByte(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'; }

}  // namespace

bool IsAddressLiteral(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.find('\0') != std::string_view::npos) return false;
  std::string text(name);
  in_addr v4;
  in6_addr v6;
  if (inet_aton(text.c_str(), &v4) != 0 || inet_pton(AF_INET6, text.c_str(), &v6) == 1) return true;
  std::string_view last = name.substr(name.rfind('.') + 1);
  if (last.empty()) return false;
  for (char c : last) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

Result<std::string> CanonicalHostName(std::string_view name) {
  if (name.empty()) return Invalid("host name is empty");
  if (name.find('\0') != std::string_view::npos) return Invalid("host name contains a NUL byte");
  if (name.size() > kMaxHostName) return Invalid("host name is longer than 253 bytes");
  std::string out(name);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (IsAddressLiteral(out)) return Invalid("host name is an IP address literal");
  size_t start = 0;
  while (true) {
    size_t dot = out.find('.', start);
    std::string_view label = std::string_view(out).substr(start, dot == std::string::npos ? dot : dot - start);
    if (label.empty()) return Invalid("host name has an empty label");
    if (label.size() > 63) return Invalid("host name has a label longer than 63 bytes");
    for (char c : label) {
      if (!LabelByte(c)) return Invalid("host name contains a byte other than a letter, digit, '-', '_' or '.'");
    }
    if (label.front() == '-' || label.back() == '-') {
      return Invalid("host name has a label starting or ending with '-'");
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return out;
}

}  // namespace isb::net
