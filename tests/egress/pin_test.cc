// --egress-pin NAME=IP[:PORT]: every accepted form and every refusal, with its message.
#include "egress/pin.h"

#include <gtest/gtest.h>

namespace isb::egress {
namespace {

TEST(PinTest, ParsesEveryForm) {
  auto a = ParsePin("api.test=10.0.0.5:8443");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->name, "api.test");
  EXPECT_EQ(a->address.ToString(), "10.0.0.5");
  EXPECT_EQ(a->port, 8443);
  auto b = ParsePin("API.Test.=0x7f.1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->name, "api.test");
  EXPECT_EQ(b->address.ToString(), "127.0.0.1");
  EXPECT_EQ(b->port, std::nullopt);
  auto c = ParsePin("v6.test=[fd00::5]:80");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->address.ToString(), "fd00::5");
  EXPECT_EQ(c->port, 80);
  auto d = ParsePin("v6.test=fd00::5");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->address.ToString(), "fd00::5");
  EXPECT_EQ(d->port, std::nullopt);
  auto e = ParsePin("v6.test=[::1]");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->address.ToString(), "::1");
  EXPECT_EQ(ParsePin("public.test=8.8.8.8")->address.ToString(), "8.8.8.8");
}

TEST(PinTest, RefusesWithTheReason) {
  const std::string tail = " (expected NAME=IP[:PORT], e.g. api.test=10.0.0.5:8443)";
  struct Bad {
    const char* text;
    std::string message;
  };
  const Bad bads[] = {
      {"api.test", "egress pin 'api.test': no '='"},
      {"=10.0.0.5", "egress pin '=10.0.0.5': the name is empty"},
      {"a b=10.0.0.5", "egress pin 'a b=10.0.0.5': the name contains ' '"},
      {"10.0.0.4=10.0.0.5", "egress pin '10.0.0.4=10.0.0.5': the name is an IP address, not a name"},
      {"api.test=", "egress pin 'api.test=': '' is not an IP address"},
      {"api.test=db.internal", "egress pin 'api.test=db.internal': 'db.internal' is not an IP address"},
      {"api.test=10.0.0.5:0", "egress pin 'api.test=10.0.0.5:0': the port must be a number from 1 to 65535"},
      {"api.test=10.0.0.5:65536", "egress pin 'api.test=10.0.0.5:65536': the port must be a number from 1 to 65535"},
      {"api.test=10.0.0.5:", "egress pin 'api.test=10.0.0.5:': the port must be a number from 1 to 65535"},
      {"api.test=[fd00::5", "egress pin 'api.test=[fd00::5': unbalanced brackets around the address"},
      {"api.test=[10.0.0.5]:80",
       "egress pin 'api.test=[10.0.0.5]:80': '[10.0.0.5]' is not an IP address: brackets hold only an IPv6 address"},
      {"api.test=fe80::1%eth0",
       "egress pin 'api.test=fe80::1%eth0': 'fe80::1%eth0' is not an IP address: IPv6 zone ids are refused"},
      {"api.test=0.0.0.0", "egress pin 'api.test=0.0.0.0': an address in unspecified (0.0.0.0) cannot be dialled"},
      {"api.test=[::]:80", "egress pin 'api.test=[::]:80': an address in unspecified (::) cannot be dialled"},
      {"api.test=224.0.0.1",
       "egress pin 'api.test=224.0.0.1': an address in multicast (224.0.0.0/4) cannot be dialled"},
      {"api.test=255.255.255.255",
       "egress pin 'api.test=255.255.255.255': an address in broadcast (255.255.255.255) cannot be dialled"},
  };
  for (const Bad& b : bads) {
    auto r = ParsePin(b.text);
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_EQ(r.error().message, b.message + tail);
    EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  }
}

}  // namespace
}  // namespace isb::egress
