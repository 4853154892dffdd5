// Address literals (inet_aton's spellings, inet_pton for IPv6) and the special-purpose ranges of both families.
#include "egress/address.h"

#include <arpa/inet.h>

#include <cstring>
#include <optional>
#include <vector>

namespace isb::egress {
namespace {

Error NotAnAddress(std::string_view text, std::string_view why = "") {
  std::string msg = "'" + std::string(text) + "' is not an IP address";
  if (!why.empty()) msg += ": " + std::string(why);
  return Error::Of(Code::kInvalidArgument, std::move(msg));
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// One part of an inet_aton address as strtoul(base 0) reads it: "0x1F" hex, "017" octal, "15" decimal. The whole
// part must be consumed and fit 32 bits ("0x" alone and "08" are not numbers, as in glibc).
std::optional<uint32_t> ParsePart(std::string_view s) {
  if (s.empty() || !IsDigit(s[0])) return std::nullopt;
  unsigned base = 10;
  size_t i = 0;
  if (s[0] == '0' && s.size() > 1 && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    i = 2;
    if (i == s.size()) return std::nullopt;
  } else if (s[0] == '0') {
    base = 8;
  }
  uint64_t value = 0;
  for (; i < s.size(); ++i) {
    int d = base == 16 ? HexValue(s[i]) : (IsDigit(s[i]) ? s[i] - '0' : -1);
    if (d < 0 || static_cast<unsigned>(d) >= base) return std::nullopt;
    value = value * base + static_cast<unsigned>(d);
    if (value > 0xffffffffu) return std::nullopt;
  }
  return static_cast<uint32_t>(value);
}

// a, a.b, a.b.c, a.b.c.d: the last part fills all the bytes that remain (so "127.1" is 127.0.0.1).
std::optional<uint32_t> ParseInetAton(std::string_view text) {
  std::vector<uint32_t> parts;
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    auto part = ParsePart(text.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (!part || parts.size() == 4) return std::nullopt;
    parts.push_back(*part);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  uint32_t last = parts.back();
  size_t leading = parts.size() - 1;
  if (leading > 0 && last >> (8 * (4 - leading)) != 0) return std::nullopt;
  uint32_t value = last;
  for (size_t i = 0; i < leading; ++i) {
    if (parts[i] > 0xff) return std::nullopt;
    value |= parts[i] << (24 - 8 * i);
  }
  return value;
}

Result<IpAddress> ParseV6(std::string_view text, std::string_view shown) {
  if (text.find('%') != std::string_view::npos) return NotAnAddress(shown, "IPv6 zone ids are refused");
  if (text.size() > INET6_ADDRSTRLEN) return NotAnAddress(shown);
  std::string copy(text);
  uint8_t b[16];
  if (inet_pton(AF_INET6, copy.c_str(), b) != 1) return NotAnAddress(shown);
  return IpAddress::V6(b);
}

struct Prefix {
  uint8_t bytes[16];
  int bits;
};

struct Range {
  Prefix prefix;
  AddressKind kind;
  const char* reason;
};

bool InPrefix(const IpAddress& a, const Prefix& p) {
  int full = p.bits / 8;
  if (std::memcmp(a.bytes.data(), p.bytes, static_cast<size_t>(full)) != 0) return false;
  int rest = p.bits % 8;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a.bytes[static_cast<size_t>(full)] & mask) == (p.bytes[full] & mask);
}

// IANA's IPv4 special-purpose registry, narrowest first where ranges nest.
const Range kV4Ranges[] = {
    {{{0, 0, 0, 0}, 32}, AddressKind::kUnspecified, "unspecified (0.0.0.0)"},
    {{{0}, 8}, AddressKind::kThisNetwork, "this network (0.0.0.0/8)"},
    {{{10}, 8}, AddressKind::kPrivate, "private (10.0.0.0/8)"},
    {{{100, 64}, 10}, AddressKind::kShared, "shared address space, CGNAT (100.64.0.0/10)"},
    {{{127}, 8}, AddressKind::kLoopback, "loopback (127.0.0.0/8)"},
    {{{169, 254, 169, 254}, 32}, AddressKind::kLinkLocal, "link-local (169.254.0.0/16), the cloud metadata service"},
    {{{169, 254}, 16}, AddressKind::kLinkLocal, "link-local (169.254.0.0/16)"},
    {{{172, 16}, 12}, AddressKind::kPrivate, "private (172.16.0.0/12)"},
    {{{192, 0, 0}, 24}, AddressKind::kIetfProtocol, "IETF protocol assignments (192.0.0.0/24)"},
    {{{192, 0, 2}, 24}, AddressKind::kDocumentation, "documentation (192.0.2.0/24)"},
    {{{192, 88, 99}, 24}, AddressKind::kSixToFourRelay, "6to4 relay anycast (192.88.99.0/24)"},
    {{{192, 168}, 16}, AddressKind::kPrivate, "private (192.168.0.0/16)"},
    {{{198, 18}, 15}, AddressKind::kBenchmarking, "benchmarking (198.18.0.0/15)"},
    {{{198, 51, 100}, 24}, AddressKind::kDocumentation, "documentation (198.51.100.0/24)"},
    {{{203, 0, 113}, 24}, AddressKind::kDocumentation, "documentation (203.0.113.0/24)"},
    {{{224}, 4}, AddressKind::kMulticast, "multicast (224.0.0.0/4)"},
    {{{255, 255, 255, 255}, 32}, AddressKind::kBroadcast, "broadcast (255.255.255.255)"},
    {{{240}, 4}, AddressKind::kReserved, "reserved (240.0.0.0/4)"},
};

// IANA's IPv6 special-purpose registry, without the forms that embed an IPv4 address (see kEmbeddings).
const Range kV6Ranges[] = {
    {{{0x01, 0x00}, 64}, AddressKind::kDiscard, "discard-only (100::/64)"},
    {{{0x20, 0x01, 0x00, 0x02, 0x00, 0x00}, 48}, AddressKind::kBenchmarking, "benchmarking (2001:2::/48)"},
    {{{0x20, 0x01, 0x00, 0x10}, 28}, AddressKind::kOrchid, "ORCHID (2001:10::/28)"},
    {{{0x20, 0x01, 0x00, 0x20}, 28}, AddressKind::kOrchid, "ORCHIDv2 (2001:20::/28)"},
    {{{0x20, 0x01, 0x0d, 0xb8}, 32}, AddressKind::kDocumentation, "documentation (2001:db8::/32)"},
    {{{0x20, 0x01}, 23}, AddressKind::kIetfProtocol, "IETF protocol assignments (2001::/23)"},
    {{{0x3f, 0xff}, 20}, AddressKind::kDocumentation, "documentation (3fff::/20)"},
    {{{0x5f, 0x00}, 16}, AddressKind::kSegmentRouting, "segment routing SIDs (5f00::/16)"},
    {{{0xfc}, 7}, AddressKind::kUniqueLocal, "unique-local (fc00::/7)"},
    {{{0xfe, 0x80}, 10}, AddressKind::kLinkLocal, "link-local (fe80::/10)"},
    {{{0xfe, 0xc0}, 10}, AddressKind::kSiteLocal, "site-local (fec0::/10)"},
    {{{0xff}, 8}, AddressKind::kMulticast, "multicast (ff00::/8)"},
    {{{0x20}, 3}, AddressKind::kPublic, ""},  // global unicast; everything else is reserved
};

struct EmbeddingForm {
  Prefix prefix;
  Embedding embedding;
  size_t offset;  // where the IPv4 address sits
  const char* name;
};

// Checked before kV6Ranges: ::/128 and ::1/128 come first, since ::/96 holds them.
const EmbeddingForm kEmbeddings[] = {
    {{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96},
     Embedding::kMapped,
     12,
     "an IPv4-mapped address (::ffff:0:0/96)"},
    {{{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0}, 96},
     Embedding::kTranslated,
     12,
     "an IPv4-translated address (::ffff:0:0:0/96)"},
    {{{0}, 96}, Embedding::kCompatible, 12, "an IPv4-compatible address (::/96)"},
    {{{0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0}, 96}, Embedding::kNat64, 12, "a NAT64 address (64:ff9b::/96)"},
    // Local-use NAT64 may use any prefix length from /48; only with bytes 6..11 zero is the /96 layout the one
    // reading that yields a routable address, so only then is the address judged by its last 32 bits.
    {{{0x00, 0x64, 0xff, 0x9b, 0, 1, 0, 0, 0, 0, 0, 0}, 96},
     Embedding::kLocalNat64,
     12,
     "a local-use NAT64 address (64:ff9b:1::/48)"},
    {{{0x20, 0x02}, 16}, Embedding::kSixToFour, 2, "a 6to4 address (2002::/16)"},
    {{{0x20, 0x01, 0x00, 0x00}, 32}, Embedding::kTeredo, 12, "a Teredo address (2001::/32)"},
};

const Prefix kLocalNat64 = {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48};
const uint8_t kZero16[16] = {};
const uint8_t kLoopback6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

AddressClass Of(AddressKind kind, std::string reason) {
  return AddressClass{kind, Embedding::kNone, std::move(reason)};
}

AddressClass ClassifyV4(const IpAddress& a) {
  for (const Range& r : kV4Ranges) {
    if (InPrefix(a, r.prefix)) return Of(r.kind, r.reason);
  }
  return {};
}

AddressClass ClassifyEmbedded(const IpAddress& a, const EmbeddingForm& form) {
  uint32_t v4 = 0;
  for (size_t i = 0; i < 4; ++i) v4 = v4 << 8 | a.bytes[form.offset + i];
  if (form.embedding == Embedding::kTeredo) v4 = ~v4;  // the client's address is stored inverted
  AddressClass inner = ClassifyV4(IpAddress::V4(v4));
  inner.embedding = form.embedding;
  if (!inner.is_public()) inner.reason += std::string(" inside ") + form.name;
  return inner;
}

AddressClass ClassifyV6(const IpAddress& a) {
  if (std::memcmp(a.bytes.data(), kZero16, 16) == 0) return Of(AddressKind::kUnspecified, "unspecified (::)");
  if (std::memcmp(a.bytes.data(), kLoopback6, 16) == 0) return Of(AddressKind::kLoopback, "loopback (::1)");
  for (const EmbeddingForm& form : kEmbeddings) {
    if (InPrefix(a, form.prefix)) return ClassifyEmbedded(a, form);
  }
  if (InPrefix(a, kLocalNat64)) {
    return Of(AddressKind::kLocalNat64,
              "local-use NAT64 (64:ff9b:1::/48) in a layout other than /96, which isb cannot judge");
  }
  for (const Range& r : kV6Ranges) {
    if (InPrefix(a, r.prefix)) return Of(r.kind, r.reason);
  }
  return Of(AddressKind::kReserved, "reserved (outside global unicast 2000::/3)");
}

}  // namespace

IpAddress IpAddress::V4(uint32_t host_order) {
  IpAddress a;
  for (size_t i = 0; i < 4; ++i) a.bytes[i] = static_cast<uint8_t>(host_order >> (24 - 8 * i));
  return a;
}

IpAddress IpAddress::V6(const uint8_t (&b)[16]) {
  IpAddress a;
  a.v6 = true;
  std::memcpy(a.bytes.data(), b, 16);
  return a;
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), buf, sizeof buf);
  return buf;
}

Result<IpAddress> ParseIpAddress(std::string_view text) {
  if (text.starts_with('[')) {
    if (!text.ends_with(']') || text.size() < 3) return NotAnAddress(text, "unbalanced brackets");
    std::string_view inner = text.substr(1, text.size() - 2);
    if (inner.find(':') == std::string_view::npos) return NotAnAddress(text, "brackets hold only an IPv6 address");
    return ParseV6(inner, text);
  }
  if (text.find(':') != std::string_view::npos) return ParseV6(text, text);
  auto v4 = ParseInetAton(text);
  if (!v4) return NotAnAddress(text);
  return IpAddress::V4(*v4);
}

AddressClass Classify(const IpAddress& address) { return address.v6 ? ClassifyV6(address) : ClassifyV4(address); }

}  // namespace isb::egress
