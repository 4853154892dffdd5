// Preview host names: what is a preview's, what is not, and which preview domains are refused.
#include "api/preview_host.h"

#include <gtest/gtest.h>

namespace isb::api {
namespace {

TEST(PreviewHostTest, AHostUnderLocalhostNamesPortSandboxAndOrg) {
  auto h = ParsePreviewHost("8080-sb-0123456789abcdef-my-org.localhost:8092", "localhost");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->port, 8080);
  EXPECT_EQ(h->sandbox, "sb-0123456789abcdef");
  EXPECT_EQ(h->org, "my-org");
  EXPECT_EQ(PreviewHostName(*h, "localhost"), "8080-sb-0123456789abcdef-my-org.localhost");
}

TEST(PreviewHostTest, CaseATrailingDotAndNoPortAreTheSamePreview) {
  auto h = ParsePreviewHost("3000-SB-0123456789ABCDEF-Acme.LocalHost.", "localhost");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(*h, (PreviewHost{3000, "sb-0123456789abcdef", "acme"}));
}

TEST(PreviewHostTest, IsbsOwnHostsAndMalformedLabelsAreNoPreview) {
  for (const char* host : {"localhost", "localhost:8092", "127.0.0.1:8092", "[::1]:8092", "x.localhost",
                           "08080-sb-0123456789abcdef-acme.localhost", "0-sb-0123456789abcdef-acme.localhost",
                           "65536-sb-0123456789abcdef-acme.localhost", "80-sb-0123456789abcdeg-acme.localhost",
                           "80-sb-0123456789abcde-acme.localhost", "80-sb-0123456789abcdef-.localhost",
                           "80-sb-0123456789abcdef-acme.localhost:x", "80-sb-0123456789abcdef-acme.evil.localhost",
                           "80-sb-0123456789abcdef-acme.localhost.evil", "80-sb-0123456789abcdef-a_b.localhost", ""}) {
    EXPECT_FALSE(ParsePreviewHost(host, "localhost").has_value()) << host;
  }
}

TEST(PreviewHostTest, AnAbsoluteFormTargetNamesThePreviewWhateverTheHostField) {
  EXPECT_TRUE(ParsePreviewOfRequest("localhost", "http://80-sb-0123456789abcdef-acme.localhost/x", "localhost"));
  EXPECT_FALSE(
      ParsePreviewOfRequest("80-sb-0123456789abcdef-acme.localhost", "http://localhost/api/v1/x", "localhost"));
  EXPECT_TRUE(ParsePreviewOfRequest("80-sb-0123456789abcdef-acme.localhost", "/api/v1/x", "localhost"));
}

TEST(PreviewHostTest, APreviewDomainMayNotBeIsbsHostNorItsParent) {
  EXPECT_TRUE(CheckPreviewDomain("previews.example.net", {"127.0.0.1", "isb.example.com"}).ok());
  Status parent = CheckPreviewDomain("example.com", {"127.0.0.1", "isb.example.com"});
  ASSERT_FALSE(parent.ok());
  EXPECT_EQ(parent.error().code, Code::kInvalidArgument);
  EXPECT_EQ(parent.error().message,
            "--preview-domain: example.com is a parent of isb's own host name isb.example.com: a preview could set "
            "cookies for isb there; use a domain of its own (best: a registrable domain that is not isb's)");
  Status same = CheckPreviewDomain("isb.example.com", {"ISB.example.com."});
  ASSERT_FALSE(same.ok());
  EXPECT_EQ(same.error().message,
            "--preview-domain: isb.example.com is isb's own host name isb.example.com: a preview could set cookies "
            "for isb there; use a domain of its own (best: a registrable domain that is not isb's)");
  EXPECT_TRUE(CheckPreviewDomain("ample.com", {"isb.example.com"}).ok());
  // Under the same registrable domain as isb (a sibling or a child), a preview's script could set a cookie for it.
  Status sibling = CheckPreviewDomain("previews.example.com", {"127.0.0.1", "isb.example.com"});
  ASSERT_FALSE(sibling.ok());
  EXPECT_EQ(sibling.error().message,
            "--preview-domain: previews.example.com is in the same registrable domain (example.com) as isb's own "
            "host name isb.example.com: a preview could set cookies for isb there; use a registrable domain that is "
            "not isb's");
  Status child = CheckPreviewDomain("p.isb.example.co.uk", {"isb.example.co.uk"});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().message,
            "--preview-domain: p.isb.example.co.uk is in the same registrable domain (example.co.uk) as isb's own "
            "host name isb.example.co.uk: a preview could set cookies for isb there; use a registrable domain that "
            "is not isb's");
  EXPECT_TRUE(CheckPreviewDomain("previews.example.co.uk", {"isb.other.co.uk"}).ok());
  for (const char* suffix : {"github.io", "dev", "co.uk"}) {
    Status open = CheckPreviewDomain(suffix, {"isb.example.com"});
    ASSERT_FALSE(open.ok()) << suffix;
    EXPECT_EQ(open.error().message, "--preview-domain: " + std::string(suffix) +
                                        " is a public suffix, under which anyone may register names; use a domain "
                                        "of your own");
  }
  Status bad = CheckPreviewDomain("Previews..net", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "--preview-domain: 'Previews..net' is not a DNS name of lower-case labels (a-z, 0-9, '-'), such as "
            "previews.example.net");
}

