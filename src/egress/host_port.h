// Host names and ports as egress rules, pins and the dialer spell them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace isb::egress {

// The form isb compares names in: lower case, without the trailing dot. Labels are letters, digits, '-' and '_'
// (1 to 63 of them, no '-' at either end), at most 253 characters in all; international names are accepted in
// their punycode form ("xn--...") as they are, other non-ASCII is refused. An IP address, or a name whose last
// label is all digits (which resolvers may read as one), is not a host name.
// Errors (kInvalidArgument): the message is the reason alone ("contains ' '"), for the caller to name the input.
Result<std::string> NormalizeHostName(std::string_view name);

// "443" → 443. Ports 1 to 65535, decimal digits only.
std::optional<uint16_t> ParsePort(std::string_view text);

struct HostPort {
  std::string_view host;                 // without brackets when bracketed
  std::optional<std::string_view> port;  // the text after the colon, if any
  bool bracketed = false;
};

// "name", "name:port", "[v6]", "[v6]:port"; a bare IPv6 address ("fd00::1", two colons or more) has no port.
// nullopt for unbalanced brackets or text after "]" that is not ":port".
std::optional<HostPort> SplitHostPort(std::string_view text);

// `text` for an error message: at most 200 bytes, each byte outside printable ASCII written as \xNN, so that input
// from a client can neither forge log lines nor hide in them.
std::string Printable(std::string_view text);

}  // namespace isb::egress
