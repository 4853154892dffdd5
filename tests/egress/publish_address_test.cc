// Where a port may be published: never where a browser reaches isb, in any spelling of those addresses.
#include "egress/publish_address.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace isb::egress {
namespace {

TEST(PublishAddressTest, NoPortIsPublishedWhereABrowserReachesIsb) {
  const std::string why =
      ": a browser signed in to isb there sends its session cookie to every port of that host, and the sandbox's "
      "server would receive it; publish on another address, such as 127.0.0.2 (the default)";
  const std::pair<const char*, std::string> refused[] = {
      {"127.0.0.1", "publishing on 127.0.0.1: that is where \"localhost\" leads"},
      {"::1", "publishing on ::1: that is where \"localhost\" leads"},
      {"::ffff:127.0.0.1", "publishing on 127.0.0.1: that is where \"localhost\" leads"},
      {"0x7f000001", "publishing on 127.0.0.1: that is where \"localhost\" leads"},
      {"0.0.0.0", "publishing on 0.0.0.0 listens on every address of the host, isb's own among them"},
      {"::", "publishing on :: listens on every address of the host, isb's own among them"},
      {"100.64.1.2", "publishing on 100.64.1.2: isb listens there"},
      {"::ffff:100.64.1.2", "publishing on 100.64.1.2: isb listens there"},
  };
  for (const auto& [address, message] : refused) {
    Status st = CheckPublishApartFromIsb(address, "100.64.1.2");
    ASSERT_FALSE(st.ok()) << address;
    EXPECT_EQ(st.error().code, Code::kForbidden) << address;
    EXPECT_EQ(st.error().message, message + why) << address;
  }
  for (const char* address : {"127.0.0.2", "127.0.0.3", "::2", "100.64.1.3"})
    EXPECT_TRUE(CheckPublishApartFromIsb(address, "100.64.1.2").ok()) << address;
  Status bad = CheckPublishApartFromIsb("localhost", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Code::kInvalidArgument);
  EXPECT_EQ(bad.error().message, "publish address 'localhost' is not an IP address");
}

}  // namespace
}  // namespace isb::egress
