// IP address literals in every spelling the C library accepts, and whether an address is public or why not.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace isb::egress {

// An IPv4 or IPv6 address, bytes in network order (an IPv4 address uses the first 4).
struct IpAddress {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};

  static IpAddress V4(uint32_t host_order);
  static IpAddress V6(const uint8_t (&b)[16]);
  // The canonical text (inet_ntop), without brackets.
  std::string ToString() const;
  bool operator==(const IpAddress&) const = default;
};

// Parses an address literal as getaddrinfo(3) would take it, so that no spelling slips past a check:
//   IPv4 in every inet_aton form: "127.0.0.1", "2130706433", "0177.0.0.1", "0x7f.1", "127.1", "0x7F000001";
//   IPv6 as inet_pton reads it ("::1", "::ffff:127.0.0.1"), bare or in brackets ("[::1]").
// Zone ids ("fe80::1%eth0") are refused. Errors (kInvalidArgument) quote the text; a name is not an address.
Result<IpAddress> ParseIpAddress(std::string_view text);

// Why an address is not public. An IPv6 form that embeds an IPv4 address takes the kind of that address.
enum class AddressKind {
  kPublic,
  kUnspecified,     // 0.0.0.0, ::
  kThisNetwork,     // 0.0.0.0/8
  kLoopback,        // 127.0.0.0/8, ::1
  kPrivate,         // 10/8, 172.16/12, 192.168/16
  kLinkLocal,       // 169.254/16 (cloud metadata), fe80::/10
  kShared,          // 100.64/10 (CGNAT, tailnets)
  kIetfProtocol,    // 192.0.0.0/24, 2001::/23
  kSixToFourRelay,  // 192.88.99.0/24
  kDocumentation,   // 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20
  kBenchmarking,    // 198.18/15, 2001:2::/48
  kMulticast,       // 224/4, ff00::/8
  kReserved,        // 240/4, IPv6 outside 2000::/3
  kBroadcast,       // 255.255.255.255
  kUniqueLocal,     // fc00::/7
  kSiteLocal,       // fec0::/10
  kDiscard,         // 100::/64
  kOrchid,          // 2001:10::/28, 2001:20::/28
  kSegmentRouting,  // 5f00::/16
  kLocalNat64,      // 64:ff9b:1::/48 whose embedded address isb cannot read
};

// How an IPv6 address carries the IPv4 address it was judged by.
enum class Embedding { kNone, kMapped, kCompatible, kTranslated, kNat64, kLocalNat64, kSixToFour, kTeredo };

struct AddressClass {
  AddressKind kind = AddressKind::kPublic;
  Embedding embedding = Embedding::kNone;
  // Empty when public. Otherwise the range, e.g. "loopback (127.0.0.0/8)" or "private (10.0.0.0/8) inside an
  // IPv4-mapped address (::ffff:0:0/96)". It never contains the address itself, so it may be shown to anyone.
  std::string reason;

  bool is_public() const { return kind == AddressKind::kPublic; }
};

AddressClass Classify(const IpAddress& address);

}  // namespace isb::egress
