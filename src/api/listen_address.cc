// Listen-address parsing and the loopback/tailnet rule, over inet_pton.
#include "api/listen_address.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

namespace isb::api {
namespace {

Error Invalid(std::string msg) { return Error::Of(Code::kInvalidArgument, std::move(msg)); }

bool Ipv4Allowed(const unsigned char a[4]) {
  if (a[0] == 127) return true;               // 127.0.0.0/8
  return a[0] == 100 && (a[1] & 0xC0) == 64;  // 100.64.0.0/10 (Tailscale CGNAT range)
}

}  // namespace

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  ListenAddress out;
  std::string_view host, port;
  if (text.starts_with("[")) {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Invalid("listen address '" + std::string(text) + "': expected [IPV6]:PORT, e.g. [::1]:8092");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      return Invalid("listen address '" + std::string(text) + "': expected ADDR:PORT, e.g. 127.0.0.1:8092");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || p != port.data() + port.size() || value > 65535) {
    return Invalid("listen address '" + std::string(text) + "': port must be a number from 0 to 65535");
  }
  out.host = host == "localhost" ? "127.0.0.1" : std::string(host);
  out.port = static_cast<uint16_t>(value);
  return out;
}

Status CheckListenAddress(std::string_view host_view) {
  std::string host(host_view);
  if (host == "localhost") return {};
  unsigned char v4[4];
  unsigned char v6[16];
  bool allowed = false;
  if (inet_pton(AF_INET, host.c_str(), v4) == 1) {
    allowed = Ipv4Allowed(v4);
  } else if (inet_pton(AF_INET6, host.c_str(), v6) == 1) {
    static const unsigned char kLoopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char kTailnet[6] = {0xfd, 0x7a, 0x11, 0x5c, 0xa1, 0xe0};
    allowed = std::memcmp(v6, kLoopback, 16) == 0 || std::memcmp(v6, kTailnet, 6) == 0 ||
              (std::memcmp(v6, kMapped, 12) == 0 && Ipv4Allowed(v6 + 12));
  } else {
    return Invalid("listen address '" + host + "' is not an IP address; give a literal such as 127.0.0.1 or ::1");
  }
  if (allowed) return {};
  return Invalid("refusing to listen on " + host +
                 ": isb serves only loopback (127.0.0.0/8, ::1) and tailnet (100.64.0.0/10, fd7a:115c:a1e0::/48) "
                 "addresses. To reach it from elsewhere, put a tunnel (e.g. Tailscale, ssh -L) or a TLS reverse "
                 "proxy in front of 127.0.0.1.");
}

}  // namespace isb::api

namespace isb::api {

bool IsLoopbackHost(std::string_view host) {
  in_addr v4{};
  in6_addr v6{};
  std::string h(host);
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return ::inet_pton(AF_INET6, h.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace isb::api
