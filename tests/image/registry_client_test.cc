// The registry client against a real registry (docker-registry on loopback, TLS with a test CA) and images built by
// the tests (umoci, skopeo): manifests and blobs verified, basic auth, tampered and missing blobs, an index, the
// dialer's refusal of loopback without the allow-list, and deadlines.
#include "image/registry_client.h"

#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <stdexcept>

#include "base/file.h"
#include "image/registry_fixture.h"
#include "must_work.h"

namespace isb::image {
namespace {

using testing::TestImages;
using testing::TestRegistry;

size_t CountEntries(const std::string& dir) {
  size_t n = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return SIZE_MAX;
  while (dirent* e = readdir(d)) n += std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..";
  closedir(d);
  return n;
}

class RegistryClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::MissingTool().empty()) return;
    Result<std::unique_ptr<TestImages>> built = TestImages::Build();
    if (built.ok()) {
      images_ = std::move(*built);
    } else {
      build_error_ = built.error().message;
    }
  }
  static void TearDownTestSuite() {
    std::string work = images_ ? images_->work() : "";
    images_.reset();
    if (!work.empty()) {
      EXPECT_NE(access(work.c_str(), F_OK), 0) << work << " was left behind";
    }
  }

  void SetUp() override {
    std::string missing = testing::MissingTool();
    ISB_REQUIRE_MACHINE(missing.empty(), "the registry tests need " + missing);
    ASSERT_TRUE(images_ != nullptr) << build_error_;
    Result<testing::TempDir> dir = testing::TempDir::Make("isb-pull-");
    ASSERT_TRUE(dir.ok()) << dir.error().message;
    store_dir_.emplace(std::move(*dir));
    Result<BlobStore> store = BlobStore::Open(store_dir_->path());
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_.emplace(std::move(*store));
    Result<egress::Dialer> dialer = egress::Dialer::Create({});
    ASSERT_TRUE(dialer.ok());
    dialer_.emplace(std::move(*dialer));
  }

  void TearDown() override {
    for (std::unique_ptr<TestRegistry>& r : registries_) {
      pid_t pid = r->pid();
      std::string dir = r->dir();
      r.reset();
      EXPECT_EQ(kill(pid, 0), -1) << "registry " << pid << " still runs";
      EXPECT_EQ(errno, ESRCH);
      EXPECT_NE(access(dir.c_str(), F_OK), 0) << dir << " was left behind";
    }
    if (store_dir_) {
      std::string path = store_dir_->path();
      store_dir_.reset();
      EXPECT_NE(access(path.c_str(), F_OK), 0) << path << " was left behind";
    }
  }

  TestRegistry& Start(bool basic_auth) {
    Result<std::unique_ptr<TestRegistry>> r = TestRegistry::Start(basic_auth);
    // gtest reports an exception from the test body as its failure, with this message.
    if (!r.ok()) throw std::runtime_error("the test registry did not start: " + r.error().message);
    registries_.push_back(std::move(*r));
    return *registries_.back();
  }

  std::string Push(const TestRegistry& r, const std::string& tag, const std::string& repo_tag,
                   testing::PushFormat format = testing::PushFormat::kOci) {
    Result<std::string> digest = r.Push(*images_, tag, repo_tag, format);
    EXPECT_TRUE(digest.ok()) << digest.error().message;
    return digest.ok() ? *digest : "";
  }

  RegistryClientOptions Options(const TestRegistry& r, bool allow = true, bool trust_ca = true) {
    RegistryClientOptions o;
    o.transport.dialer = &*dialer_;
    Result<std::shared_ptr<const egress::TlsTrust>> trust = egress::TlsTrust::Create(trust_ca ? r.ca_file() : "");
    EXPECT_TRUE(trust.ok());
    o.transport.trust = *trust;
    if (allow) o.transport.allowed_private.push_back(*ParseHostRule(r.host()));
    return o;
  }

  std::unique_ptr<RegistryClient> Client(const TestRegistry& r, RegistryClientOptions o) {
    Result<std::unique_ptr<RegistryClient>> c = RegistryClient::Create(r.host(), std::move(o));
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }

  static ImageReference Ref(const TestRegistry& r, const std::string& rest) {
    return *ParseImageReference(r.host() + "/" + rest);
  }

  // Fetches `ref`'s manifest, config and layers into the store; the parsed manifest.
  ImageManifest PullInto(RegistryClient& client, const ImageReference& ref) {
    Result<FetchedManifest> m = client.FetchManifest(ref);
    EXPECT_TRUE(m.ok()) << m.error().message;
    if (!m.ok()) return {};
    Result<ImageManifest> manifest = ParseManifest(m->bytes);
    EXPECT_TRUE(manifest.ok()) << manifest.error().message;
    if (!manifest.ok()) return {};
    EXPECT_TRUE(client.FetchBlobToStore(*store_, ref.repository, manifest->config, "config").ok());
    for (const Descriptor& layer : manifest->layers) {
      Status s = client.FetchBlobToStore(*store_, ref.repository, layer, "layer");
      EXPECT_TRUE(s.ok()) << s.error().message;
    }
    return *manifest;
  }

  static inline std::unique_ptr<TestImages> images_;
  static inline std::string build_error_;
  std::optional<testing::TempDir> store_dir_;
  std::optional<BlobStore> store_;
  std::optional<egress::Dialer> dialer_;
  std::vector<std::unique_ptr<TestRegistry>> registries_;
};

