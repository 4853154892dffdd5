// The secrets filter in the real egress proxy, on loopback: curl talks TLS to the proxy as a sandbox would, the proxy
// intercepts with the sandbox's CA and reaches echo origins over verified TLS. What the origin receives holds the
// value; what curl prints holds only the placeholder; a placeholder for another host is refused with 403.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <poll.h>

#include <filesystem>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "base/file.h"
#include "secrets/zlib_whole.h"
#include "egress/cert_minter.h"
#include "egress/classify.h"
#include "egress/proxy.h"
#include "egress/tls_origin.h"
#include "net/loopback.h"
#include "secrets/secrets_filter.h"
#include "secrets/zlib_whole.h"

namespace isb::secrets {
namespace {

using egress::OriginReply;

constexpr char kPlaceholder[] = "isb_placeholder_Q7mK2xV9";
constexpr char kValue[] = "sk-live-42";

// Echoes the whole request it got as its body; under /gzip, gzip-encoded.
OriginReply Echo(const std::string& request) {
  if (request.starts_with("GET /compress "))
    return {"HTTP/1.1 200 OK\r\nContent-Encoding: compress\r\nContent-Length: 4\r\n\r\nabcd"};
  if (request.starts_with("GET /gzip ")) {
    const std::string body = ZlibWhole(request, 31);
    return {"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
            body};
  }
  return {"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(request.size()) + "\r\n\r\n" + request};
}

// A plain HTTP origin for one connection: keeps the request head it gets (empty when none comes) and answers 204.
class PlainOrigin {
 public:
  PlainOrigin() {
    Result<testing::Socket> s = testing::ListenTcp();
    EXPECT_TRUE(s.ok());
    if (!s.ok()) return;
    listener_ = std::move(s->fd);
    port_ = s->port;
    thread_ = std::thread([this] { Serve(); });
  }
  ~PlainOrigin() {
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return port_; }
  std::string Received() {
    if (thread_.joinable()) thread_.join();
    return received_;
  }

 private:
  void Serve() {
    pollfd waiting{listener_.get(), POLLIN, 0};
    if (::poll(&waiting, 1, 10000) != 1) return;
    Fd c(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    char buf[4096];
    while (c.get() >= 0 && received_.find("\r\n\r\n") == std::string::npos) {
      pollfd readable{c.get(), POLLIN, 0};
      if (::poll(&readable, 1, 10000) != 1) return;
      const ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
      if (n <= 0) return;
      received_.append(buf, static_cast<size_t>(n));
    }
    const std::string answer = "HTTP/1.1 204 No Content\r\n\r\n";
    ::send(c.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
  }

  Fd listener_;
  uint16_t port_ = 0;
  std::string received_;
  std::thread thread_;
};

class SecretsProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/isb-secrets-proxy-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto origins_ca = egress::SandboxCa::Create("test origins");
    ASSERT_TRUE(origins_ca.ok());
    ASSERT_TRUE(WriteFile(dir_ + "/origins.pem", (*origins_ca)->pem()).ok());
    for (const char* name : {"api.test", "other.test"}) {
      Result<egress::TlsIdentity> leaf = (*origins_ca)->Mint(name);
      ASSERT_TRUE(leaf.ok());
      origins_[name] = std::make_unique<egress::TlsOrigin>(*leaf, Echo);
      ports_[name] = origins_[name]->port();
    }
    auto minter = std::make_shared<egress::CertMinter>();
    Result<std::string> pem = minter->CaPem("sb1");
    ASSERT_TRUE(pem.ok());
    ASSERT_TRUE(WriteFile(dir_ + "/sandbox.pem", *pem).ok());

    filter_ = std::make_shared<SecretsFilter>();
    filter_->OnLeak([this](const LeakEvent& event) {
      std::lock_guard lock(mu_);
      leaks_.push_back(event);
    });
    egress::ProxyHooks h;
    h.classify = egress::ClassifyConnection;
    h.sandbox = [](uint32_t) { return std::optional<std::string>("sb1"); };
    h.host_for_port = [](const std::string&, uint16_t) { return std::optional<std::string>(); };
    h.decide = [](const std::string&, const std::string&, uint16_t, const std::string&, const std::string&) {
      return egress::Admission{true, ""};
    };
    h.dial = [this](const std::string& host, uint16_t) -> Result<Fd> { return DialOrigin(host); };
    h.intercept = [](const std::string&, const std::string&, uint16_t) { return true; };
    egress::ProxyOptions o;
    o.listen_address = "127.0.0.1";
    o.intercept.minter = minter;
    o.intercept.upstream_ca_file = dir_ + "/origins.pem";
    o.filter = filter_;
    Result<std::unique_ptr<egress::Proxy>> p = egress::Proxy::Start(o, h);
    ASSERT_TRUE(p.ok()) << p.error().message;
    proxy_ = std::move(*p);
  }

  void TearDown() override {
    for (int i = 0; i < 200 && proxy_ && proxy_->stats().active != 0; ++i) ::usleep(20000);
    proxy_.reset();
    origins_.clear();
    std::filesystem::remove_all(dir_);
  }

  Result<Fd> DialOrigin(const std::string& host) {
    uint16_t port = 0;
    {
      std::lock_guard lock(mu_);
      auto it = ports_.find(host);
      if (it == ports_.end()) return Error::Of(Code::kUnavailable, "no route to " + host);
      port = it->second;
    }
    Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return Error::Sys("connect");
    return s;
  }

  // curl through the proxy (trusting the sandbox's CA): the response's head and body as it prints them.
  std::string Curl(const std::string& url, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {"curl",
                                     "-sS",
                                     "-i",
                                     "--connect-to",
                                     "::127.0.0.1:" + std::to_string(proxy_->port()),
                                     "--cacert",
                                     dir_ + "/sandbox.pem",
                                     "-A",
                                     "isb-test"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(url);
    Result<testing::Child> child = testing::Child::Start(argv);
    EXPECT_TRUE(child.ok());
    return child.ok() ? child->Output(20000) : "";
  }

  void Bind(OnLeak on_leak) {
    SandboxSecrets secrets;
    secrets.on_leak = on_leak;
    // Every port: the sandbox's connections reach the proxy's own port here, not 443.
    secrets.bindings.push_back({"API_KEY", kPlaceholder, kValue, {{"api.test", false, std::nullopt}}, {true, true}});
    filter_->Set("sb1", secrets);
  }

  std::string dir_;
  std::map<std::string, std::unique_ptr<egress::TlsOrigin>> origins_;
  std::map<std::string, uint16_t> ports_;  // where each name is dialed
  std::shared_ptr<SecretsFilter> filter_;
  std::unique_ptr<egress::Proxy> proxy_;
  std::mutex mu_;
  std::vector<LeakEvent> leaks_;
};

TEST_F(SecretsProxyTest, TheOriginGetsTheValueEverywhereAndTheSandboxSeesOnlyThePlaceholderInTheEcho) {
  Bind(OnLeak::kPass);
  const std::string ph = kPlaceholder;
  const std::string out = Curl("https://api.test/v1?key=" + ph,
                               {"-H", "Authorization: Bearer " + ph, "-u", "me:" + ph, "-H",
                                "Content-Type: application/json", "--data-binary", "{\"k\":\"" + ph + "\"}"});
  const std::string received =
      "POST /v1?key=sk-live-42 HTTP/1.1\r\nHost: api.test\r\nUser-Agent: isb-test\r\n"
      "Accept: */*\r\nAuthorization: Bearer sk-live-42\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n12\r\n{\"k\":\"sk-live-42\"}\r\n0\r\n\r\n";
  // curl sends -u as a Basic header of its own: the explicit Authorization one wins, so the Basic form is tested
  // alone below.
  std::vector<std::vector<std::string>> got = origins_["api.test"]->Connections();
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].size(), 1u);
  EXPECT_EQ(got[0][0], received);
  std::string echoed = received;
  for (size_t at; (at = echoed.find(kValue)) != std::string::npos;) echoed.replace(at, std::strlen(kValue), ph);
  EXPECT_EQ(out, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + echoed);
  EXPECT_EQ(filter_->Counters("sb1"), (std::map<std::string, SecretCounters>{{"API_KEY", {1, 1, 0}}}));
  std::lock_guard lock(mu_);
  EXPECT_TRUE(leaks_.empty());
}

TEST_F(SecretsProxyTest, BasicCredentialsReachTheOriginWithTheValueAndAGzipEchoComesBackScrubbedInGzip) {
  Bind(OnLeak::kPass);
  const std::string out = Curl("https://api.test/gzip", {"-u", std::string("me:") + kPlaceholder, "--compressed"});
  std::vector<std::vector<std::string>> got = origins_["api.test"]->Connections();
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].size(), 1u);
  EXPECT_NE(got[0][0].find("Authorization: Basic bWU6c2stbGl2ZS00Mg==\r\n"), std::string::npos) << got[0][0];
  EXPECT_TRUE(out.starts_with("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"))
      << out;
  // The echoed Basic header: the value's base64 run became the placeholder's.
  EXPECT_NE(out.find("Authorization: Basic bWU6aXNiX3BsYWNlaG9sZGVyX1E3bUsyeFY5g==\r\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("c2stbGl2ZS00"), std::string::npos) << out;
  EXPECT_EQ(out.find(kValue), std::string::npos) << out;
}

// A response whose coding isb cannot read could carry the value unscrubbed: the sandbox gets a 502 saying why, and
// none of the origin's response.
TEST_F(SecretsProxyTest, AResponseThatCannotBeScrubbedIsAnswered502WithTheReason) {
  Bind(OnLeak::kPass);
  const std::string out = Curl("https://api.test/compress");
  const std::string body =
      "isb: the body cannot be scrubbed of secrets: content coding \"compress\" is not one of gzip, deflate, br, "
      "zstd\n";
  EXPECT_EQ(out, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
}

TEST_F(SecretsProxyTest, UnderBlockAPlaceholderForAnotherHostIsRefusedWith403AndNeverReachesIt) {
  Bind(OnLeak::kBlock);
  const std::string out = Curl("https://other.test/", {"-H", std::string("X-Key: ") + kPlaceholder});
  EXPECT_TRUE(out.starts_with("HTTP/1.1 403 Forbidden\r\n")) << out;
  EXPECT_NE(out.find("\r\n\r\nisb: secret API_KEY may not be sent to other.test"), std::string::npos) << out;
  EXPECT_EQ(out.find(kValue), std::string::npos);
  EXPECT_EQ(origins_["other.test"]->Connections(), (std::vector<std::vector<std::string>>{{}}))
      << "connected (the proxy dials before the first request) but sent nothing";
  std::lock_guard lock(mu_);
  EXPECT_EQ(leaks_,
            (std::vector<LeakEvent>{{"sb1", "API_KEY", "other.test", proxy_->port(), "header X-Key", OnLeak::kBlock}}));
}

TEST_F(SecretsProxyTest, UnderBlockABodyCarryingThePlaceholderToAnotherHostIsCutAndAnswered403) {
  Bind(OnLeak::kBlock);
  const std::string out = Curl("https://other.test/", {"--data-binary", std::string("x=") + kPlaceholder});
  EXPECT_TRUE(out.starts_with("HTTP/1.1 403 Forbidden\r\n")) << out;
  EXPECT_NE(out.find("\r\n\r\nisb: secret API_KEY may not be sent to other.test"), std::string::npos) << out;
  for (const std::vector<std::string>& connection : origins_["other.test"]->Connections())
    for (const std::string& request : connection) EXPECT_EQ(request.find("isb_pl"), std::string::npos) << request;
}

// Plain HTTP: the placeholder is never swapped, even for its own host; pass lets it through as it is, reported.
TEST_F(SecretsProxyTest, OverPlainHttpThePlaceholderGoesUnchangedUnderPassAndIsReported) {
  Bind(OnLeak::kPass);
  PlainOrigin plain;
  {
    std::lock_guard lock(mu_);
    ports_["api.test"] = plain.port();
  }
  const std::string out = Curl("http://api.test/", {"-H", std::string("X-Key: ") + kPlaceholder});
  EXPECT_EQ(out, "HTTP/1.1 204 No Content\r\n\r\n");
  EXPECT_EQ(plain.Received(), std::string("GET / HTTP/1.1\r\nHost: api.test\r\nUser-Agent: isb-test\r\nAccept: */*\r\n"
                                          "X-Key: ") +
                                  kPlaceholder + "\r\n\r\n");
  std::lock_guard lock(mu_);
  EXPECT_EQ(leaks_,
            (std::vector<LeakEvent>{{"sb1", "API_KEY", "api.test", proxy_->port(), "plain http", OnLeak::kPass}}));
}

TEST_F(SecretsProxyTest, OverPlainHttpBlockAnswers403SayingTheSecretGoesOnlyOverHttps) {
  Bind(OnLeak::kBlock);
  PlainOrigin plain;
  {
    std::lock_guard lock(mu_);
    ports_["api.test"] = plain.port();
  }
  const std::string out = Curl("http://api.test/?k=" + std::string(kPlaceholder));
  EXPECT_TRUE(out.starts_with("HTTP/1.1 403 Forbidden\r\n")) << out;
  EXPECT_NE(out.find("isb: secret API_KEY may be sent to api.test only over HTTPS"), std::string::npos) << out;
  EXPECT_EQ(plain.Received(), "") << "connected (the proxy dials before the request goes) but sent nothing";
  EXPECT_EQ(proxy_->stats().denied.load(), 1u);
}

}  // namespace
}  // namespace isb::secrets
