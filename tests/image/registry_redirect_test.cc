// The registry client's bearer-token dance and redirects against a scripted registry on loopback (plain http,
// allowed for the test's host and port): what a registry like Docker Hub asks of a client, byte for byte.
#include <gtest/gtest.h>

#include <atomic>

#include "egress/fake_chat_server.h"
#include "image/registry_client.h"

namespace isb::image {
namespace {

const std::string kManifest = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
                              R"("config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:)" +
                              std::string(64, 'c') + R"(","size":2},"layers":[]})";
const std::string kBlob = "the layer's bytes, in chunks";

std::string Path(const isb::testing::ChatRequest& r) {
  size_t sp = r.head.find(' ');
  return r.head.substr(sp + 1, r.head.find(' ', sp + 1) - sp - 1);
}

std::string Header(const isb::testing::ChatRequest& r, const std::string& name) {
  size_t at = r.head.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  size_t start = at + name.size() + 4;
  return r.head.substr(start, r.head.find("\r\n", start) - start);
}

std::string Reply(const std::string& status_line, const std::string& headers, const std::string& body) {
  return "HTTP/1.1 " + status_line + "\r\n" + headers + "Content-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// Chunked, in three pieces.
std::string ChunkedReply(const std::string& body) {
  std::string out = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  for (size_t i = 0; i < body.size(); i += 10) {
    std::string piece = body.substr(i, 10);
    char size[16];
    std::snprintf(size, sizeof size, "%zx", piece.size());
    out += std::string(size) + "\r\n" + piece + "\r\n";
  }
  return out + "0\r\n\r\n";
}

class ScriptedRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.emplace([this](const isb::testing::ChatRequest& r) { return Answer(r); });
    host_ = "127.0.0.1:" + std::to_string(server_->port());
    Result<egress::Dialer> dialer = egress::Dialer::Create({});
    ASSERT_TRUE(dialer.ok());
    dialer_.emplace(std::move(*dialer));
  }

  std::optional<std::string> Answer(const isb::testing::ChatRequest& r) {
    std::string path = Path(r);
    std::string auth = Header(r, "Authorization");
    std::string port = std::to_string(server_->port());
    if (path.starts_with("/token")) {
      if (auth != BasicAuthorization({"alice", "s3cret"})) return Reply("401 Unauthorized", "", "");
      return Reply("200 OK", "Content-Type: application/json\r\n",
                   R"({"token":")" + Token() + R"(","expires_in":300})");
    }
    if (path.starts_with("/storage/")) return ChunkedReply(kBlob);
    if (auth != "Bearer " + Token()) {
      return Reply("401 Unauthorized",
                   "WWW-Authenticate: Bearer realm=\"http://" + host_ +
                       "/token\",service=\"scripted\",scope=\"repository:team/app:pull\"\r\n",
                   "");
    }
    if (path.starts_with("/v2/team/app/manifests/sha256:"))  // whatever digest is asked for, these bytes
      return Reply("200 OK", "Content-Type: application/vnd.oci.image.manifest.v1+json\r\n", kManifest);
    if (path == "/v2/team/app/manifests/huge")
      return Reply("200 OK", "Content-Type: application/vnd.oci.image.manifest.v1+json\r\n",
                   std::string(kMaxManifestBytes + 1, ' '));
    if (path == "/v2/team/app/manifests/1.0")
      return Reply("200 OK", "Content-Type: application/vnd.oci.image.manifest.v1+json\r\n", kManifest);
    if (path == "/v2/team/app/blobs/" + DigestOf(kBlob).str())
      return Reply("307 Temporary Redirect", "Location: http://localhost:" + port + "/storage/x?sig=1\r\n", "");
    if (path.starts_with("/v2/team/app/blobs/") || path.starts_with("/loop"))
      return Reply("302 Found", "Location: /loop\r\n", "");
    return Reply("404 Not Found", "", "");
  }

  std::unique_ptr<RegistryClient> Client(std::optional<RegistryCredentials> credentials = RegistryCredentials{
                                             "alice", "s3cret"}) {
    RegistryClientOptions o;
    o.transport.dialer = &*dialer_;
    o.transport.allowed_private = {*ParseHostRule(host_),
                                   *ParseHostRule("localhost:" + std::to_string(server_->port()))};
    o.transport.plain_http = o.transport.allowed_private;
    o.credentials = std::move(credentials);
    Result<std::unique_ptr<RegistryClient>> c = RegistryClient::Create(host_, std::move(o));
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }

  // A blob fetch from a registry that redirects every request to `location`.
  Status FetchRedirectedTo(const std::string& location) {
    isb::testing::FakeChatServer redirecting([&](const isb::testing::ChatRequest&) {
      return Reply("307 Temporary Redirect", "Location: " + location + "\r\n", "");
    });
    std::string host = "127.0.0.1:" + std::to_string(redirecting.port());
    RegistryClientOptions o;
    o.transport.dialer = &*dialer_;
    o.transport.trust = *egress::TlsTrust::Create("");
    o.transport.allowed_private = {*ParseHostRule(host)};
    o.transport.plain_http = o.transport.allowed_private;
    Result<std::unique_ptr<RegistryClient>> client = RegistryClient::Create(host, std::move(o));
    EXPECT_TRUE(client.ok());
    Descriptor blob{std::string(media::kOciLayer), DigestOf("x"), 1, std::nullopt};
    return (*client)->FetchBlob(
        "team/app", blob, [](std::string_view) { return Status(); }, "layer");
  }

  // The token the registry hands out and accepts: tok-1 until revoked, then tok-2.
  std::string Token() const { return revoked_ ? "tok-2" : "tok-1"; }

  size_t Requests(const std::string& prefix) const {
    size_t n = 0;
    for (const isb::testing::ChatRequest& r : server_->requests()) n += Path(r).starts_with(prefix);
    return n;
  }

  std::atomic<bool> revoked_{false};
  std::optional<isb::testing::FakeChatServer> server_;
  std::optional<egress::Dialer> dialer_;
  std::string host_;
};