TEST_F(RegistryClientTest, AnAnonymousRegistryServesAnOciImageWhoseManifestAndBlobsVerify) {
  TestRegistry& r = Start(false);
  std::string pushed = Push(r, "amd64", "team/app:1.0");
  std::unique_ptr<RegistryClient> client = Client(r, Options(r));
  Result<FetchedManifest> m = client->FetchManifest(Ref(r, "team/app:1.0"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->media_type, media::kOciManifest);
  EXPECT_EQ(m->digest.str(), pushed);
  EXPECT_EQ(DigestOf(m->bytes).str(), pushed);

  ImageManifest manifest = PullInto(*client, Ref(r, "team/app:1.0"));
  ASSERT_EQ(manifest.layers.size(), 3u);
  for (const Descriptor& d : manifest.layers) {
    ASSERT_TRUE(store_->Has(d.digest)) << d.digest.str();
    EXPECT_EQ(DigestOf(*ReadFile(store_->Path(d.digest))), d.digest);
  }
  Result<ImageConfig> config = ParseImageConfig(*ReadFile(store_->Path(manifest.config.digest)));
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->cmd, (std::vector<std::string>{"/bin/sh"}));
  EXPECT_EQ(config->env, (std::vector<std::string>{"PATH=/bin"}));
  EXPECT_EQ(config->architecture, "amd64");
  EXPECT_TRUE(CheckConfigMatches(manifest, *config).ok());
  EXPECT_EQ(CountEntries(store_->TempDir()), 0u);
}

