// The SSRF table: every spelling and special-purpose range refused with its exact reason, and the public controls.
#include "egress/address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <random>

namespace isb::egress {
namespace {

struct Row {
  const char* text;
  AddressKind kind;
  const char* reason;
};

void ExpectRefused(const Row& row) {
  auto a = ParseIpAddress(row.text);
  ASSERT_TRUE(a.ok()) << row.text << ": " << a.error().message;
  AddressClass c = Classify(*a);
  EXPECT_EQ(c.kind, row.kind) << row.text;
  EXPECT_EQ(c.reason, row.reason) << row.text;
  EXPECT_FALSE(c.is_public()) << row.text;
}

constexpr auto kLoop = AddressKind::kLoopback;
const char* const kLoopV4 = "loopback (127.0.0.0/8)";

TEST(AddressTest, EverySpellingOfLoopbackIsRefused) {
  for (const char* text : {"127.0.0.1", "2130706433", "0177.0.0.1", "0x7f.1", "127.1", "0x7f000001", "0X7F.0.0.1",
                           "017700000001", "0x7f.0.1", "127.0.1", "0177.1", "00000177.0.0.1", "127.000.000.001",
                           "0x0000007f.1", "127.255.255.254", "0x7F.0xff.0377.254"}) {
    ExpectRefused({text, kLoop, kLoopV4});
  }
  for (const char* text : {"::1", "0:0:0:0:0:0:0:1", "[::1]", "0000::0001", "[0:0::1]"}) {
    ExpectRefused({text, kLoop, "loopback (::1)"});
  }
}

TEST(AddressTest, IPv6FormsAreJudgedByTheIPv4AddressTheyEmbed) {
  const Row rows[] = {
      {"::ffff:127.0.0.1", kLoop, "loopback (127.0.0.0/8) inside an IPv4-mapped address (::ffff:0:0/96)"},
      {"::ffff:7f00:1", kLoop, "loopback (127.0.0.0/8) inside an IPv4-mapped address (::ffff:0:0/96)"},
      {"[::FFFF:127.0.0.1]", kLoop, "loopback (127.0.0.0/8) inside an IPv4-mapped address (::ffff:0:0/96)"},
      {"::ffff:169.254.169.254", AddressKind::kLinkLocal,
       "link-local (169.254.0.0/16), the cloud metadata service inside an IPv4-mapped address (::ffff:0:0/96)"},
      {"::ffff:0:0", AddressKind::kUnspecified, "unspecified (0.0.0.0) inside an IPv4-mapped address (::ffff:0:0/96)"},
      {"::127.0.0.1", kLoop, "loopback (127.0.0.0/8) inside an IPv4-compatible address (::/96)"},
      {"::10.0.0.1", AddressKind::kPrivate, "private (10.0.0.0/8) inside an IPv4-compatible address (::/96)"},
      {"::2", AddressKind::kThisNetwork, "this network (0.0.0.0/8) inside an IPv4-compatible address (::/96)"},
      {"::ffff:0:127.0.0.1", kLoop, "loopback (127.0.0.0/8) inside an IPv4-translated address (::ffff:0:0:0/96)"},
      {"::ffff:0:a00:1", AddressKind::kPrivate,
       "private (10.0.0.0/8) inside an IPv4-translated address (::ffff:0:0:0/96)"},
      {"64:ff9b::127.0.0.1", kLoop, "loopback (127.0.0.0/8) inside a NAT64 address (64:ff9b::/96)"},
      {"64:ff9b::a9fe:a9fe", AddressKind::kLinkLocal,
       "link-local (169.254.0.0/16), the cloud metadata service inside a NAT64 address (64:ff9b::/96)"},
      {"64:ff9b::c0a8:101", AddressKind::kPrivate, "private (192.168.0.0/16) inside a NAT64 address (64:ff9b::/96)"},
      {"64:ff9b:1::7f00:1", kLoop, "loopback (127.0.0.0/8) inside a local-use NAT64 address (64:ff9b:1::/48)"},
      {"64:ff9b:1:7f00:1::", AddressKind::kLocalNat64,
       "local-use NAT64 (64:ff9b:1::/48) in a layout other than /96, which isb cannot judge"},
      {"64:ff9b:1:0:a:0:808:808", AddressKind::kLocalNat64,
       "local-use NAT64 (64:ff9b:1::/48) in a layout other than /96, which isb cannot judge"},
      {"2002:7f00:1::", kLoop, "loopback (127.0.0.0/8) inside a 6to4 address (2002::/16)"},
      {"2002:a9fe:a9fe::1", AddressKind::kLinkLocal,
       "link-local (169.254.0.0/16), the cloud metadata service inside a 6to4 address (2002::/16)"},
      {"2002:ac10:1::", AddressKind::kPrivate, "private (172.16.0.0/12) inside a 6to4 address (2002::/16)"},
      // Teredo holds the client's address inverted: 0x80fffffe is ~127.0.0.1.
      {"2001:0:4136:e378:8000:63bf:80ff:fffe", kLoop, "loopback (127.0.0.0/8) inside a Teredo address (2001::/32)"},
      {"2001::f5ff:fffe", AddressKind::kPrivate, "private (10.0.0.0/8) inside a Teredo address (2001::/32)"},
      {"2001:0:7f00:1::f7f7:f7f7", AddressKind::kPublic, ""},  // the server part does not count
  };
  for (const Row& row : rows) {
    if (row.kind == AddressKind::kPublic) {
      EXPECT_TRUE(Classify(*ParseIpAddress(row.text)).is_public()) << row.text;
    } else {
      ExpectRefused(row);
    }
  }
}

TEST(AddressTest, EveryIPv4RangeIsRefusedWithItsReason) {
  const Row rows[] = {
      {"0.0.0.0", AddressKind::kUnspecified, "unspecified (0.0.0.0)"},
      {"0", AddressKind::kUnspecified, "unspecified (0.0.0.0)"},
      {"0.1.2.3", AddressKind::kThisNetwork, "this network (0.0.0.0/8)"},
      {"0.255.255.255", AddressKind::kThisNetwork, "this network (0.0.0.0/8)"},
      {"10.0.0.1", AddressKind::kPrivate, "private (10.0.0.0/8)"},
      {"012.1", AddressKind::kPrivate, "private (10.0.0.0/8)"},
      {"167772161", AddressKind::kPrivate, "private (10.0.0.0/8)"},
      {"10.255.255.255", AddressKind::kPrivate, "private (10.0.0.0/8)"},
      {"100.64.0.0", AddressKind::kShared, "shared address space, CGNAT (100.64.0.0/10)"},
      {"100.127.255.255", AddressKind::kShared, "shared address space, CGNAT (100.64.0.0/10)"},
      {"169.254.169.254", AddressKind::kLinkLocal, "link-local (169.254.0.0/16), the cloud metadata service"},
      {"0xa9fea9fe", AddressKind::kLinkLocal, "link-local (169.254.0.0/16), the cloud metadata service"},
      {"2852039166", AddressKind::kLinkLocal, "link-local (169.254.0.0/16), the cloud metadata service"},
      {"0251.0376.0251.0376", AddressKind::kLinkLocal, "link-local (169.254.0.0/16), the cloud metadata service"},
      {"169.254.43518", AddressKind::kLinkLocal, "link-local (169.254.0.0/16), the cloud metadata service"},
      {"169.254.0.1", AddressKind::kLinkLocal, "link-local (169.254.0.0/16)"},
      {"172.16.0.1", AddressKind::kPrivate, "private (172.16.0.0/12)"},
      {"172.31.255.255", AddressKind::kPrivate, "private (172.16.0.0/12)"},
      {"192.0.0.1", AddressKind::kIetfProtocol, "IETF protocol assignments (192.0.0.0/24)"},
      {"192.0.0.255", AddressKind::kIetfProtocol, "IETF protocol assignments (192.0.0.0/24)"},
      {"192.0.2.1", AddressKind::kDocumentation, "documentation (192.0.2.0/24)"},
      {"192.88.99.1", AddressKind::kSixToFourRelay, "6to4 relay anycast (192.88.99.0/24)"},
      {"192.168.1.1", AddressKind::kPrivate, "private (192.168.0.0/16)"},
      {"0xc0.0xa8.1.1", AddressKind::kPrivate, "private (192.168.0.0/16)"},
      {"198.18.0.1", AddressKind::kBenchmarking, "benchmarking (198.18.0.0/15)"},
      {"198.19.255.255", AddressKind::kBenchmarking, "benchmarking (198.18.0.0/15)"},
      {"198.51.100.7", AddressKind::kDocumentation, "documentation (198.51.100.0/24)"},
      {"203.0.113.9", AddressKind::kDocumentation, "documentation (203.0.113.0/24)"},
      {"224.0.0.1", AddressKind::kMulticast, "multicast (224.0.0.0/4)"},
      {"239.255.255.250", AddressKind::kMulticast, "multicast (224.0.0.0/4)"},
      {"240.0.0.1", AddressKind::kReserved, "reserved (240.0.0.0/4)"},
      {"255.255.255.254", AddressKind::kReserved, "reserved (240.0.0.0/4)"},
      {"255.255.255.255", AddressKind::kBroadcast, "broadcast (255.255.255.255)"},
      {"4294967295", AddressKind::kBroadcast, "broadcast (255.255.255.255)"},
      {"0xffffffff", AddressKind::kBroadcast, "broadcast (255.255.255.255)"},
  };
  for (const Row& row : rows) ExpectRefused(row);
}

TEST(AddressTest, EveryIPv6RangeIsRefusedWithItsReason) {
  const Row rows[] = {
      {"::", AddressKind::kUnspecified, "unspecified (::)"},
      {"[::]", AddressKind::kUnspecified, "unspecified (::)"},
      {"fc00::1", AddressKind::kUniqueLocal, "unique-local (fc00::/7)"},
      {"fd00:ec2::254", AddressKind::kUniqueLocal, "unique-local (fc00::/7)"},
      {"fdff:ffff::1", AddressKind::kUniqueLocal, "unique-local (fc00::/7)"},
      {"fe80::1", AddressKind::kLinkLocal, "link-local (fe80::/10)"},
      {"[fe80::a9fe:a9fe]", AddressKind::kLinkLocal, "link-local (fe80::/10)"},
      {"febf::1", AddressKind::kLinkLocal, "link-local (fe80::/10)"},
      {"fec0::1", AddressKind::kSiteLocal, "site-local (fec0::/10)"},
      {"feff::1", AddressKind::kSiteLocal, "site-local (fec0::/10)"},
      {"ff02::1", AddressKind::kMulticast, "multicast (ff00::/8)"},
      {"ff0e::fb", AddressKind::kMulticast, "multicast (ff00::/8)"},
      {"2001:db8::1", AddressKind::kDocumentation, "documentation (2001:db8::/32)"},
      {"2001:db8:ffff::1", AddressKind::kDocumentation, "documentation (2001:db8::/32)"},
      {"3fff::1", AddressKind::kDocumentation, "documentation (3fff::/20)"},
      {"2001:10::1", AddressKind::kOrchid, "ORCHID (2001:10::/28)"},
      {"2001:2f::1", AddressKind::kOrchid, "ORCHIDv2 (2001:20::/28)"},
      {"2001:2::1", AddressKind::kBenchmarking, "benchmarking (2001:2::/48)"},
      {"2001:2:0:ffff::1", AddressKind::kBenchmarking, "benchmarking (2001:2::/48)"},
      {"2001:1::1", AddressKind::kIetfProtocol, "IETF protocol assignments (2001::/23)"},
      {"2001:1ff::1", AddressKind::kIetfProtocol, "IETF protocol assignments (2001::/23)"},
      {"100::1", AddressKind::kDiscard, "discard-only (100::/64)"},
      {"100::ffff:ffff:ffff:ffff", AddressKind::kDiscard, "discard-only (100::/64)"},
      {"5f00::1", AddressKind::kSegmentRouting, "segment routing SIDs (5f00::/16)"},
      {"100:0:0:1::1", AddressKind::kReserved, "reserved (outside global unicast 2000::/3)"},
      {"1::1", AddressKind::kReserved, "reserved (outside global unicast 2000::/3)"},
      {"4000::1", AddressKind::kReserved, "reserved (outside global unicast 2000::/3)"},
      {"e000::1", AddressKind::kReserved, "reserved (outside global unicast 2000::/3)"},
      {"::1:0:0:1", AddressKind::kReserved, "reserved (outside global unicast 2000::/3)"},
  };
  for (const Row& row : rows) ExpectRefused(row);
}

TEST(AddressTest, PublicAddressesPassInEverySpelling) {
  struct Public {
    const char* text;
    Embedding embedding;
  };
  const Public publics[] = {
      {"8.8.8.8", Embedding::kNone},
      {"134744072", Embedding::kNone},
      {"0x08080808", Embedding::kNone},
      {"010.010.010.010", Embedding::kNone},
      {"1.1.1.1", Embedding::kNone},
      {"93.184.216.34", Embedding::kNone},
      {"100.63.255.255", Embedding::kNone},
      {"100.128.0.0", Embedding::kNone},
      {"172.15.255.255", Embedding::kNone},
      {"172.32.0.0", Embedding::kNone},
      {"169.253.255.255", Embedding::kNone},
      {"169.255.0.0", Embedding::kNone},
      {"198.17.255.255", Embedding::kNone},
      {"198.20.0.0", Embedding::kNone},
      {"192.0.1.255", Embedding::kNone},
      {"192.88.98.255", Embedding::kNone},
      {"11.0.0.0", Embedding::kNone},
      {"126.255.255.255", Embedding::kNone},
      {"128.0.0.0", Embedding::kNone},
      {"223.255.255.255", Embedding::kNone},
      {"1.0.0.0", Embedding::kNone},
      {"2606:4700:4700::1111", Embedding::kNone},
      {"[2001:4860:4860::8888]", Embedding::kNone},
      {"2000::1", Embedding::kNone},
      {"2001:200::1", Embedding::kNone},
      {"3ffe::1", Embedding::kNone},
      {"::ffff:8.8.8.8", Embedding::kMapped},
      {"[::ffff:808:808]", Embedding::kMapped},
      {"::8.8.8.8", Embedding::kCompatible},
      {"::ffff:0:8.8.8.8", Embedding::kTranslated},
      {"64:ff9b::8.8.8.8", Embedding::kNat64},
      {"64:ff9b::5db8:d822", Embedding::kNat64},
      {"64:ff9b:1::808:808", Embedding::kLocalNat64},
      {"2002:808:808::1", Embedding::kSixToFour},
      {"2001:0:4136:e378:8000:63bf:f7f7:f7f7", Embedding::kTeredo},
  };
  for (const Public& p : publics) {
    auto a = ParseIpAddress(p.text);
    ASSERT_TRUE(a.ok()) << p.text << ": " << a.error().message;
    AddressClass c = Classify(*a);
    EXPECT_TRUE(c.is_public()) << p.text << ": " << c.reason;
    EXPECT_EQ(c.reason, "") << p.text;
    EXPECT_EQ(c.embedding, p.embedding) << p.text;
  }
}

TEST(AddressTest, RefusesWhatIsNotAnAddress) {
  struct Bad {
    const char* text;
    const char* message;
  };
  const Bad bads[] = {
      {"fe80::1%eth0", "'fe80::1%eth0' is not an IP address: IPv6 zone ids are refused"},
      {"[fe80::1%25eth0]", "'[fe80::1%25eth0]' is not an IP address: IPv6 zone ids are refused"},
      {"[127.0.0.1]", "'[127.0.0.1]' is not an IP address: brackets hold only an IPv6 address"},
      {"[::1", "'[::1' is not an IP address: unbalanced brackets"},
      {"[]", "'[]' is not an IP address: unbalanced brackets"},
      {"::1]", "'::1]' is not an IP address"},
      {"example.com", "'example.com' is not an IP address"},
      {"", "'' is not an IP address"},
  };
  for (const Bad& b : bads) {
    auto a = ParseIpAddress(b.text);
    ASSERT_FALSE(a.ok()) << b.text;
    EXPECT_EQ(a.error().message, b.message);
    EXPECT_EQ(a.error().code, Code::kInvalidArgument);
  }
  for (const char* text : {"0x",
                           "0x.1",
                           "08",
                           "09.1",
                           "1.2.3.4.",
                           "1.2.3.4 x",
                           " 1",
                           "+1",
                           "-1",
                           "1..2",
                           ".",
                           "1.2.3.4.5",
                           "256.1.1.1",
                           "1.256.1",
                           "1.1.65536",
                           "1.16777216",
                           "4294967296",
                           "99999999999999999999",
                           "0x7fg",
                           "0x100000000",
                           ":::",
                           "1:2:3:4:5:6:7:8:9",
                           "::ffff:0x7f.1",
                           "::ffff:127.1",
                           "1.2.3.-4",
                           "１２７.0.0.1"}) {
    EXPECT_FALSE(ParseIpAddress(text).ok()) << text;
  }
}

TEST(AddressTest, PrintsCanonically) {
  EXPECT_EQ(ParseIpAddress("0x7f.1")->ToString(), "127.0.0.1");
  EXPECT_EQ(ParseIpAddress("[0:0::1]")->ToString(), "::1");
  EXPECT_EQ(ParseIpAddress("::FFFF:7f00:1")->ToString(), "::ffff:127.0.0.1");
  EXPECT_EQ(ParseIpAddress("2001:DB8:0:0::1")->ToString(), "2001:db8::1");
}

// Our IPv4 parser must take exactly what the C library's inet_aton takes, with the same value: otherwise some
// spelling reaches the resolver unjudged. Random strings over the alphabet of those spellings.
TEST(AddressTest, AgreesWithInetAton) {
  const std::string alphabet = "0123456789.xXabcdefABCDEFg";
  std::mt19937 rng(20240601);
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string s;
    size_t len = 1 + rng() % 14;
    for (size_t j = 0; j < len; ++j) {
      // Digits and dots most of the time, so that many strings are addresses.
      s += (rng() % 3 != 0) ? "0123456789.."[rng() % 12] : alphabet[rng() % alphabet.size()];
    }
    in_addr ref{};
    bool ref_ok = inet_aton(s.c_str(), &ref) != 0;
    auto ours = ParseIpAddress(s);
    ASSERT_EQ(ours.ok(), ref_ok) << "'" << s << "'";
    if (ref_ok) {
      ++accepted;
      char buf[INET_ADDRSTRLEN];
      EXPECT_EQ(ours->ToString(), inet_ntop(AF_INET, &ref, buf, sizeof buf)) << s;
    }
  }
  EXPECT_GT(accepted, 10000);
}

}  // namespace
}  // namespace isb::egress