TEST_F(ScriptedRegistryTest, ABearerChallengeIsAnsweredWithATokenFetchedOnceWithTheCredentials) {
  std::unique_ptr<RegistryClient> client = Client();
  ImageReference ref = *ParseImageReference(host_ + "/team/app:1.0");
  Result<FetchedManifest> m = client->FetchManifest(ref);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->bytes, kManifest);
  EXPECT_EQ(m->media_type, media::kOciManifest);
  std::vector<isb::testing::ChatRequest> seen = server_->requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(Path(seen[0]), "/v2/team/app/manifests/1.0");
  EXPECT_EQ(Header(seen[0], "Authorization"), "");
  EXPECT_EQ(Header(seen[0], "Accept"), ManifestAccept());
  EXPECT_EQ(Path(seen[1]), "/token?service=scripted&scope=repository%3Ateam%2Fapp%3Apull");
  EXPECT_EQ(Header(seen[1], "Authorization"), "Basic YWxpY2U6czNjcmV0");
  EXPECT_EQ(Header(seen[2], "Authorization"), "Bearer tok-1");

  // The token is cached for the repository: the next fetch sends it at once.
  ASSERT_TRUE(client->FetchManifest(ref).ok());
  EXPECT_EQ(Requests("/token"), 1u);
  EXPECT_EQ(server_->request_count(), 4u);
}

TEST_F(ScriptedRegistryTest, ACachedTokenTheRegistryRefusesIsDroppedAndAFreshOneFetched) {
  std::unique_ptr<RegistryClient> client = Client();
  ImageReference ref = *ParseImageReference(host_ + "/team/app:1.0");
  ASSERT_TRUE(client->FetchManifest(ref).ok());
  revoked_ = true;  // the registry no longer takes tok-1, though it has not expired
  Result<FetchedManifest> m = client->FetchManifest(ref);
  ASSERT_TRUE(m.ok()) << m.error().message;
  std::vector<isb::testing::ChatRequest> seen = server_->requests();
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(Header(seen[3], "Authorization"), "Bearer tok-1");
  EXPECT_TRUE(Path(seen[4]).starts_with("/token?")) << Path(seen[4]);
  EXPECT_EQ(Header(seen[5], "Authorization"), "Bearer tok-2");
  // And tok-2 is what the cache holds now.
  ASSERT_TRUE(client->FetchManifest(ref).ok());
  EXPECT_EQ(Requests("/token"), 2u);
  EXPECT_EQ(server_->request_count(), 7u);
}