TEST_F(RegistryClientTest, ADockerSchema2ManifestAndItsBlobsStreamIntoASink) {
  TestRegistry& r = Start(false);
  std::string pushed = Push(r, "amd64", "team/app:docker", testing::PushFormat::kDocker);
  std::unique_ptr<RegistryClient> client = Client(r, Options(r));
  Result<FetchedManifest> m = client->FetchManifest(Ref(r, "team/app:docker"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->media_type, media::kDockerManifest);
  EXPECT_EQ(m->digest.str(), pushed);
  ImageManifest manifest = *ParseManifest(m->bytes);
  ASSERT_EQ(manifest.layers.size(), 3u);
  EXPECT_EQ(manifest.layers[0].media_type, media::kDockerLayerGzip);
  std::string bytes;
  size_t pieces = 0;
  Status s = client->FetchBlob(
      "team/app", manifest.layers[0],
      [&](std::string_view piece) {
        bytes.append(piece);
        ++pieces;
        return Status();
      },
      "layer");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(DigestOf(bytes), manifest.layers[0].digest);
  EXPECT_EQ(bytes.size(), manifest.layers[0].size);
  EXPECT_GT(pieces, 1u);  // a megabyte of busybox arrives in pieces, never whole
}

TEST_F(RegistryClientTest, AnImageWithZstdLayersArrivesVerifiedWithItsCompressionNamed) {
  TestRegistry& r = Start(false);
  Push(r, "amd64", "team/app:zstd", testing::PushFormat::kOciZstd);
  std::unique_ptr<RegistryClient> client = Client(r, Options(r));
  ImageManifest manifest = PullInto(*client, Ref(r, "team/app:zstd"));
  ASSERT_EQ(manifest.layers.size(), 3u);
  for (const Descriptor& layer : manifest.layers) {
    EXPECT_EQ(layer.media_type, media::kOciLayerZstd);
    EXPECT_EQ(*LayerCompressionOf(layer.media_type), LayerCompression::kZstd);
    Result<std::string> bytes = ReadFile(store_->Path(layer.digest));
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(bytes->substr(0, 4), std::string("\x28\xb5\x2f\xfd", 4));  // zstd's frame magic
  }
}

TEST_F(RegistryClientTest, BasicAuthWithTheRightPasswordFetches) {
  TestRegistry& r = Start(true);
  Push(r, "amd64", "team/app:1.0");
  RegistryClientOptions o = Options(r);
  o.credentials = RegistryCredentials{testing::kTestUser, testing::kTestPassword};
  std::unique_ptr<RegistryClient> client = Client(r, o);
  ImageManifest manifest = PullInto(*client, Ref(r, "team/app:1.0"));
  EXPECT_EQ(manifest.layers.size(), 3u);
  EXPECT_TRUE(store_->Has(manifest.config.digest));
}

TEST_F(RegistryClientTest, BasicAuthWithAWrongPasswordIsRefusedWithoutShowingIt) {
  TestRegistry& r = Start(true);
  Push(r, "amd64", "team/app:1.0");
  RegistryClientOptions o = Options(r);
  o.credentials = RegistryCredentials{testing::kTestUser, "wrong-password-77"};
  Result<FetchedManifest> m = Client(r, o)->FetchManifest(Ref(r, "team/app:1.0"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, Code::kUnauthenticated);
  EXPECT_EQ(m.error().message,
            "registry " + r.host() + " refused the credentials of user 'alice' to manifest team/app:1.0 (HTTP 401)");
  EXPECT_EQ(m.error().message.find("wrong-password-77"), std::string::npos);
}

TEST_F(RegistryClientTest, BasicAuthWithoutCredentialsSaysTheyAreNeeded) {
  TestRegistry& r = Start(true);
  Push(r, "amd64", "team/app:1.0");
  Result<FetchedManifest> m = Client(r, Options(r))->FetchManifest(Ref(r, "team/app:1.0"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, Code::kUnauthenticated);
  EXPECT_EQ(m.error().message,
            "registry " + r.host() + " asks for a user and password (HTTP 401, Basic); none were given");
}

TEST_F(RegistryClientTest, ABlobWhoseBytesDoNotMatchItsDigestIsRefusedAndNothingIsLeft) {
  TestRegistry& r = Start(false);
  Push(r, "amd64", "team/app:1.0");
  std::unique_ptr<RegistryClient> client = Client(r, Options(r));
  ImageManifest manifest = *ParseManifest(client->FetchManifest(Ref(r, "team/app:1.0"))->bytes);
  const Descriptor& layer = manifest.layers[1];
  // Same size, other bytes: only the digest can tell.
  std::string path = r.BlobDataPath(layer.digest);
  Result<std::string> original = ReadFile(path);
  ASSERT_TRUE(original.ok()) << original.error().message;
  std::string tampered = *original;
  tampered[tampered.size() / 2] ^= 0x5a;
  ASSERT_TRUE(WriteFile(path, tampered).ok());

  Status s = client->FetchBlobToStore(*store_, "team/app", layer, "layer");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Code::kInvalidArgument);
  EXPECT_EQ(s.error().message,
            "layer " + layer.digest.Short() + "\u2026: digest mismatch (got " + DigestOf(tampered).str() + ")");
  EXPECT_FALSE(store_->Has(layer.digest));
  EXPECT_EQ(CountEntries(store_dir_->path() + "/blobs/sha256"), 0u);
  EXPECT_EQ(CountEntries(store_->TempDir()), 0u);

  std::string streamed;
  Status sunk = client->FetchBlob(
      "team/app", layer,
      [&](std::string_view p) {
        streamed.append(p);
        return Status();
      },
      "layer");
  EXPECT_EQ(sunk.error().message, s.error().message);
}

TEST_F(RegistryClientTest, AManifestNamingAMissingBlobFailsAsNotFoundNamingIt) {
  TestRegistry& r = Start(false);
  Push(r, "amd64", "team/app:1.0");
  std::unique_ptr<RegistryClient> client = Client(r, Options(r));
  ImageManifest manifest = *ParseManifest(client->FetchManifest(Ref(r, "team/app:1.0"))->bytes);
  const Descriptor& layer = manifest.layers[2];
  ASSERT_EQ(unlink(r.BlobDataPath(layer.digest).c_str()), 0);

  Status s = client->FetchBlobToStore(*store_, "team/app", layer, "layer");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Code::kNotFound);
  EXPECT_EQ(s.error().message,
            "registry " + r.host() + ": layer " + layer.digest.Short() + "\u2026 not found in team/app (HTTP 404)");
  EXPECT_EQ(CountEntries(store_dir_->path() + "/blobs/sha256"), 0u);
  EXPECT_EQ(CountEntries(store_->TempDir()), 0u);
}

TEST_F(RegistryClientTest, AnUnknownTagIsNotFound) {
  TestRegistry& r = Start(false);
  Push(r, "amd64", "team/app:1.0");
  Result<FetchedManifest> m = Client(r, Options(r))->FetchManifest(Ref(r, "team/app:2.0"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, Code::kNotFound);
  EXPECT_EQ(m.error().message, "registry " + r.host() + ": manifest team/app:2.0 not found in team/app (HTTP 404)");
}

TEST_F(RegistryClientTest, AnIndexWithTwoPlatformsResolvesToTheHostsManifest) {
  TestRegistry& r = Start(true);
  std::string amd64 = Push(r, "amd64", "team/multi:amd64");
  std::string arm64 = Push(r, "arm64", "team/multi:arm64");
  ASSERT_NE(amd64, arm64);
  Result<std::string> index_digest = r.PushIndex("team/multi", amd64, arm64, "latest");
  ASSERT_TRUE(index_digest.ok()) << index_digest.error().message;
  RegistryClientOptions o = Options(r);
  o.credentials = RegistryCredentials{testing::kTestUser, testing::kTestPassword};
  std::unique_ptr<RegistryClient> client = Client(r, o);

  Result<FetchedManifest> fetched = client->FetchManifest(Ref(r, "team/multi"));
  ASSERT_TRUE(fetched.ok()) << fetched.error().message;
  EXPECT_EQ(fetched->media_type, media::kOciIndex);
  EXPECT_EQ(fetched->digest.str(), *index_digest);
  Result<ImageIndex> index = ParseIndex(fetched->bytes);
  ASSERT_TRUE(index.ok()) << index.error().message;
  ASSERT_EQ(index->manifests.size(), 2u);

  Result<Descriptor> chosen = SelectPlatform(*index, Platform{"linux", "amd64", ""});
  ASSERT_TRUE(chosen.ok()) << chosen.error().message;
  EXPECT_EQ(chosen->digest.str(), amd64);
  EXPECT_EQ(SelectPlatform(*index, Platform{"linux", "arm64", "v8"})->digest.str(), arm64);

  ImageReference by_digest = Ref(r, "team/multi@" + chosen->digest.str());
  ImageManifest manifest = PullInto(*client, by_digest);
  Result<ImageConfig> config = ParseImageConfig(*ReadFile(store_->Path(manifest.config.digest)));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->architecture, "amd64");
}

TEST_F(RegistryClientTest, ALoopbackRegistryIsRefusedWithoutTheAllowListEntry) {
  TestRegistry& r = Start(false);
  Push(r, "amd64", "team/app:1.0");
  Result<FetchedManifest> m = Client(r, Options(r, /*allow=*/false))->FetchManifest(Ref(r, "team/app:1.0"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, Code::kForbidden);
  EXPECT_EQ(m.error().message, "registry " + r.host() + ": " + dialer_->Resolve("127.0.0.1", r.port()).error().message +
                                   std::string(kRegistryAllowHint));
  EXPECT_TRUE(m.error().message.starts_with("registry " + r.host() + ": egress refused '127.0.0.1': "))
      << m.error().message;
  // An entry for another port of the same host does not allow this one.
  RegistryClientOptions other_port = Options(r, false);
  other_port.transport.allowed_private.push_back(*ParseHostRule("127.0.0.1:1"));
  EXPECT_EQ(Client(r, other_port)->FetchManifest(Ref(r, "team/app:1.0")).error().code, Code::kForbidden);
  // HOST alone allows every port.
  RegistryClientOptions any_port = Options(r, false);
  any_port.transport.allowed_private.push_back(*ParseHostRule("127.0.0.1"));
  EXPECT_TRUE(Client(r, any_port)->FetchManifest(Ref(r, "team/app:1.0")).ok());
}

TEST_F(RegistryClientTest, ARegistryWhoseCertificateIsNotTrustedIsRefused) {
  TestRegistry& r = Start(false);
  Result<FetchedManifest> m = Client(r, Options(r, true, /*trust_ca=*/false))->FetchManifest(Ref(r, "team/app:1.0"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, Code::kUnavailable);
  EXPECT_TRUE(
      m.error().message.starts_with("registry " + r.host() + ": TLS: the certificate of 127.0.0.1 was refused: "))
      << m.error().message;
}

// A server that takes the connection and never answers: every step has a deadline.
TEST(RegistryTransport, AServerThatNeverAnswersTimesOut) {
  Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(listener.get(), 4), 0);
  ASSERT_EQ(getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  std::string host = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));

  Result<egress::Dialer> dialer = egress::Dialer::Create({});
  TransportOptions o;
  o.dialer = &*dialer;
  o.trust = *egress::TlsTrust::Create("");
  o.allowed_private.push_back(*ParseHostRule(host));
  o.step_timeout = std::chrono::milliseconds(300);
  RegistryTransport transport(o);
  auto start = std::chrono::steady_clock::now();
  Result<HttpGetResponse> r = transport.Get(*egress::ParseHttpUrl("https://" + host + "/v2/"), {}, nullptr, 1024,
                                            start + std::chrono::seconds(30));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTimeout);
  EXPECT_EQ(r.error().message, "registry " + host + ": the TLS handshake timed out");
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST(RegistryTransport, PlainHttpIsRefusedUnlessAllowedForThatHostAndPort) {
  Result<egress::Dialer> dialer = egress::Dialer::Create({});
  TransportOptions o;
  o.dialer = &*dialer;
  o.plain_http.push_back(*ParseHostRule("reg.test:5000"));
  RegistryTransport transport(o);
  EXPECT_TRUE(transport.CheckScheme(*egress::ParseHttpUrl("http://reg.test:5000/v2/")).ok());
  EXPECT_TRUE(transport.CheckScheme(*egress::ParseHttpUrl("https://other.test/v2/")).ok());
  Status refused = transport.CheckScheme(*egress::ParseHttpUrl("http://reg.test:5001/v2/"));
  EXPECT_EQ(refused.error().code, Code::kForbidden);
  EXPECT_EQ(refused.error().message,
            "registry reg.test:5001: plain http is refused; use https, or allow plain http for this host");
}

TEST(ParseHostRule, ReadsHostsAndPortsAndRefusesTheRest) {
  EXPECT_EQ(ParseHostRule("127.0.0.1:5000")->host, "127.0.0.1");
  EXPECT_EQ(ParseHostRule("127.0.0.1:5000")->port, 5000);
  EXPECT_EQ(ParseHostRule("Registry.Internal")->host, "registry.internal");
  EXPECT_EQ(ParseHostRule("Registry.Internal")->port, std::nullopt);
  EXPECT_EQ(ParseHostRule("[fd00::1]:443")->port, 443);
  EXPECT_EQ(ParseHostRule("reg:99999").error().message,
            "host 'reg:99999' has an invalid port (expected HOST or HOST:PORT)");
  EXPECT_EQ(ParseHostRule(":5000").error().message, "host ':5000' has no valid host (expected HOST or HOST:PORT)");
}

}  // namespace
}  // namespace isb::image
