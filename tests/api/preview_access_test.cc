// Preview links and sessions: once, for 60 s, for that preview; sessions end with the port, the sandbox or the
// viewer's membership.
#include "api/preview_access.h"

#include <gtest/gtest.h>

namespace isb::api {
namespace {

constexpr char kId[] = "sb-0123456789abcdef";

struct Clocked {
  int64_t now = 1'000'000;
  bool allowed = true;
  int ended = 0;
  PreviewAccess access{
      PreviewAccessOptions{.url_port = 8092,
                           .still_allowed = [this](const Identity&, const std::string&) { return allowed; },
                           .on_ended = [this] { ++ended; },
                           .now_ms = [this] { return now; }}};
};

std::string TokenOf(const PreviewLink& link) { return link.url.substr(link.url.rfind('/') + 1); }

const PreviewHost kHost{8080, kId, "acme"};

TEST(PreviewAccessTest, ALinkNamesThePreviewHostAndIsGoodOnce) {
  Clocked c;
  auto link = c.access.Open(kHost, Identity::Host());
  ASSERT_TRUE(link.ok());
  EXPECT_EQ(link->url.rfind("http://8080-sb-0123456789abcdef-acme.localhost:8092/.isb-preview/", 0), 0u) << link->url;
  EXPECT_EQ(TokenOf(*link).size(), 64u);
  EXPECT_EQ(link->expires_at_ms, c.now + 60'000);
  auto spent = c.access.Spend(TokenOf(*link), kHost);
  ASSERT_TRUE(spent.ok());
  EXPECT_EQ(spent->cookie.size(), 64u);
  EXPECT_EQ(spent->max_age, std::chrono::hours(8));
  auto again = c.access.Spend(TokenOf(*link), kHost);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, Code::kForbidden);
  EXPECT_EQ(again.error().message,
            "this preview link was used already: a link opens its preview once; ask isb for a "
            "new one (sandbox_port_open)");
  EXPECT_TRUE(c.access.Check(spent->cookie, kHost).ok());
}

// Behind a front that terminates TLS (--preview-domain https://DOMAIN[:PORT]): the link names its scheme and port,
// and the cookie is to be Secure.
TEST(PreviewAccessTest, AFrontedLinkNamesTheFrontsSchemeAndPort) {
  PreviewAccessOptions fronted;
  fronted.domain = "previews.example.net";
  fronted.url_scheme = "https";
  PreviewAccess https(fronted);
  auto link = https.Open(kHost, Identity::Host());
  ASSERT_TRUE(link.ok());
  EXPECT_EQ(link->url, "https://8080-sb-0123456789abcdef-acme.previews.example.net/.isb-preview/" + TokenOf(*link));
  EXPECT_TRUE(https.secure());
  fronted.url_port = 8443;
  PreviewAccess port(fronted);
  link = port.Open(kHost, Identity::Host());
  ASSERT_TRUE(link.ok());
  EXPECT_EQ(link->url,
            "https://8080-sb-0123456789abcdef-acme.previews.example.net:8443/.isb-preview/" + TokenOf(*link));
  EXPECT_FALSE(PreviewAccess(PreviewAccessOptions{}).secure());
}

TEST(PreviewAccessTest, AnExpiredLinkIsRefused) {
  Clocked c;
  auto link = c.access.Open(kHost, Identity::Host());
  ASSERT_TRUE(link.ok());
  c.now += 60'000;
  auto spent = c.access.Spend(TokenOf(*link), kHost);
  ASSERT_FALSE(spent.ok());
  EXPECT_EQ(spent.error().message,
            "this preview link has expired (a link is good for 60 s): ask isb for a new one (sandbox_port_open)");
}

TEST(PreviewAccessTest, ALinkSpentAtAnotherPreviewIsRefusedAndUsedUp) {
  Clocked c;
  auto link = c.access.Open(kHost, Identity::Host());
  ASSERT_TRUE(link.ok());
  auto wrong = c.access.Spend(TokenOf(*link), PreviewHost{8081, kId, "acme"});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message, "this preview link is for another preview: open it at the address isb gave");
  EXPECT_FALSE(c.access.Spend(TokenOf(*link), kHost).ok());
  auto unknown = c.access.Spend(std::string(64, 'a'), kHost);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "this preview link is not valid: ask isb for a new one (sandbox_port_open)");
}

TEST(PreviewAccessTest, ASessionIsThatPreviewsAloneAndEndsAfterEightHours) {
  Clocked c;
  auto link = c.access.Open(kHost, Identity::Host());
  auto spent = c.access.Spend(TokenOf(*link), kHost);
  ASSERT_TRUE(spent.ok());
  auto other = c.access.Check(spent->cookie, PreviewHost{8080, kId, "other"});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().message,
            "no preview session here: open this preview with a link from isb (sandbox_port_open)");
  c.now += 8 * 3600 * 1000 - 1;
  EXPECT_TRUE(c.access.Check(spent->cookie, kHost).ok());
  c.now += 1;
  EXPECT_FALSE(c.access.Check(spent->cookie, kHost).ok());
}

TEST(PreviewAccessTest, ClosingThePortOrLosingMembershipEndsSessions) {
  Clocked c;
  auto open = [&](uint16_t port) {
    PreviewHost h{port, kId, "acme"};
    return *c.access.Spend(TokenOf(*c.access.Open(h, Identity::Host())), h);
  };
  PreviewSession a = open(8080), b = open(9090);
  auto key_a = c.access.Check(a.cookie, kHost);
  ASSERT_TRUE(key_a.ok());
  EXPECT_EQ(c.access.Close(kId, 8080), 1u);
  EXPECT_EQ(c.ended, 1);
  EXPECT_FALSE(c.access.Alive(*key_a));
  EXPECT_TRUE(c.access.Check(b.cookie, PreviewHost{9090, kId, "acme"}).ok());
  EXPECT_EQ(c.access.Recheck(), 0u);
  c.allowed = false;
  EXPECT_EQ(c.access.Recheck(), 1u);
  EXPECT_EQ(c.ended, 2);
  EXPECT_FALSE(c.access.Check(b.cookie, PreviewHost{9090, kId, "acme"}).ok());
}

}  // namespace
}  // namespace isb::api
