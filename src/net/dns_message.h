// DNS messages for the daemon's responder: a query parsed from untrusted bytes, and the few responses it gives (an A
// record with the proxy's address, no data, NXDOMAIN, FORMERR, NOTIMP, BADVERS). No upstream, nothing forwarded.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace isb::net {

inline constexpr uint16_t kDnsTypeA = 1;
inline constexpr uint16_t kDnsTypeAaaa = 28;
inline constexpr uint16_t kDnsTypeOpt = 41;
inline constexpr uint16_t kDnsClassIn = 1;
inline constexpr uint32_t kDnsAnswerTtl = 5;      // seconds: a list change reaches clients quickly
inline constexpr uint16_t kDnsUdpPayload = 1232;  // what the responder's OPT record advertises
inline constexpr size_t kMaxDnsName = 255;        // wire bytes, length octets and the root label included

enum class DnsRcode : uint16_t { kNoError = 0, kFormErr = 1, kServFail = 2, kNxDomain = 3, kNotImp = 4, kBadVers = 16 };

using Ipv4 = std::array<uint8_t, 4>;

struct DnsQuery {
  uint16_t id = 0;
  uint16_t flags = 0;  // the header's flag bits as sent (opcode, RD, ...)
  // QNAME for matching: lowercased labels joined by '.', no trailing dot, "" for the root. Bytes other than
  // letters, digits, '-' and '_' are written \DDD (decimal), so a name with them never equals a host name.
  std::string name;
  uint16_t type = 0;
  uint16_t klass = 0;
  bool edns = false;  // the query carried an OPT record
  uint8_t edns_version = 0;
  uint16_t edns_payload = 0;      // the requester's UDP payload size
  std::vector<uint8_t> question;  // the question section as sent, echoed in responses (0x20 case kept)
};

struct DnsParse {
  enum Kind { kQuery, kRefuse, kDrop };
  Kind kind = kDrop;
  DnsRcode rcode = DnsRcode::kNoError;  // kRefuse: FORMERR, or NOTIMP for an opcode other than QUERY
  std::string reason;                   // kRefuse and kDrop: a fixed sentence saying what was wrong
  DnsQuery query;                       // kQuery; for kRefuse only id and flags
};

// Parses one query. kDrop: not even a query header (shorter than 12 bytes, or a response); kRefuse: the header
// is readable but the rest is not one well-formed question (exactly one; names of labels up to 63 bytes, 255 bytes
// in all; compression pointers only backwards and never into the header) with at most one OPT record after it.
DnsParse ParseDnsQuery(std::span<const uint8_t> packet);

// Responses: QR, AA and RA set, opcode and RD copied, the question echoed, an OPT record when the query had one.
std::vector<uint8_t> BuildAnswer(const DnsQuery& query, Ipv4 address, uint32_t ttl = kDnsAnswerTtl);
// No answer records: kNoError is "no data of this type", kNxDomain "no such name", kBadVers for EDNS above 0,
// kServFail "no resolver to ask".
std::vector<uint8_t> BuildEmpty(const DnsQuery& query, DnsRcode rcode);
// A bare header (no question) for a query that could not be read: FORMERR or NOTIMP.
std::vector<uint8_t> BuildHeaderOnly(uint16_t id, uint16_t flags, DnsRcode rcode);

// The responder's whole decision for one packet. An A query in class IN for a name `listed` accepts gets
// `address`; another type for a listed name gets no data; any other name or class NXDOMAIN; EDNS versions above 0
// BADVERS; a refused query FORMERR or NOTIMP. nullopt: drop the packet, answer nothing.
std::optional<std::vector<uint8_t>> Respond(std::span<const uint8_t> packet,
                                            const std::function<bool(std::string_view name)>& listed, Ipv4 address);

}  // namespace isb::net
