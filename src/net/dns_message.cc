// DNS query parsing with a name reader that follows compression pointers only backwards (so never in a loop) and
// bounds every name to 255 bytes; responses are built from the query's own question bytes.
#include "net/dns_message.h"

#include <cstdio>

#include "net/byte_reader.h"

namespace isb::net {
namespace {

using Bytes = std::span<const uint8_t>;

constexpr size_t kHeader = 12;
constexpr uint16_t kFlagQr = 0x8000;
constexpr uint16_t kOpcodeMask = 0x7800;
constexpr uint16_t kFlagAa = 0x0400;
constexpr uint16_t kFlagRd = 0x0100;
constexpr uint16_t kFlagRa = 0x0080;

bool PlainLabelByte(uint8_t c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'; }

void AppendLabel(Bytes label, std::string& out) {
  if (!out.empty()) out += '.';
  for (uint8_t c : label) {
    if (c >= 'A' && c <= 'Z') c = static_cast<uint8_t>(c - 'A' + 'a');
    if (PlainLabelByte(c)) {
      out += static_cast<char>(c);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\%03u", c);
      out += escaped;
    }
  }
}

// Reads the name at the reader's offset into `out` and moves the reader past it (past its first pointer, if any).
// Returns empty on success, else the FORMERR reason.
std::string ReadName(Bytes packet, ByteReader& reader, std::string& out) {
  size_t pos = reader.offset();
  size_t run_start = pos;  // where the labels being read were written; a pointer must go strictly before it
  size_t end = 0;          // where the reader resumes: after the first pointer or the root label
  size_t wire = 0;
  while (true) {
    if (pos >= packet.size()) return "name runs past the end of the packet";
    uint8_t len = packet[pos];
    if ((len & 0xC0) == 0xC0) {
      if (pos + 1 >= packet.size()) return "name runs past the end of the packet";
      size_t target = static_cast<size_t>(len & 0x3F) << 8 | packet[pos + 1];
      if (target < kHeader) return "compression pointer into the header";
      if (target >= run_start) return "compression pointer forward or to itself";
      if (end == 0) end = pos + 2;
      pos = run_start = target;
      continue;
    }
    if ((len & 0xC0) != 0) return "label longer than 63 bytes (an extended or reserved label type)";
    wire += 1 + len;
    if (wire > kMaxDnsName) return "name longer than 255 bytes";
    if (len == 0) {
      if (end == 0) end = pos + 1;
      reader.Skip(end - reader.offset());
      return "";
    }
    if (packet.size() - pos - 1 < len) return "name runs past the end of the packet";
    AppendLabel(packet.subspan(pos + 1, len), out);
    pos += 1 + len;
  }
}

std::string ReadAdditional(Bytes packet, ByteReader& r, DnsQuery& q) {
  std::string name;
  if (std::string problem = ReadName(packet, r, name); !problem.empty()) return problem;
  uint16_t type = 0, klass = 0;
  uint32_t ttl = 0;
  Bytes rdata;
  if (!r.U16(type) || !r.U16(klass) || !r.U32(ttl) || !r.Prefixed(2, rdata)) {
    return "additional record runs past the end of the packet";
  }
  if (type != kDnsTypeOpt) return "";  // tolerated, never used
  if (!name.empty()) return "OPT record with a name other than the root";
  if (q.edns) return "more than one OPT record";
  q.edns = true;
  q.edns_payload = klass;
  q.edns_version = static_cast<uint8_t>(ttl >> 16);
  return "";
}

DnsParse Refuse(DnsParse p, DnsRcode rcode, std::string reason) {
  p.kind = DnsParse::kRefuse;
  p.rcode = rcode;
  p.reason = std::move(reason);
  p.query.name.clear();
  p.query.question.clear();
  p.query.edns = false;
  return p;
}

void Put16(std::vector<uint8_t>& out, uint32_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}

void Put32(std::vector<uint8_t>& out, uint32_t v) {
  Put16(out, v >> 16);
  Put16(out, v & 0xffff);
}

std::vector<uint8_t> Header(uint16_t id, uint16_t query_flags, DnsRcode rcode, uint16_t extra_flags,
                            std::array<uint16_t, 4> counts) {
  std::vector<uint8_t> out;
  Put16(out, id);
  uint16_t code = static_cast<uint16_t>(rcode);
  Put16(out, kFlagQr | (query_flags & (kOpcodeMask | kFlagRd)) | kFlagRa | extra_flags | (code & 0xF));
  for (uint16_t c : counts) Put16(out, c);
  return out;
}

// The question echoed, the A record if any, and the OPT record if the query had one.
std::vector<uint8_t> Response(const DnsQuery& q, DnsRcode rcode, const Ipv4* address, uint32_t ttl) {
  uint16_t answers = address != nullptr ? 1 : 0;
  std::vector<uint8_t> out = Header(q.id, q.flags, rcode, kFlagAa, {1, answers, 0, static_cast<uint16_t>(q.edns)});
  out.insert(out.end(), q.question.begin(), q.question.end());
  if (address != nullptr) {
    Put16(out, 0xC000 | kHeader);  // the name: a pointer to the question's
    Put16(out, kDnsTypeA);
    Put16(out, kDnsClassIn);
    Put32(out, ttl);
    Put16(out, 4);
    out.insert(out.end(), address->begin(), address->end());
  }
  if (q.edns) {
    out.push_back(0);  // root name
    Put16(out, kDnsTypeOpt);
    Put16(out, kDnsUdpPayload);
    Put32(out, static_cast<uint32_t>(static_cast<uint16_t>(rcode) >> 4) << 24);  // extended rcode, version 0
    Put16(out, 0);
  }
  return out;
}

}  // namespace

DnsParse ParseDnsQuery(Bytes packet) {
  DnsParse p;
  ByteReader r(packet);
  uint16_t counts[4];
  if (!r.U16(p.query.id) || !r.U16(p.query.flags) || !r.U16(counts[0]) || !r.U16(counts[1]) || !r.U16(counts[2]) ||
      !r.U16(counts[3])) {
    p.reason = "shorter than a DNS header";
    return p;
  }
  if (p.query.flags & kFlagQr) {
    p.reason = "a response, not a query";
    return p;
  }
  if (p.query.flags & kOpcodeMask) return Refuse(p, DnsRcode::kNotImp, "opcode other than QUERY");
  if (counts[0] != 1) return Refuse(p, DnsRcode::kFormErr, "question count is not 1");
  if (counts[1] != 0 || counts[2] != 0) return Refuse(p, DnsRcode::kFormErr, "answer or authority records in a query");
  if (std::string problem = ReadName(packet, r, p.query.name); !problem.empty()) {
    return Refuse(p, DnsRcode::kFormErr, problem);
  }
  if (!r.U16(p.query.type) || !r.U16(p.query.klass)) {
    return Refuse(p, DnsRcode::kFormErr, "question runs past the end of the packet");
  }
  p.query.question.assign(packet.begin() + kHeader, packet.begin() + r.offset());
  for (uint16_t i = 0; i < counts[3]; ++i) {
    if (std::string problem = ReadAdditional(packet, r, p.query); !problem.empty()) {
      return Refuse(p, DnsRcode::kFormErr, problem);
    }
  }
  if (!r.empty()) return Refuse(p, DnsRcode::kFormErr, "bytes after the last record");
  p.kind = DnsParse::kQuery;
  return p;
}

std::vector<uint8_t> BuildAnswer(const DnsQuery& query, Ipv4 address, uint32_t ttl) {
  return Response(query, DnsRcode::kNoError, &address, ttl);
}

std::vector<uint8_t> BuildEmpty(const DnsQuery& query, DnsRcode rcode) { return Response(query, rcode, nullptr, 0); }

std::vector<uint8_t> BuildHeaderOnly(uint16_t id, uint16_t flags, DnsRcode rcode) {
  return Header(id, flags, rcode, 0, {0, 0, 0, 0});
}

std::optional<std::vector<uint8_t>> Respond(Bytes packet, const std::function<bool(std::string_view)>& listed,
                                            Ipv4 address) {
  DnsParse p = ParseDnsQuery(packet);
  if (p.kind == DnsParse::kDrop) return std::nullopt;
  const DnsQuery& q = p.query;
  if (p.kind == DnsParse::kRefuse) return BuildHeaderOnly(q.id, q.flags, p.rcode);
  if (q.edns && q.edns_version != 0) return BuildEmpty(q, DnsRcode::kBadVers);
  if (q.klass != kDnsClassIn || !listed(q.name)) return BuildEmpty(q, DnsRcode::kNxDomain);
  if (q.type == kDnsTypeA) return BuildAnswer(q, address);
  return BuildEmpty(q, DnsRcode::kNoError);
}

}  // namespace isb::net
