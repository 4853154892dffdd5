// The daemon's fetch of OAuth client metadata documents: what it refuses before a byte is sent (addresses that are
// not public, unless allowed), and the flags it is made from. The fetch of a real document over TLS is in the e2e
// suite (McpOAuthDocumentTest), against the SDK's client and a server of the test's own.
#include "daemon/client_documents.h"

#include <gtest/gtest.h>

namespace isb::daemon {
namespace {

constexpr char kAllowHint[] =
    "; a client published on a private or loopback address is read when allowed (isb serve --oauth-client-allow "
    "HOST[:PORT])";

TEST(ClientDocumentsTest, ALoopbackOrPrivateClientIdIsRefusedUnlessAllowed) {
  auto fetch = MakeClientDocumentFetch({});
  ASSERT_TRUE(fetch.ok()) << fetch.error().message;
  auto loopback = (*fetch)("https://127.0.0.1:1/c.json");
  ASSERT_FALSE(loopback.ok());
  EXPECT_EQ(loopback.error().code, Code::kForbidden);
  EXPECT_EQ(loopback.error().message,
            std::string("host 127.0.0.1:1: isb refused '127.0.0.1': loopback (127.0.0.0/8)") + kAllowHint);
  auto metadata = (*fetch)("https://169.254.169.254/latest/meta-data");
  ASSERT_FALSE(metadata.ok());
  EXPECT_EQ(metadata.error().message,
            std::string("host 169.254.169.254:443: isb refused '169.254.169.254': link-local (169.254.0.0/16), the "
                        "cloud metadata service") +
                kAllowHint);

  ClientDocumentSettings named;
  named.resolver = [](const std::string&) -> Result<std::vector<egress::IpAddress>> {
    return std::vector<egress::IpAddress>{egress::IpAddress::V4(0x0a000005)};  // 10.0.0.5
  };
  auto private_fetch = MakeClientDocumentFetch(named);
  ASSERT_TRUE(private_fetch.ok());
  auto resolved = (*private_fetch)("https://clients.internal.test/c.json");
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.error().message, std::string("host clients.internal.test:443: isb refused "
                                                  "'clients.internal.test': it resolves to private (10.0.0.0/8)") +
                                          kAllowHint);
}

TEST(ClientDocumentsTest, AnAllowedHostIsDialledWhereverItIs) {
  // Port 1 on loopback: allowed, so dialled, and nothing listens there.
  auto fetch = MakeClientDocumentFetch({.allow = {"127.0.0.1:1"}});
  ASSERT_TRUE(fetch.ok()) << fetch.error().message;
  auto r = (*fetch)("https://127.0.0.1:1/c.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kUnavailable);
  EXPECT_TRUE(r.error().message.starts_with("host 127.0.0.1:1: ")) << r.error().message;
  EXPECT_NE(r.error().message.find("refused"), std::string::npos) << r.error().message;
  // Another port of the same host is not allowed.
  EXPECT_EQ((*fetch)("https://127.0.0.1:2/c.json").error().code, Code::kForbidden);
}

TEST(ClientDocumentsTest, BadFlagsAreNamed) {
  EXPECT_EQ(MakeClientDocumentFetch({.allow = {"clients:99999"}}).error().message,
            "--oauth-client-allow: host 'clients:99999' has an invalid port (expected HOST or HOST:PORT)");
  auto ca = MakeClientDocumentFetch({.ca_file = "/nonexistent/ca.pem"});
  ASSERT_FALSE(ca.ok());
  EXPECT_EQ(ca.error().code, Code::kInvalidArgument);
  EXPECT_TRUE(ca.error().message.starts_with("--oauth-client-ca: ")) << ca.error().message;
}

}  // namespace
}  // namespace isb::daemon
