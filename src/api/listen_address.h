// Which addresses `isb serve` may listen on: loopback and tailnet only; anything wider needs a tunnel or proxy.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace isb::api {

struct ListenAddress {
  std::string host;  // a literal IPv4 or IPv6 address, without brackets
  uint16_t port = 0;
};

// "127.0.0.1:8092", "[::1]:8092", "localhost:8092" (taken as 127.0.0.1). Errors: kInvalidArgument.
Result<ListenAddress> ParseListenAddress(std::string_view text);

// OK for 127.0.0.0/8, ::1, 100.64.0.0/10 and fd7a:115c:a1e0::/48 (IPv4-mapped IPv6 counts as its IPv4 address).
// Otherwise kInvalidArgument saying to put a tunnel or a reverse proxy in front.
Status CheckListenAddress(std::string_view host);

// Whether a literal address is loopback (127.0.0.0/8 or ::1).
bool IsLoopbackHost(std::string_view host);

}  // namespace isb::api
