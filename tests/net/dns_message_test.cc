// DNS queries and responses: real dig queries and a real dig against a loopback responder built on Respond, exact
// response bytes, and hand-built malformed packets (pointer loops, every truncation, long labels and names).
#include "net/dns_message.h"

#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <thread>

#include "net/loopback.h"

namespace isb::net {
namespace {

using Packet = std::vector<uint8_t>;

Packet Hex(std::string_view hex) {
  Packet out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

void Add16(Packet& p, uint16_t v) {
  p.push_back(static_cast<uint8_t>(v >> 8));
  p.push_back(static_cast<uint8_t>(v));
}

Packet Name(const std::string& dotted) {
  Packet out;
  size_t start = 0;
  while (start < dotted.size()) {
    size_t dot = dotted.find('.', start);
    if (dot == std::string::npos) dot = dotted.size();
    out.push_back(static_cast<uint8_t>(dot - start));
    out.insert(out.end(), dotted.begin() + start, dotted.begin() + dot);
    start = dot + 1;
  }
  out.push_back(0);
  return out;
}

Packet Header(uint16_t id, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ns, uint16_t ar) {
  Packet p;
  for (uint16_t v : {id, flags, qd, an, ns, ar}) Add16(p, v);
  return p;
}

Packet Opt(uint16_t payload = 1232, uint8_t version = 0) {
  Packet p = {0};
  Add16(p, kDnsTypeOpt);
  Add16(p, payload);
  for (uint8_t b : {uint8_t{0}, version, uint8_t{0}, uint8_t{0}}) p.push_back(b);
  Add16(p, 0);
  return p;
}

Packet Question(const Packet& name, uint16_t type = kDnsTypeA, uint16_t klass = kDnsClassIn) {
  Packet q = name;
  Add16(q, type);
  Add16(q, klass);
  return q;
}

Packet Cat(std::initializer_list<Packet> parts) {
  Packet out;
  for (const Packet& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Packet Query(const std::string& name, uint16_t type = kDnsTypeA, bool opt = false, uint16_t klass = kDnsClassIn) {
  return Cat({Header(0xbeef, 0x0100, 1, 0, 0, opt ? 1 : 0), Question(Name(name), type, klass), opt ? Opt() : Packet{}});
}

const Ipv4 kProxy = {192, 0, 2, 7};

bool Listed(std::string_view name) { return name == "allowed.example" || name.ends_with(".wild.example"); }

void ExpectRefused(const Packet& packet, DnsRcode rcode, const std::string& reason) {
  DnsParse p = ParseDnsQuery(packet);
  EXPECT_EQ(p.kind, DnsParse::kRefuse) << reason;
  EXPECT_EQ(p.rcode, rcode) << reason;
  EXPECT_EQ(p.reason, reason);
  auto response = Respond(packet, Listed, kProxy);
  ASSERT_TRUE(response.has_value());
  uint16_t flags = 0x8000 | 0x0080 | (packet[2] << 8 & 0x7900) | static_cast<uint16_t>(rcode);
  EXPECT_EQ(*response, Header(packet[0] << 8 | packet[1], flags, 0, 0, 0, 0)) << reason;
}

// Queries dig sent to a loopback socket (fuzz/corpus/dns_message holds the same bytes).
const char* kDigA =
    "5d890120000100000000000107416c6c6f776564074578616d706c65000001000100002904d000000000000c000a0008a230ccf41219229a";
const char* kDigNsidDo =
    "bdd90120000100000000000103777777076578616d706c65036f7267000001000100002904d000008000001000030000000a00082b730f0623"
    "ced40d";
const char* kDigAaaaNoEdns = "8c6f0120000100000000000007616c6c6f776564076578616d706c6500001c0001";

TEST(DnsMessageTest, ParsesRealQueries) {
  DnsParse a = ParseDnsQuery(Hex(kDigA));
  ASSERT_EQ(a.kind, DnsParse::kQuery) << a.reason;
  EXPECT_EQ(a.query.id, 0x5d89);
  EXPECT_EQ(a.query.flags, 0x0120);
  EXPECT_EQ(a.query.name, "allowed.example");  // sent as Allowed.Example
  EXPECT_EQ(a.query.type, kDnsTypeA);
  EXPECT_EQ(a.query.klass, kDnsClassIn);
  EXPECT_TRUE(a.query.edns);
  EXPECT_EQ(a.query.edns_payload, 1232);
  EXPECT_EQ(a.query.edns_version, 0);
  EXPECT_EQ(a.query.question, Question(Name("Allowed.Example")));

  DnsParse nsid = ParseDnsQuery(Hex(kDigNsidDo));
  ASSERT_EQ(nsid.kind, DnsParse::kQuery) << nsid.reason;
  EXPECT_EQ(nsid.query.name, "www.example.org");
  EXPECT_TRUE(nsid.query.edns);

  DnsParse aaaa = ParseDnsQuery(Hex(kDigAaaaNoEdns));
  ASSERT_EQ(aaaa.kind, DnsParse::kQuery) << aaaa.reason;
  EXPECT_EQ(aaaa.query.type, kDnsTypeAaaa);
  EXPECT_FALSE(aaaa.query.edns);
}

TEST(DnsMessageTest, ExactResponses) {
  Packet q = Question(Name("Allowed.Example"));
  // A for a listed name: QR|AA|RD|RA, the question as sent, one A record pointing at it, TTL 5.
  EXPECT_EQ(*Respond(Query("Allowed.Example"), Listed, kProxy),
            Cat({Header(0xbeef, 0x8580, 1, 1, 0, 0), q, Hex("c00c00010001000000050004c0000207")}));
  EXPECT_EQ(*Respond(Query("Allowed.Example", kDnsTypeA, true), Listed, kProxy),
            Cat({Header(0xbeef, 0x8580, 1, 1, 0, 1), q, Hex("c00c00010001000000050004c0000207"), Opt()}));
  // Another type of a listed name: no data. Anything else: NXDOMAIN.
  EXPECT_EQ(*Respond(Query("allowed.example", kDnsTypeAaaa), Listed, kProxy),
            Cat({Header(0xbeef, 0x8580, 1, 0, 0, 0), Question(Name("allowed.example"), kDnsTypeAaaa)}));
  EXPECT_EQ(*Respond(Query("deep.er.wild.example", 16, true), Listed, kProxy),
            Cat({Header(0xbeef, 0x8580, 1, 0, 0, 1), Question(Name("deep.er.wild.example"), 16), Opt()}));
  EXPECT_EQ(*Respond(Query("other.example"), Listed, kProxy),
            Cat({Header(0xbeef, 0x8583, 1, 0, 0, 0), Question(Name("other.example"))}));
  EXPECT_EQ(*Respond(Query("wild.example"), Listed, kProxy),
            Cat({Header(0xbeef, 0x8583, 1, 0, 0, 0), Question(Name("wild.example"))}));
  EXPECT_EQ(*Respond(Query("allowed.example", kDnsTypeA, false, 3), Listed, kProxy),  // class CH
            Cat({Header(0xbeef, 0x8583, 1, 0, 0, 0), Question(Name("allowed.example"), kDnsTypeA, 3)}));
  // EDNS version 1: BADVERS (extended rcode 1 in the OPT record, 0 in the header), no answer.
  Packet v1 = Cat({Header(7, 0, 1, 0, 0, 1), q, Opt(512, 1)});
  Packet badvers = Opt();
  badvers[5] = 1;
  EXPECT_EQ(*Respond(v1, Listed, kProxy), Cat({Header(7, 0x8480, 1, 0, 0, 1), q, badvers}));
  // The builders alone.
  DnsQuery query = ParseDnsQuery(Query("a.example")).query;
  EXPECT_EQ(BuildAnswer(query, {10, 0, 0, 1}, 60), Cat({Header(0xbeef, 0x8580, 1, 1, 0, 0), Question(Name("a.example")),
                                                        Hex("c00c000100010000003c00040a000001")}));
  EXPECT_EQ(BuildHeaderOnly(0x0102, 0x0100, DnsRcode::kFormErr), Header(0x0102, 0x8181, 0, 0, 0, 0));
}

TEST(DnsMessageTest, DropsWhatIsNotAQuery) {
  Packet query = Query("allowed.example");
  for (size_t n = 0; n < 12; ++n) {
    Packet cut(query.begin(), query.begin() + n);
    DnsParse p = ParseDnsQuery(cut);
    EXPECT_EQ(p.kind, DnsParse::kDrop);
    EXPECT_EQ(p.reason, "shorter than a DNS header");
    EXPECT_FALSE(Respond(cut, Listed, kProxy).has_value());
  }
  Packet response = *Respond(query, Listed, kProxy);
  DnsParse p = ParseDnsQuery(response);
  EXPECT_EQ(p.kind, DnsParse::kDrop);
  EXPECT_EQ(p.reason, "a response, not a query");
  EXPECT_FALSE(Respond(response, Listed, kProxy).has_value());
}

TEST(DnsMessageTest, RefusesMalformedHeadersAndSections) {
  Packet q = Question(Name("allowed.example"));
  ExpectRefused(Cat({Header(1, 0x1000, 1, 0, 0, 0), q}), DnsRcode::kNotImp, "opcode other than QUERY");  // STATUS
  ExpectRefused(Cat({Header(1, 0x2900, 1, 0, 0, 0), q}), DnsRcode::kNotImp, "opcode other than QUERY");  // NOTIFY
  ExpectRefused(Header(1, 0, 0, 0, 0, 0), DnsRcode::kFormErr, "question count is not 1");
  ExpectRefused(Cat({Header(1, 0, 2, 0, 0, 0), q, q}), DnsRcode::kFormErr, "question count is not 1");
  ExpectRefused(Cat({Header(1, 0, 1, 1, 0, 0), q}), DnsRcode::kFormErr, "answer or authority records in a query");
  ExpectRefused(Cat({Header(1, 0, 1, 0, 1, 0), q}), DnsRcode::kFormErr, "answer or authority records in a query");
  ExpectRefused(Cat({Header(1, 0, 1, 0, 0, 0), q, {0}}), DnsRcode::kFormErr, "bytes after the last record");
  ExpectRefused(Cat({Header(1, 0, 1, 0, 0, 2), q, Opt(), Opt()}), DnsRcode::kFormErr, "more than one OPT record");
  Packet named_opt = Opt();
  named_opt[0] = 0xC0;
  named_opt.insert(named_opt.begin() + 1, 12);
  ExpectRefused(Cat({Header(1, 0, 1, 0, 0, 1), q, named_opt}), DnsRcode::kFormErr,
                "OPT record with a name other than the root");
  ExpectRefused(Cat({Header(1, 0, 1, 0, 0, 1), q, Hex("0000290200000000000005")}), DnsRcode::kFormErr,
                "additional record runs past the end of the packet");
  ExpectRefused(Cat({Header(1, 0, 1, 0, 0, 1), q}), DnsRcode::kFormErr, "name runs past the end of the packet");
}

TEST(DnsMessageTest, RefusesBadNames) {
  Packet tail = Hex("00010001");
  auto in_question = [&](const Packet& name) { return Cat({Header(1, 0x0100, 1, 0, 0, 0), name, tail}); };
  ExpectRefused(in_question(Cat({{64}, Packet(64, 'a'), {0}})), DnsRcode::kFormErr,
                "label longer than 63 bytes (an extended or reserved label type)");
  ExpectRefused(in_question(Hex("8161")), DnsRcode::kFormErr,
                "label longer than 63 bytes (an extended or reserved label type)");
  std::string label63(63, 'x');
  ExpectRefused(in_question(Name(label63 + "." + label63 + "." + label63 + "." + label63)), DnsRcode::kFormErr,
                "name longer than 255 bytes");
  // 4 labels of 63 = 256 wire bytes with the root; 3 of 63 and one of 61 is the largest name: 255.
  DnsParse largest =
      ParseDnsQuery(in_question(Name(label63 + "." + label63 + "." + label63 + "." + std::string(61, 'y'))));
  ASSERT_EQ(largest.kind, DnsParse::kQuery) << largest.reason;
  EXPECT_EQ(largest.query.name.size(), 253u);
  // A question cannot use compression: any pointer there goes into the header, forward, or to itself.
  ExpectRefused(in_question(Hex("c000")), DnsRcode::kFormErr, "compression pointer into the header");
  ExpectRefused(in_question(Hex("c00b")), DnsRcode::kFormErr, "compression pointer into the header");
  ExpectRefused(in_question(Hex("c00c")), DnsRcode::kFormErr, "compression pointer forward or to itself");
  ExpectRefused(in_question(Hex("0161c00c")), DnsRcode::kFormErr, "compression pointer forward or to itself");
  ExpectRefused(in_question(Hex("0161c010")), DnsRcode::kFormErr, "compression pointer forward or to itself");
  ExpectRefused(in_question(Hex("01")), DnsRcode::kFormErr, "name runs past the end of the packet");
  ExpectRefused(Cat({Header(1, 0x0100, 1, 0, 0, 0), Hex("c0")}), DnsRcode::kFormErr,
                "name runs past the end of the packet");
  ExpectRefused(Cat({Header(1, 0x0100, 1, 0, 0, 0), Name("a"), {0}}), DnsRcode::kFormErr,
                "question runs past the end of the packet");
}

TEST(DnsMessageTest, PointersInTheAdditionalSection) {
  Packet q = Question(Name("allowed.example"));  // at offset 12
  size_t after_q = 12 + q.size();
  auto record = [](const Packet& name) { return Cat({name, Hex("00630001000000000000")}); };  // type 99, no data
  // Backwards to the question's name, directly and through a label: fine (and ignored).
  for (const Packet& name : {Hex("c00c"), Hex("0162c00c"), Hex("c014")}) {
    DnsParse p = ParseDnsQuery(Cat({Header(1, 0, 1, 0, 0, 1), q, record(name)}));
    EXPECT_EQ(p.kind, DnsParse::kQuery) << p.reason;
  }
  // A pointer to itself, a pair pointing at each other, and a chain back into a pointer: refused, never followed.
  Packet self = {static_cast<uint8_t>(0xC0 | after_q >> 8), static_cast<uint8_t>(after_q)};
  ExpectRefused(Cat({Header(1, 0, 1, 0, 0, 1), q, record(self)}), DnsRcode::kFormErr,
                "compression pointer forward or to itself");
  Packet to_next = {0xC0, static_cast<uint8_t>(after_q + 2)};
  Packet to_first = {0xC0, static_cast<uint8_t>(after_q)};
  ExpectRefused(Cat({Header(1, 0, 1, 0, 0, 1), q, to_next, to_first, Hex("00630001000000000000")}), DnsRcode::kFormErr,
                "compression pointer forward or to itself");
  // A name longer than 255 bytes assembled through pointers.
  std::string label63(63, 'x');
  Packet big = Question(Name(label63 + "." + label63 + "." + label63));  // 193 wire bytes at offset 12
  Packet far = Cat({{63}, Packet(63, 'z'), {0xC0, 12}});
  ExpectRefused(Cat({Header(1, 0, 1, 0, 0, 1), big, record(far)}), DnsRcode::kFormErr, "name longer than 255 bytes");
}

TEST(DnsMessageTest, EveryTruncationIsFormErr) {
  for (const char* hex : {kDigA, kDigNsidDo, kDigAaaaNoEdns}) {
    Packet full = Hex(hex);
    for (size_t n = 12; n < full.size(); ++n) {
      Packet cut(full.begin(), full.begin() + n);
      DnsParse p = ParseDnsQuery(cut);
      ASSERT_EQ(p.kind, DnsParse::kRefuse) << n;
      EXPECT_EQ(p.rcode, DnsRcode::kFormErr);
      EXPECT_TRUE(p.reason == "name runs past the end of the packet" ||
                  p.reason == "question runs past the end of the packet" ||
                  p.reason == "additional record runs past the end of the packet")
          << n << ": " << p.reason;
      EXPECT_EQ(*Respond(cut, Listed, kProxy), Header(full[0] << 8 | full[1], 0x8181, 0, 0, 0, 0));
    }
  }
}

TEST(DnsMessageTest, NamesAreLowercasedAndEscaped) {
  auto name_of = [](const Packet& name) {
    DnsParse p = ParseDnsQuery(Cat({Header(1, 0, 1, 0, 0, 0), name, Hex("00010001")}));
    EXPECT_EQ(p.kind, DnsParse::kQuery) << p.reason;
    return p.query.name;
  };
  EXPECT_EQ(name_of(Name("WWW.Example.COM")), "www.example.com");
  EXPECT_EQ(name_of({0}), "");
  // "allowed.example" as one label is not the two-label name.
  std::string text = "allowed.example";
  Packet one_label = Cat({{static_cast<uint8_t>(text.size())}, Packet(text.begin(), text.end()), {0}});
  EXPECT_EQ(name_of(one_label), "allowed\\046example");
  EXPECT_EQ((*Respond(Cat({Header(1, 0x0100, 1, 0, 0, 0), one_label, Hex("00010001")}), Listed, kProxy))[3] & 0xF,
            3);  // NXDOMAIN
  EXPECT_EQ(name_of(Hex("0561205cff0000")), "a\\032\\092\\255\\000");
  EXPECT_EQ(name_of(Name("_srv.a-b")), "_srv.a-b");
}

// A loopback UDP responder on Respond, served from a thread until the test ends.
class Responder {
 public:
  Responder() {
    auto s = testing::BindUdp();
    EXPECT_TRUE(s.ok());
    if (s.ok()) socket_ = std::move(*s);
    auto stop = MakePipe();
    EXPECT_TRUE(stop.ok());
    if (stop.ok()) stop_ = std::move(*stop);
    thread_ = std::thread([this] { Serve(); });
  }
  ~Responder() {
    stop_.write.Reset();
    thread_.join();
  }
  uint16_t port() const { return socket_.port; }

 private:
  void Serve() {
    while (true) {
      pollfd fds[2] = {{socket_.fd.get(), POLLIN, 0}, {stop_.read.get(), POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 || fds[1].revents != 0) return;
      uint8_t buf[4096];
      sockaddr_storage from{};
      socklen_t from_len = sizeof from;
      ssize_t n = ::recvfrom(socket_.fd.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n < 0) continue;
      auto response = Respond({buf, static_cast<size_t>(n)}, Listed, kProxy);
      if (response) {
        ::sendto(socket_.fd.get(), response->data(), response->size(), 0, reinterpret_cast<sockaddr*>(&from), from_len);
      }
    }
  }

  testing::Socket socket_;
  Pipe stop_;
  std::thread thread_;
};

std::string Dig(const Responder& r, std::vector<std::string> args) {
  std::vector<std::string> argv = {"dig", "@127.0.0.1", "-p", std::to_string(r.port()), "+tries=1", "+time=3"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto child = testing::Child::Start(argv);
  EXPECT_TRUE(child.ok()) << "dig is missing: scripts/install-deps.sh installs dnsutils";
  return child.ok() ? child->Output(10000) : "";
}

TEST(DnsMessageTest, LiveDig) {
  Responder responder;
  EXPECT_EQ(Dig(responder, {"+short", "allowed.example", "A"}), "192.0.2.7\n");
  EXPECT_EQ(Dig(responder, {"+short", "ALLOWED.Example", "A"}), "192.0.2.7\n");
  EXPECT_EQ(Dig(responder, {"+short", "+noedns", "api.wild.example"}), "192.0.2.7\n");
  EXPECT_EQ(Dig(responder, {"+short", "+dnssec", "+nsid", "+cookie", "allowed.example"}), "192.0.2.7\n");

  std::string full = Dig(responder, {"allowed.example", "A"});
  EXPECT_NE(full.find("status: NOERROR"), std::string::npos) << full;
  EXPECT_NE(full.find("flags: qr aa rd ra; QUERY: 1, ANSWER: 1, AUTHORITY: 0, ADDITIONAL: 1"), std::string::npos);
  EXPECT_NE(full.find("allowed.example.\t5\tIN\tA\t192.0.2.7"), std::string::npos) << full;
  EXPECT_NE(full.find("; EDNS: version: 0, flags:; udp: 1232"), std::string::npos) << full;
  std::string aaaa = Dig(responder, {"allowed.example", "AAAA"});
  EXPECT_NE(aaaa.find("status: NOERROR"), std::string::npos) << aaaa;
  EXPECT_NE(aaaa.find("ANSWER: 0,"), std::string::npos) << aaaa;
  std::string other = Dig(responder, {"exfil-data.attacker.example", "TXT"});
  EXPECT_NE(other.find("status: NXDOMAIN"), std::string::npos) << other;
  EXPECT_NE(other.find("ANSWER: 0,"), std::string::npos) << other;
  std::string v1 = Dig(responder, {"+edns=1", "+noednsnegotiation", "allowed.example"});
  EXPECT_NE(v1.find("status: BADVERS"), std::string::npos) << v1;
  std::string notify = Dig(responder, {"+opcode=notify", "allowed.example"});
  EXPECT_NE(notify.find("status: NOTIMP"), std::string::npos) << notify;
}

}  // namespace
}  // namespace isb::net