TEST(PreviewHostTest, ThePreviewDomainFlagTakesADomainOrASchemeDomainAndPort) {
  auto plain = ParsePreviewBase("previews.example.net");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->domain, "previews.example.net");
  EXPECT_EQ(plain->scheme, "http");
  EXPECT_FALSE(plain->fronted);
  auto https = ParsePreviewBase("https://previews.example.net/");
  ASSERT_TRUE(https.ok());
  EXPECT_EQ(https->domain, "previews.example.net");
  EXPECT_EQ(https->scheme, "https");
  EXPECT_EQ(https->port, 0);
  EXPECT_TRUE(https->fronted);
  auto port = ParsePreviewBase("https://previews.example.net:8443");
  ASSERT_TRUE(port.ok());
  EXPECT_EQ(port->port, 8443);
  auto usual = ParsePreviewBase("https://previews.example.net:443");
  ASSERT_TRUE(usual.ok());
  EXPECT_EQ(usual->port, 0) << "the scheme's own port is not written";
  auto upper = ParsePreviewBase("HTTPS://previews.example.net");
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(upper->scheme, "https") << "a scheme is read whatever its case";
  auto http = ParsePreviewBase("http://previews.example.net:8080");
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(http->scheme, "http");
  EXPECT_EQ(http->port, 8080);
  EXPECT_TRUE(http->fronted);
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"ftp://previews.example.net", "': the scheme is https or http (https://DOMAIN[:PORT])"},
      {"https://previews.example.net/app", "' has more than a scheme, a domain and a port"},
      {"https://me@previews.example.net", "' has more than a scheme, a domain and a port"},
      {"https://previews.example.net?x", "' has more than a scheme, a domain and a port"},
      {"previews.example.net:8443",
       "': a port goes with a scheme (https://DOMAIN:PORT); without one, links name isb's own port"},
      {"https://previews.example.net:0", "': the port is a number from 1 to 65535"},
      {"https://previews.example.net:65536", "': the port is a number from 1 to 65535"},
      {"https://previews.example.net:", "': the port is a number from 1 to 65535"},
      {"https://[2001:db8::1]:8443", "': previews are served under a DNS name, not an address"}};
  for (const auto& [value, why] : refused) {
    auto r = ParsePreviewBase(value);
    ASSERT_FALSE(r.ok()) << value;
    EXPECT_EQ(r.error().code, Code::kInvalidArgument);
    EXPECT_EQ(r.error().message, "--preview-domain: '" + value + why);
  }
}

TEST(PreviewHostTest, AFieldScanReadsNoLineAsARequestLineAndStopsAtTheHeadsEnd) {
  EXPECT_EQ(ScanHostField("X http://isb.example/ y\r\nhost:  a.localhost \r\nHost: b\r\n\r\n"), "a.localhost");
  EXPECT_EQ(ScanHostField("Host: a\r\n"), "a");
  EXPECT_EQ(ScanHostField("X: y\r\n\r\nHost: after.localhost\r\n\r\n"), "");
  const RequestNames names = ScanRequestNames("GET /x HTTP/1.1\r\nX http://isb.example/ y\r\nHost: a\r\n\r\n");
  EXPECT_EQ(names.target, "/x");
  EXPECT_EQ(names.host, "a");
}

}  // namespace
}  // namespace isb::api