TEST_F(ScriptedRegistryTest, AManifestFetchedByDigestMustBeThoseBytes) {
  std::unique_ptr<RegistryClient> client = Client();
  std::string asked = DigestOf("another manifest").str();
  Result<FetchedManifest> m = client->FetchManifest(*ParseImageReference(host_ + "/team/app@" + asked));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, Code::kInvalidArgument);
  EXPECT_EQ(m.error().message, "registry " + host_ + ": manifest team/app@" + asked + ": digest mismatch (got " +
                                   DigestOf(kManifest).str() + ")");
  Result<FetchedManifest> right =
      client->FetchManifest(*ParseImageReference(host_ + "/team/app@" + DigestOf(kManifest).str()));
  ASSERT_TRUE(right.ok()) << right.error().message;
  EXPECT_EQ(right->bytes, kManifest);
}

TEST_F(ScriptedRegistryTest, AManifestOverFourMebibytesIsRefusedWhileItStreams) {
  Result<FetchedManifest> m = Client()->FetchManifest(*ParseImageReference(host_ + "/team/app:huge"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, Code::kTooLarge);
  EXPECT_EQ(m.error().message, "registry " + host_ + ": response body over 4194304 bytes");
}

TEST_F(ScriptedRegistryTest, ATokenEndpointRefusingTheCredentialsIsUnauthenticatedNamingTheUserOnly) {
  Result<FetchedManifest> m =
      Client(RegistryCredentials{"alice", "not-it-93"})->FetchManifest(*ParseImageReference(host_ + "/team/app:1.0"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, Code::kUnauthenticated);
  EXPECT_EQ(m.error().message, "registry " + host_ + "'s token endpoint " + host_ +
                                   " refused the credentials of user 'alice' for repository:team/app:pull (HTTP 401)");
}

TEST_F(ScriptedRegistryTest, ABlobRedirectedToStorageIsFollowedWithoutTheCredentialsAndVerified) {
  std::unique_ptr<RegistryClient> client = Client();
  Descriptor blob{std::string(media::kOciLayer), DigestOf(kBlob), kBlob.size(), std::nullopt};
  std::string got;
  Status s = client->FetchBlob(
      "team/app", blob,
      [&](std::string_view piece) {
        got.append(piece);
        return Status();
      },
      "layer");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(got, kBlob);
  std::vector<isb::testing::ChatRequest> seen = server_->requests();
  ASSERT_EQ(seen.size(), 4u);  // challenge, token, blob (redirected), storage
  EXPECT_EQ(Path(seen[3]), "/storage/x?sig=1");
  EXPECT_EQ(Header(seen[3], "Host"), "localhost:" + std::to_string(server_->port()));
  EXPECT_EQ(Header(seen[3], "Authorization"), "");
}

TEST_F(ScriptedRegistryTest, MoreThanThreeRedirectsAreRefused) {
  Descriptor blob{std::string(media::kOciLayer), DigestOf("other"), 5, std::nullopt};
  Status s = Client()->FetchBlob(
      "team/app", blob, [](std::string_view) { return Status(); }, "layer");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Code::kUnavailable);
  EXPECT_EQ(s.error().message,
            "registry " + host_ + ": more than 3 redirects for /v2/team/app/blobs/" + DigestOf("other").str());
  EXPECT_EQ(Requests("/loop"), 3u);
}

TEST_F(ScriptedRegistryTest, ARedirectToAPrivateAddressGoesThroughTheDialerAndIsRefused) {
  Status s = FetchRedirectedTo("https://10.1.2.3/storage/x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Code::kForbidden);
  EXPECT_EQ(s.error().message, "registry 10.1.2.3:443: " + dialer_->Resolve("10.1.2.3", 443).error().message +
                                   std::string(kRegistryAllowHint));
}

TEST_F(ScriptedRegistryTest, ARedirectToPlainHttpOfAnotherHostIsRefused) {
  Status s = FetchRedirectedTo("http://storage.example/blob");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Code::kForbidden);
  EXPECT_EQ(s.error().message,
            "registry storage.example:80: plain http is refused; use https, or allow plain http for this host");
}

}  // namespace
}  // namespace isb::image
