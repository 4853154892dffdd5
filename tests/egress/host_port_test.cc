// Host name normalization, ports, host[:port] splitting and the quoting of untrusted text in messages.
#include "egress/host_port.h"

#include <gtest/gtest.h>

namespace isb::egress {
namespace {

TEST(HostPortTest, NormalizesNames) {
  EXPECT_EQ(*NormalizeHostName("Example.COM"), "example.com");
  EXPECT_EQ(*NormalizeHostName("example.com."), "example.com");
  EXPECT_EQ(*NormalizeHostName("xn--bcher-kva.example"), "xn--bcher-kva.example");
  EXPECT_EQ(*NormalizeHostName("_dmarc.a-b.example"), "_dmarc.a-b.example");
  EXPECT_EQ(*NormalizeHostName("localhost"), "localhost");
  EXPECT_EQ(*NormalizeHostName("1.2.3.example"), "1.2.3.example");
  EXPECT_EQ(*NormalizeHostName(std::string(63, 'a') + ".example"), std::string(63, 'a') + ".example");
}

TEST(HostPortTest, RefusesWhatIsNotAName) {
  struct Bad {
    std::string text;
    const char* reason;
  };
  const Bad bads[] = {
      {"", "is empty"},
      {".", "is empty"},
      {"a..b", "has an empty label"},
      {".a", "has an empty label"},
      {"a.b..", "has an empty label"},
      {std::string(64, 'a') + ".example", "has a label longer than 63 characters"},
      {std::string(250, 'a') + ".com", "is longer than 253 characters"},
      {"-a.example", "has a label that starts or ends with '-' ('-a')"},
      {"a-.example", "has a label that starts or ends with '-' ('a-')"},
      {"bücher.example", "is not ASCII; write an international name in its punycode (xn--) form"},
      {"a b.example", "contains ' '"},
      {"a\nb.example", "contains '\\x0a'"},
      {"a/b", "contains '/'"},
      {"a:b", "contains ':'"},
      {"a%b", "contains '%'"},
      {"*.example.com", "contains '*'"},
      {"127.0.0.1", "is an IP address, not a name"},
      {"0x7f.1", "is an IP address, not a name"},
      {"2130706433", "is an IP address, not a name"},
      {"999.999.999.999", "ends in an all-numeric label, which resolvers may read as an address"},
      {"example.123", "ends in an all-numeric label, which resolvers may read as an address"},
  };
  for (const Bad& b : bads) {
    auto r = NormalizeHostName(b.text);
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_EQ(r.error().message, b.reason) << b.text;
    EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  }
}

TEST(HostPortTest, ParsesPorts) {
  EXPECT_EQ(ParsePort("443"), 443);
  EXPECT_EQ(ParsePort("1"), 1);
  EXPECT_EQ(ParsePort("65535"), 65535);
  EXPECT_EQ(ParsePort("08080"), 8080);
  for (const char* bad : {"", "0", "65536", "99999", "100000", "-1", "+1", "0x10", " 80", "80 ", "4a"}) {
    EXPECT_EQ(ParsePort(bad), std::nullopt) << bad;
  }
}

TEST(HostPortTest, SplitsHostAndPort) {
  auto a = SplitHostPort("example.com:8443");
  EXPECT_EQ(a->host, "example.com");
  EXPECT_EQ(*a->port, "8443");
  EXPECT_FALSE(a->bracketed);
  auto b = SplitHostPort("example.com");
  EXPECT_EQ(b->host, "example.com");
  EXPECT_FALSE(b->port.has_value());
  auto c = SplitHostPort("[fd00::1]:80");
  EXPECT_EQ(c->host, "fd00::1");
  EXPECT_EQ(*c->port, "80");
  EXPECT_TRUE(c->bracketed);
  auto d = SplitHostPort("fd00::1");
  EXPECT_EQ(d->host, "fd00::1");
  EXPECT_FALSE(d->port.has_value());
  auto e = SplitHostPort("host:");
  EXPECT_EQ(*e->port, "");
  EXPECT_FALSE(SplitHostPort("[fd00::1").has_value());
  EXPECT_FALSE(SplitHostPort("[fd00::1]x").has_value());
  EXPECT_FALSE(SplitHostPort("[fd00::1]80").has_value());
}

TEST(HostPortTest, PrintableEscapesAndTruncates) {
  EXPECT_EQ(Printable("a\r\nb\\c\x7f\xff"), "a\\x0d\\x0ab\\x5cc\\x7f\\xff");
  EXPECT_EQ(Printable(std::string(300, 'a')), std::string(200, 'a') + "...");
}

}  // namespace
}  // namespace isb::egress
