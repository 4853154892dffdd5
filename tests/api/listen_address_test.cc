// Listen addresses: loopback and tailnet pass, everything else is refused with advice.
#include "api/listen_address.h"

#include <gtest/gtest.h>

namespace isb::api {
namespace {

TEST(ListenAddressTest, AllowsLoopbackAndTailnet) {
  for (const char* ok : {"127.0.0.1", "127.1.2.3", "::1", "100.64.0.1", "100.127.255.254", "fd7a:115c:a1e0::1",
                         "fd7a:115c:a1e0:ab12::5", "::ffff:127.0.0.1", "localhost"}) {
    EXPECT_TRUE(CheckListenAddress(ok).ok()) << ok;
  }
}

TEST(ListenAddressTest, RefusesEverythingElse) {
  for (const char* bad : {"0.0.0.0", "::", "192.168.1.10", "100.128.0.1", "100.63.255.255", "10.0.0.1",
                          "fd7a:115c:a1e1::1", "2001:db8::1", "::ffff:10.0.0.1", "example.com", ""}) {
    Status s = CheckListenAddress(bad);
    EXPECT_FALSE(s.ok()) << bad;
  }
  Status s = CheckListenAddress("0.0.0.0");
  EXPECT_NE(s.error().message.find("tunnel"), std::string::npos);
  EXPECT_NE(s.error().message.find("reverse proxy"), std::string::npos);
}

TEST(ListenAddressTest, Parses) {
  auto a = ParseListenAddress("127.0.0.1:8092");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8092);
  auto b = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(ParseListenAddress("localhost:1")->host, "127.0.0.1");
  for (const char* bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:99999", "::1:80", "[::1]", "[::1]80", ":x"}) {
    EXPECT_FALSE(ParseListenAddress(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace isb::api
