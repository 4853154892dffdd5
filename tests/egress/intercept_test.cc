// Interception end to end on loopback, in process: a real curl talks TLS to the proxy as a sandbox would (its
// connection pinned to the proxy's port), the proxy mints a certificate from the sandbox's CA and talks verified TLS
// to real TLS origins whose CA the test made.
#include "egress/intercept.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>

#include <gtest/gtest.h>

#include "base/file.h"
#include "egress/explicit_proxy.h"
#include "egress/cert_minter.h"
#include "egress/classify.h"
#include "egress/replacing_filter.h"
#include "egress/sandbox_traffic.h"
#include "egress/stop_proxy.h"
#include "net/loopback.h"
#include "tls_origin.h"

namespace isb::egress {
namespace {

OriginReply Respond(const std::string& request) {
  std::string line = request.substr(0, request.find("\r\n"));
  if (line == "GET /hello HTTP/1.1") return {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Origin: origin\r\n\r\nhello"};
  if (line == "HEAD /hello HTTP/1.1") return {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Origin: origin\r\n\r\n"};
  if (line == "GET /chunked HTTP/1.1")
    return {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;x=y\r\n, world\r\n0\r\n\r\n"};
  if (line == "GET /204 HTTP/1.1") return {"HTTP/1.1 204 No Content\r\nX-A: b\r\n\r\n"};
  if (line == "GET /close HTTP/1.1") return {"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end", true};
  if (line == "GET /cut HTTP/1.1") return {"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npartial", true, true};
  if (line == "POST /echo HTTP/1.1") {
    std::string body = request.substr(request.find("\r\n\r\n") + 4);
    return {"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body};
  }
  return {"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"};
}

TlsIdentity MustMint(const SandboxCa& ca, const std::string& host) {
  Result<TlsIdentity> leaf = ca.Mint(host);
  EXPECT_TRUE(leaf.ok()) << leaf.error().message;
  return std::move(*leaf);
}

class InterceptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);  // a process running the proxy must (proxy.h)
    char tmpl[] = "/tmp/isb-intercept-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // The origins' CA (given to the proxy as --egress-ca would) and a stranger's that nobody trusts.
    auto origins_ca = SandboxCa::Create("test origins");
    auto stranger_ca = SandboxCa::Create("stranger");
    ASSERT_TRUE(origins_ca.ok() && stranger_ca.ok());
    origins_ca_file_ = dir_ + "/origins-ca.pem";
    ASSERT_TRUE(WriteFile(origins_ca_file_, (*origins_ca)->pem()).ok());
    origin_ = std::make_unique<TlsOrigin>(MustMint(**origins_ca, "origin.test"), Respond);
    plain_ = std::make_unique<TlsOrigin>(MustMint(**origins_ca, "plain.test"), Respond);
    untrusted_ = std::make_unique<TlsOrigin>(MustMint(**stranger_ca, "untrusted.test"), Respond);
    origin_ports_ = {{"origin.test", origin_->port()},
                     {"plain.test", plain_->port()},
                     {"untrusted.test", untrusted_->port()},
                     {"wrongname.test", origin_->port()}};

    minter_ = std::make_shared<CertMinter>();
    Result<std::string> pem = minter_->CaPem("sb1");
    ASSERT_TRUE(pem.ok());
    sandbox_ca_file_ = dir_ + "/sandbox-ca.pem";
    ASSERT_TRUE(WriteFile(sandbox_ca_file_, *pem).ok());

    ProxyHooks h;
    h.classify = ClassifyConnection;
    h.sandbox = [](uint32_t) { return std::optional<std::string>("sb1"); };
    h.host_for_port = [](const std::string&, uint16_t) { return std::optional<std::string>(); };
    h.decide = [](const std::string&, const std::string&, uint16_t, const std::string&, const std::string&) {
      return Admission{true, ""};
    };
    h.dial = [this](const std::string& host, uint16_t) -> Result<Fd> {
      auto it = origin_ports_.find(host);
      if (it == origin_ports_.end()) return Error::Of(Code::kUnavailable, "no route to " + host);
      Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(it->second);
      if (::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return Error::Sys("connect");
      return s;
    };
    h.on_deny = [this](const std::string& sandbox, const std::string& target, const std::string& reason, bool first) {
      std::lock_guard lock(mu_);
      denials_.push_back(sandbox + " " + target + " " + reason + (first ? " (logged)" : ""));
    };
    h.intercept = [](const std::string& sandbox, const std::string& host, uint16_t) {
      return sandbox == "sb1" && host != "plain.test";
    };
    ProxyOptions o;
    o.listen_address = "127.0.0.1";
    o.intercept.minter = minter_;
    o.intercept.upstream_ca_file = origins_ca_file_;
    hooks_ = h;
    options_ = o;
    Result<std::unique_ptr<Proxy>> p = Proxy::Start(o, h);
    ASSERT_TRUE(p.ok()) << p.error().message;
    proxy_ = std::move(*p);
    port_ = std::to_string(proxy_->port());
  }

  // Every name a judged one: each question ("host method path"; method and path empty for the connection) is added
  // to `asked`, and a request for `refused_path` is refused, saying so.
  void JudgeEverything(std::vector<std::string>* asked, const std::string& refused_path = "") {
    hooks_.decide = [this, asked, refused_path](const std::string&, const std::string& host, uint16_t,
                                                const std::string& method, const std::string& path) {
      std::lock_guard lock(mu_);
      asked->push_back(host + " " + method + " " + path);
      if (!refused_path.empty() && path == refused_path)
        return Admission{false, "the judge refuses " + method + " " + path, true};
      return Admission{true, "", true};
    };
  }

  // A new proxy with the fixture's options and hooks_ as they are now.
  void RestartProxy() {
    proxy_.reset();
    Result<std::unique_ptr<Proxy>> p = Proxy::Start(options_, hooks_);
    ASSERT_TRUE(p.ok()) << p.error().message;
    proxy_ = std::move(*p);
    port_ = std::to_string(proxy_->port());
  }

  void TearDown() override {
    StopProxy(proxy_);
    std::filesystem::remove_all(dir_);
  }

  // curl's arguments for one transfer through the proxy, trusting `ca`; `extra` before the URL.
  std::vector<std::string> Transfer(const std::string& url, std::vector<std::string> extra = {}, std::string ca = "") {
    std::vector<std::string> args = {"-sS",
                                     "--connect-to",
                                     "::127.0.0.1:" + port_,
                                     "--cacert",
                                     ca.empty() ? sandbox_ca_file_ : ca,
                                     "-A",
                                     "isb-test",
                                     "-i",
                                     "--raw",
                                     "-w",
                                     "[%{http_version} %{num_connects}]\n"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(url);
    return args;
  }

  // Runs curl with the transfers (joined by --next) and returns its standard output.
  static std::string Curl(const std::vector<std::vector<std::string>>& transfers) {
    std::vector<std::string> argv = {"curl"};
    for (size_t i = 0; i < transfers.size(); ++i) {
      if (i > 0) argv.push_back("--next");
      argv.insert(argv.end(), transfers[i].begin(), transfers[i].end());
    }
    Result<testing::Child> child = testing::Child::Start(argv);
    EXPECT_TRUE(child.ok());
    return child.ok() ? child->Output(20000) : "";
  }

  // The proxy again, its port also the explicit one (where HTTPS_PROXY points).
  void RestartAsExplicitProxy() {
    proxy_.reset();
    Result<std::unique_ptr<Proxy>> p = StartOnExplicitPort(options_, hooks_);
    ASSERT_TRUE(p.ok()) << p.error().message;
    proxy_ = std::move(*p);
    port_ = std::to_string(proxy_->port());
  }

  // A TLS client of the proxy as a sandbox's would be: trusting the sandbox's CA, asking for `name`; no ssl when the
  // connection or the handshake failed.
  struct TlsClient {
    SslCtxPtr ctx;
    Fd fd;
    SslPtr ssl;
  };
  TlsClient ConnectTls(const std::string& name) {
    TlsClient c;
    c.ctx.reset(SSL_CTX_new(TLS_client_method()));
    if (!c.ctx || SSL_CTX_load_verify_locations(c.ctx.get(), sandbox_ca_file_.c_str(), nullptr) != 1) return c;
    SSL_CTX_set_verify(c.ctx.get(), SSL_VERIFY_PEER, nullptr);
    c.fd = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(proxy_->port());
    if (::connect(c.fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return c;
    SslPtr ssl(SSL_new(c.ctx.get()));
    SSL_set_fd(ssl.get(), c.fd.get());
    SSL_set_tlsext_host_name(ssl.get(), name.c_str());
    if (SSL_connect(ssl.get()) == 1) c.ssl = std::move(ssl);
    return c;
  }

  ProxyHooks hooks_;
  ProxyOptions options_;
  std::string dir_, origins_ca_file_, sandbox_ca_file_, port_;
  std::unique_ptr<TlsOrigin> origin_, plain_, untrusted_;
  std::map<std::string, uint16_t> origin_ports_;
  std::shared_ptr<CertMinter> minter_;
  std::unique_ptr<Proxy> proxy_;
  std::mutex mu_;
  std::vector<std::string> denials_;
};

TEST_F(InterceptTest, TheClientGetsACertificateFromTheSandboxCaAndTheBytesPassUnchanged) {
  std::vector<std::string> t = Transfer("https://origin.test/hello");
  t[t.size() - 2] = "[%{http_version} %{num_connects}]\n%{certs}";
  std::string out = Curl({t});
  EXPECT_TRUE(
      out.starts_with("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Origin: origin\r\n\r\nhello[1.1 1]\n"
                      "Subject:CN = origin.test\nIssuer:CN = isb sandbox CA sb1\n"))
      << out;
  EXPECT_NE(out.find("X509v3 Subject Alternative Name:DNS:origin.test\n"), std::string::npos) << out;
  EXPECT_EQ(origin_->Connections(),
            (std::vector<std::vector<std::string>>{
                {"GET /hello HTTP/1.1\r\nHost: origin.test\r\nUser-Agent: isb-test\r\nAccept: */*\r\n\r\n"}}));
  EXPECT_EQ(origin_->ServerNames(), std::vector<std::string>{"origin.test"}) << "the proxy sent the name upstream";
  EXPECT_EQ(proxy_->stats().allowed.load(), 1u);
  EXPECT_EQ(proxy_->stats().denied.load(), 0u);
}

// The sandbox's counters get what was forwarded each way in the clear, as the proxy's totals do; a sandbox that
// sent nothing keeps 0.
TEST_F(InterceptTest, WhatIsForwardedIsCountedForTheSandboxInTheClear) {
  proxy_->traffic().Track("sb1");
  proxy_->traffic().Track("sb2");
  std::string out = Curl({Transfer("https://origin.test/hello")});
  const std::string response = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Origin: origin\r\n\r\nhello";
  ASSERT_EQ(out, response + "[1.1 1]\n");
  // Counted as the bytes are written; the connection's end is the moment both sides are surely in.
  for (int i = 0; i < 500 && proxy_->stats().active.load() != 0; ++i) ::usleep(10000);
  const std::string request = "GET /hello HTTP/1.1\r\nHost: origin.test\r\nUser-Agent: isb-test\r\nAccept: */*\r\n\r\n";
  EXPECT_EQ(proxy_->traffic().Read("sb1"), (TrafficTotals{request.size(), response.size()}));
  EXPECT_EQ(proxy_->stats().bytes_up.load(), request.size());
  EXPECT_EQ(proxy_->stats().bytes_down.load(), response.size());
  EXPECT_EQ(proxy_->traffic().Read("sb2"), (TrafficTotals{0, 0}));
}

TEST_F(InterceptTest, BodiesAndResponsesOfEveryFramingPassOnOneKeptAliveConnection) {
  const std::string url = "https://origin.test";
  std::string out =
      Curl({Transfer(url + "/echo", {"--data-binary", "a=1&b=2"}),
            Transfer(url + "/echo", {"-H", "Transfer-Encoding: chunked", "--data-binary", "chunked body"}),
            Transfer(url + "/chunked"), Transfer(url + "/hello", {"-I"}), Transfer(url + "/204")});
  EXPECT_EQ(out,
            "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\na=1&b=2[1.1 1]\n"
            "HTTP/1.1 200 OK\r\nContent-Length: 22\r\n\r\nc\r\nchunked body\r\n0\r\n\r\n[1.1 0]\n"
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;x=y\r\n, world\r\n0\r\n\r\n[1.1 0]\n"
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Origin: origin\r\n\r\n[1.1 0]\n"
            "HTTP/1.1 204 No Content\r\nX-A: b\r\n\r\n[1.1 0]\n");
  const std::string common = "Host: origin.test\r\nUser-Agent: isb-test\r\nAccept: */*\r\n";
  EXPECT_EQ(origin_->Connections(),
            (std::vector<std::vector<std::string>>{{
                "POST /echo HTTP/1.1\r\n" + common +
                    "Content-Length: 7\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\na=1&b=2",
                "POST /echo HTTP/1.1\r\n" + common +
                    "Transfer-Encoding: chunked\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n"
                    "c\r\nchunked body\r\n0\r\n\r\n",
                "GET /chunked HTTP/1.1\r\n" + common + "\r\n",
                "HEAD /hello HTTP/1.1\r\n" + common + "\r\n",
                "GET /204 HTTP/1.1\r\n" + common + "\r\n",
            }}));
}

// A filter that changes bodies' lengths: the request body the origin gets and the response bodies the client gets
// are chunked anew, the request head edited for the sandbox; a response to HEAD keeps its Content-Length.
TEST_F(InterceptTest, BodiesAFilterChangesAreChunkedAnewBothWays) {
  options_.filter = std::make_shared<ReplacingFilter>("hello", "bonjour!");
  RestartProxy();
  const std::string url = "https://origin.test";
  std::string out = Curl({Transfer(url + "/echo", {"--data-binary", "say hello"}), Transfer(url + "/hello"),
                          Transfer(url + "/hello", {"-I"})});
  const std::string sent = "c\r\nsay bonjour!\r\n0\r\n\r\n";
  // The origin's echo of `sent` is one piece; the filter keeps its last 4 bytes back until the body's end.
  EXPECT_EQ(
      out,
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "12\r\n" +
          sent.substr(0, 18) + "\r\n4\r\n" + sent.substr(18) +
          "\r\n0\r\n\r\n[1.1 1]\n"
          "HTTP/1.1 200 OK\r\nX-Origin: origin\r\nTransfer-Encoding: chunked\r\n\r\n8\r\nbonjour!\r\n0\r\n\r\n[1.1 0]\n"
          "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Origin: origin\r\n\r\n[1.1 0]\n");
  const std::string common = "Host: origin.test\r\nUser-Agent: isb-test\r\nAccept: */*\r\n";
  EXPECT_EQ(origin_->Connections(), (std::vector<std::vector<std::string>>{{
                                        "POST /echo HTTP/1.1\r\n" + common +
                                            "Content-Type: application/x-www-form-urlencoded\r\nX-Filtered: sb1\r\n"
                                            "Transfer-Encoding: chunked\r\n\r\n" +
                                            sent,
                                        "GET /hello HTTP/1.1\r\n" + common + "X-Filtered: sb1\r\n\r\n",
                                        "HEAD /hello HTTP/1.1\r\n" + common + "X-Filtered: sb1\r\n\r\n",
                                    }}));
}

TEST_F(InterceptTest, AResponseEndedByCloseEndsTheConnection) {
  std::string out = Curl({Transfer("https://origin.test/close")});
  EXPECT_EQ(out, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end[1.1 1]\n");
}

TEST_F(InterceptTest, AHostThatDiffersFromTheServerNameGets421AndNeverReachesTheOrigin) {
  const std::string url = "https://origin.test/hello";
  std::string out = Curl({Transfer(url), Transfer(url, {"-H", "Host: other.test"})});
  const std::string reason = "the Host header (other.test) differs from the TLS server name (origin.test)";
  EXPECT_EQ(out,
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Origin: origin\r\n\r\nhello[1.1 1]\n"
            "HTTP/1.1 421 Misdirected Request\r\nContent-Type: text/plain\r\nContent-Length: " +
                std::to_string(reason.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + reason + "\n[1.1 0]\n");
  ASSERT_EQ(origin_->Connections().size(), 1u);
  EXPECT_EQ(origin_->Connections()[0].size(), 1u) << "only the first request reached the origin";

  std::string port_out = Curl({Transfer(url, {"-H", "Host: ORIGIN.test:8443"})});
  const std::string port_reason = "the Host header's port (8443) differs from the connection's (" + port_ + ")";
  EXPECT_EQ(port_out, "HTTP/1.1 421 Misdirected Request\r\nContent-Type: text/plain\r\nContent-Length: " +
                          std::to_string(port_reason.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + port_reason +
                          "\n[1.1 1]\n");
  EXPECT_EQ(origin_->Connections().size(), 2u);
  EXPECT_EQ(origin_->Connections()[1].size(), 0u);

  // A Host that agrees, in another case and with the connection's own port, is the same origin.
  std::string same = Curl({Transfer(url, {"-H", "Host: Origin.Test:" + port_})});
  EXPECT_EQ(same, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Origin: origin\r\n\r\nhello[1.1 1]\n");

  std::lock_guard lock(mu_);
  EXPECT_EQ(denials_, (std::vector<std::string>{"sb1 origin.test:" + port_ + " " + reason + " (logged)",
                                                "sb1 origin.test:" + port_ + " " + port_reason}));
  EXPECT_EQ(proxy_->stats().denied.load(), 2u);
}

// A body that ends with the origin's connection is whole only when the origin ended it with close_notify: ended by
// a bare end of the connection (which anyone on the path could cause), the client's connection ends bare too, so
// the client can tell, and is never handed a close_notify the origin did not send.
TEST_F(InterceptTest, AResponseCutShortByABareEndOfTheConnectionIsNotMadeWhole) {
  for (const bool cut : {false, true}) {
    TlsClient client = ConnectTls("origin.test");
    ASSERT_TRUE(client.ssl) << "no TLS connection through the proxy";
    SSL* ssl = client.ssl.get();
    const std::string request =
        std::string("GET ") + (cut ? "/cut" : "/close") + " HTTP/1.1\r\nHost: origin.test\r\n\r\n";
    ASSERT_EQ(SSL_write(ssl, request.data(), static_cast<int>(request.size())), static_cast<int>(request.size()));
    std::string answer;
    char buf[4096];
    int n;
    while ((n = SSL_read(ssl, buf, sizeof buf)) > 0) answer.append(buf, static_cast<size_t>(n));
    const int end = SSL_get_error(ssl, n);
    EXPECT_EQ(answer, cut ? "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npartial"
                          : "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end");
    if (cut) {
      EXPECT_NE(end, SSL_ERROR_ZERO_RETURN) << "the client was told the cut body was whole";
      EXPECT_EQ(SSL_get_shutdown(ssl) & SSL_RECEIVED_SHUTDOWN, 0);
    } else {
      EXPECT_EQ(end, SSL_ERROR_ZERO_RETURN);
    }
  }
}

// A request head is parsed again after every read, and on an intercepted connection a read takes the TLS records
// that have arrived: a head trickling in a byte a record is refused past kMaxHeadReads reads, as on plain HTTP,
// before the origin hears of it (else each such head would cost the event loop time in the square of its length).
// The records go a little apart, until the answer comes: records that arrive together are one read.
TEST_F(InterceptTest, AHeadSentARecordAByteIsRefusedAfterSoManyReads) {
  TlsClient client = ConnectTls("origin.test");
  ASSERT_TRUE(client.ssl) << "no TLS connection through the proxy";
  SSL* ssl = client.ssl.get();
  const std::string start = "GET /hello HTTP/1.1\r\nHost: origin.test\r\nX-Slow: ";
  ASSERT_EQ(SSL_write(ssl, start.data(), static_cast<int>(start.size())), static_cast<int>(start.size()));
  // Without waiting on the socket between records: what arrives first is the session tickets, then the answer.
  const int fd = SSL_get_fd(ssl);
  const int flags = ::fcntl(fd, F_GETFL);
  ASSERT_EQ(::fcntl(fd, F_SETFL, flags | O_NONBLOCK), 0);
  std::string answer;
  char buf[4096];
  int sent = 0;
  for (pollfd readable{fd, POLLIN, 0}; sent < 16 * kMaxHeadReads && answer.empty(); ++sent) {
    if (SSL_write(ssl, "a", 1) != 1) break;  // refused, and closed, meanwhile
    if (::poll(&readable, 1, 1) == 0) continue;
    const int n = SSL_read(ssl, buf, sizeof buf);
    if (n > 0)
      answer.append(buf, static_cast<size_t>(n));
    else if (SSL_get_error(ssl, n) != SSL_ERROR_WANT_READ)
      break;
  }
  ASSERT_EQ(::fcntl(fd, F_SETFL, flags), 0);
  EXPECT_GE(sent, kMaxHeadReads) << "refused before so many reads";
  EXPECT_LT(sent, 16 * kMaxHeadReads) << "never refused";
  for (int n; (n = SSL_read(ssl, buf, sizeof buf)) > 0;) answer.append(buf, static_cast<size_t>(n));
  const std::string reason = kTooManyPieces;
  EXPECT_EQ(answer, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: " +
                        std::to_string(reason.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + reason + "\n");
  for (const auto& requests : origin_->Connections()) EXPECT_TRUE(requests.empty()) << requests.front();
}

// A request whose chunked body is malformed in its first bytes is the client's fault: 400 with the reason, and the
// origin hears nothing of it (the head waits for the body's first bytes).
TEST_F(InterceptTest, AChunkedRequestBodyMalformedInItsFirstBytesIsAnswered400AndNeverReachesTheOrigin) {
  TlsClient client = ConnectTls("origin.test");
  ASSERT_TRUE(client.ssl) << "no TLS connection through the proxy";
  SSL* ssl = client.ssl.get();
  const std::string request =
      "POST /hello HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n";
  ASSERT_EQ(SSL_write(ssl, request.data(), static_cast<int>(request.size())), static_cast<int>(request.size()));
  std::string answer;
  char buf[4096];
  for (int n; (n = SSL_read(ssl, buf, sizeof buf)) > 0;) answer.append(buf, static_cast<size_t>(n));
  const std::string body = "isb: chunk size line does not start with a hexadecimal size\n";
  EXPECT_EQ(answer, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
  for (const auto& requests : origin_->Connections()) EXPECT_TRUE(requests.empty()) << requests.front();
}

// A judged name that is also intercepted: the judge is asked about every request, with its method and path, as on
// plain HTTP; one it refuses gets 403 and never reaches the origin, and the connection ends.
TEST_F(InterceptTest, EachRequestToAJudgedInterceptedNameIsJudged) {
  std::vector<std::string> asked;
  JudgeEverything(&asked, "/denied");
  RestartProxy();
  std::string out =
      Curl({Transfer("https://origin.test/hello"), Transfer("https://origin.test/denied", {"-X", "DELETE"})});
  const std::string reason = "the judge refuses DELETE /denied";
  EXPECT_EQ(out,
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Origin: origin\r\n\r\nhello[1.1 1]\n"
            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: " +
                std::to_string(reason.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + reason + "\n[1.1 0]\n");
  ASSERT_EQ(origin_->Connections().size(), 1u);
  EXPECT_EQ(origin_->Connections()[0].size(), 1u) << "only the first request reached the origin";
  std::lock_guard lock(mu_);
  // The connection (no method or path: TLS), then each request.
  EXPECT_EQ(asked, (std::vector<std::string>{"origin.test  ", "origin.test GET /hello", "origin.test DELETE /denied"}));
}

// A GET with a body to a judged intercepted name is refused before the judge is asked: an origin that ignores
// such a body would read it as a request the judge never saw.
TEST_F(InterceptTest, AJudgedInterceptedNameRefusesAGetWithABody) {
  std::vector<std::string> asked;
  JudgeEverything(&asked);
  RestartProxy();
  std::string out = Curl({Transfer("https://origin.test/hello", {"-X", "GET", "--data", "DELETE /x HTTP/1.1"})});
  const std::string reason =
      "a GET request with a body is refused (an origin may read the body as another request); "
      "send the body with POST";
  EXPECT_EQ(out, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: " +
                     std::to_string(reason.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + reason + "\n[1.1 1]\n");
  EXPECT_EQ(origin_->Connections(), (std::vector<std::vector<std::string>>{{}})) << "nothing reached the origin";
  std::lock_guard lock(mu_);
  EXPECT_EQ(asked, (std::vector<std::string>{"origin.test  "}));
}

// On any intercepted name, judged or not, a GET with a body never reaches the origin (a second request could hide in
// it, for another host).
TEST_F(InterceptTest, AGetWithABodyNeverReachesTheOrigin) {
  std::string out = Curl({Transfer("https://origin.test/hello", {"-X", "GET", "--data", "GET /x HTTP/1.1"})});
  const std::string reason =
      "a GET request with a body is refused (an origin may read the body as another request); "
      "send the body with POST";
  EXPECT_EQ(out, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: " +
                     std::to_string(reason.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + reason + "\n[1.1 1]\n");
  EXPECT_EQ(origin_->Connections(), (std::vector<std::vector<std::string>>{{}})) << "nothing reached the origin";
}

TEST_F(InterceptTest, AnOriginWhoseCertificateDoesNotVerifyGetsTheClientA502WithTheReason) {
  auto expect_502 = [&](const std::string& host, const std::string& why) {
    std::string reason = "cannot verify the TLS certificate of " + host + ":" + port_ + ": " + why;
    EXPECT_EQ(Curl({Transfer("https://" + host + "/hello")}),
              "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: " +
                  std::to_string(reason.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + reason + "\n[1.1 1]\n");
  };
  expect_502("untrusted.test", "unable to get local issuer certificate");
  expect_502("wrongname.test", "hostname mismatch");
  EXPECT_EQ(untrusted_->Connections(), (std::vector<std::vector<std::string>>{{}})) << "no request reached it";
  EXPECT_EQ(origin_->Connections(), (std::vector<std::vector<std::string>>{{}}));
}

TEST_F(InterceptTest, AnOriginThatCannotBeReachedGetsTheClientA502) {
  std::string out = Curl({Transfer("https://down.test/hello")});
  std::string reason = "cannot reach down.test:" + port_ + ": no route to down.test";
  EXPECT_EQ(out, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: " +
                     std::to_string(reason.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + reason + "\n[1.1 1]\n");
}

TEST_F(InterceptTest, ANameNotMarkedPassesThroughWithTheOriginsOwnCertificate) {
  std::vector<std::string> t = Transfer("https://plain.test/hello", {}, origins_ca_file_);
  t[t.size() - 2] = "[%{http_version} %{num_connects}]\n%{certs}";
  std::string out = Curl({t});
  EXPECT_TRUE(
      out.starts_with("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Origin: origin\r\n\r\nhello[1.1 1]\n"
                      "Subject:CN = plain.test\nIssuer:CN = isb sandbox CA test origins\n"))
      << out;
  // The sandbox's CA does not vouch for it: nothing was minted.
  std::vector<std::string> sandbox_trust = Transfer("https://plain.test/hello");
  sandbox_trust[sandbox_trust.size() - 2] = "%{ssl_verify_result}";
  EXPECT_EQ(Curl({sandbox_trust}), "20");
  // Both connections went to the origin itself; the second ended when curl refused the origin's certificate.
  EXPECT_EQ(plain_->Connections().size(), 2u);
  EXPECT_EQ(plain_->ServerNames(), std::vector<std::string>{"plain.test"});
}

// CONNECT to a marked name (a client that uses HTTPS_PROXY) is intercepted as its SNI would be; to a name not
// marked, the tunnel carries the origin's own TLS.
TEST_F(InterceptTest, ConnectToAMarkedNameIsInterceptedToo) {
  RestartAsExplicitProxy();
  const std::string proxy = "http://127.0.0.1:" + port_;
  std::string marked = Curl({{"-sS", "-x", proxy, "--cacert", sandbox_ca_file_, "-A", "isb-test", "-w", "%{certs}",
                              "https://origin.test/hello"}});
  EXPECT_TRUE(marked.starts_with("helloSubject:CN = origin.test\nIssuer:CN = isb sandbox CA sb1\n")) << marked;
  EXPECT_EQ(origin_->Connections(),
            (std::vector<std::vector<std::string>>{
                {"GET /hello HTTP/1.1\r\nHost: origin.test\r\nUser-Agent: isb-test\r\nAccept: */*\r\n\r\n"}}));
  std::string plain =
      Curl({{"-sS", "-x", proxy, "--cacert", origins_ca_file_, "-w", "%{certs}", "https://plain.test/hello"}});
  EXPECT_TRUE(plain.starts_with("helloSubject:CN = plain.test\nIssuer:CN = isb sandbox CA test origins\n")) << plain;
}

}  // namespace
}  // namespace isb::egress

namespace isb::egress {
namespace {

TEST(InterceptSetup, AnEgressCaFileThatIsNotPemCertificatesStopsTheProxyFromStarting) {
  char path[] = "/tmp/isb-egress-ca-XXXXXX";
  Fd file(::mkstemp(path));
  ASSERT_TRUE(file.valid());
  ASSERT_TRUE(WriteFile(path, "not a certificate\n").ok());
  ProxyHooks h;
  h.intercept = [](const std::string&, const std::string&, uint16_t) { return false; };
  ProxyOptions o;
  o.listen_address = "127.0.0.1";
  o.intercept.minter = std::make_shared<CertMinter>();
  o.intercept.upstream_ca_file = path;
  Result<std::unique_ptr<Proxy>> p = Proxy::Start(o, h);
  ::unlink(path);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, Code::kInvalidArgument);
  EXPECT_EQ(p.error().message,
            std::string("--egress-ca ") + path + ": cannot load it as PEM certificates: no certificate or crl found");

  o.intercept.minter = nullptr;
  o.intercept.upstream_ca_file = "";
  Result<std::unique_ptr<Proxy>> without_minter = Proxy::Start(o, h);
  ASSERT_FALSE(without_minter.ok());
  EXPECT_EQ(without_minter.error().message, "interception needs a certificate minter");
}

}  // namespace
}  // namespace isb::egress
