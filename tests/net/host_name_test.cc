// Host-name checks: what the proxy takes as a name, and every spelling of an address it refuses as one.
#include "net/host_name.h"

#include <gtest/gtest.h>

namespace isb::net {
namespace {

TEST(HostNameTest, LowercasesValidNames) {
  EXPECT_EQ(*CanonicalHostName("API.Example.com"), "api.example.com");
  EXPECT_EQ(*CanonicalHostName("a"), "a");
  EXPECT_EQ(*CanonicalHostName("a-b_c.d9"), "a-b_c.d9");
  EXPECT_EQ(*CanonicalHostName("1password.com"), "1password.com");
}

TEST(HostNameTest, RefusesWithExactReasons) {
  for (const auto& [name, reason] : std::vector<std::pair<std::string, std::string>>{
           {"", "host name is empty"},
           {std::string("a\0b", 3), "host name contains a NUL byte"},
           {std::string(254, 'a'), "host name is longer than 253 bytes"},
           {std::string(64, 'a'), "host name has a label longer than 63 bytes"},
           {".a", "host name has an empty label"},
           {"a.", "host name has an empty label"},
           {"a-.b", "host name has a label starting or ending with '-'"},
           {"a:80", "host name contains a byte other than a letter, digit, '-', '_' or '.'"},
           {"a\tb", "host name contains a byte other than a letter, digit, '-', '_' or '.'"},
           {"a\xff", "host name contains a byte other than a letter, digit, '-', '_' or '.'"}}) {
    auto r = CanonicalHostName(name);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().code, Code::kInvalidArgument);
    EXPECT_EQ(r.error().message, reason);
  }
}

TEST(HostNameTest, EverySpellingOfAnAddressIsALiteral) {
  for (const char* literal :
       {"127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f000001", "0x7f.1", "0177.0.0.1", "017700000001", "0",
        "1.2.3.4", "::1", "::ffff:127.0.0.1", "fe80::1", "2001:db8::", "example.123", "a.b.0"}) {
    EXPECT_TRUE(IsAddressLiteral(literal)) << literal;
    auto r = CanonicalHostName(literal);
    ASSERT_FALSE(r.ok()) << literal;
    if (std::string_view(literal).find(':') == std::string_view::npos) {
      EXPECT_EQ(r.error().message, "host name is an IP address literal") << literal;
    }
  }
  for (const char* name : {"example.com", "0x7f.example", "1.2.3.4.example", "123.a", "", "a.", "x0"}) {
    EXPECT_FALSE(IsAddressLiteral(name)) << name;
  }
}

}  // namespace
}  // namespace isb::net
