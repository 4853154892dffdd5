// Host names as the proxy compares them (TLS server_name, HTTP Host): lowercased, checked, never an address literal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.h"

namespace isb::net {

inline constexpr size_t kMaxHostName = 253;

// Lowercases `name` and checks it is a DNS host name: 1 to 253 bytes, dot-separated labels of 1 to 63 letters,
// digits, '-' or '_', no label starting or ending with '-', no trailing dot, and not an address literal
// (IsAddressLiteral). Errors: kInvalidArgument with one of the fixed reasons "host name is empty", "host name
// contains a NUL byte", "host name is longer than 253 bytes", "host name has an empty label", "host name has a
// label longer than 63 bytes", "host name has a label starting or ending with '-'", "host name contains a byte
// other than a letter, digit, '-', '_' or '.'", "host name is an IP address literal".
Result<std::string> CanonicalHostName(std::string_view name);

// True when the C library would read `name` as an IPv4 address in any spelling (decimal, octal, hex, short forms
// such as 127.1 or 2130706433), when its last label is all digits (a name no DNS host can have), or when it is an
// IPv6 literal.
bool IsAddressLiteral(std::string_view name);

}  // namespace isb::net
