// The proxy's connection handling, on loopback: a sandbox stand-in connects straight to the proxy (the redirect from
// a listed port is the firewall's, tested in tests/net), an echo server stands in for the internet.
#include "egress/proxy.h"

#include "egress/body_relay.h"
#include "egress/classify.h"
#include "egress/explicit_proxy.h"
#include "egress/replacing_filter.h"
#include "egress/sandbox_traffic.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace isb::egress {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Echoes every byte back, many connections at once; half-closes after the peer does.
class EchoServer {
 public:
  EchoServer() : acceptor_(ioc_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)) {
    asio::co_spawn(ioc_, Accept(), asio::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~EchoServer() {
    ioc_.stop();
    thread_.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  asio::awaitable<void> Accept() {
    for (;;) {
      auto [ec, s] = co_await acceptor_.async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec == asio::error::operation_aborted) co_return;
      if (ec) {
        // EMFILE while a test holds the descriptor table full: the next accept may succeed.
        asio::steady_timer pause(ioc_, std::chrono::milliseconds(10));
        co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
        continue;
      }
      asio::co_spawn(ioc_, Echo(std::move(s)), asio::detached);
    }
  }
  static asio::awaitable<void> Echo(tcp::socket s) {
    char buf[65536];
    for (;;) {
      auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
      if (ec) break;
      auto [wec, m] = co_await asio::async_write(s, asio::buffer(buf, n), asio::as_tuple(asio::use_awaitable));
      if (wec) co_return;
    }
    boost::system::error_code ec;
    s.shutdown(tcp::socket::shutdown_send, ec);
  }
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  std::thread thread_;
};

// A TCP listener (backlog 1) on 127.0.0.1 at a port the kernel picks, written to *port.
Fd LoopbackListener(uint16_t* port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd.get(), 1) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ADD_FAILURE() << "origin listener: " << std::strerror(errno);
  }
  *port = ntohs(a.sin_port);
  return fd;
}

// The one connection a test origin serves, accepted within 5 s (else an invalid Fd), its reads timing out after 5 s.
Fd AcceptOne(const Fd& listener) {
  pollfd p{listener.get(), POLLIN, 0};
  if (::poll(&p, 1, 5000) != 1) return Fd();
  Fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  timeval tv{5, 0};
  ::setsockopt(c.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return c;
}

// A test origin's one connection: listens on a loopback port, and serves the connection accepted there (within 5 s)
// with `serve` on a thread of its own (none accepted: nothing is served, and a test fails on what its client got),
// joined by Join or the destructor. An origin declares it after what `serve` uses, so that it is joined first.
class OneConnection {
 public:
  explicit OneConnection(std::function<void(Fd&)> serve) {
    listener_ = LoopbackListener(&port_);
    thread_ = std::thread([this, serve = std::move(serve)] {
      Fd c = AcceptOne(listener_);
      if (c.valid()) serve(c);
    });
  }
  ~OneConnection() { Join(); }
  uint16_t port() const { return port_; }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  Fd listener_;
  uint16_t port_ = 0;
  std::thread thread_;
};

// An origin for one connection: answers the first request head with `response` and resets the connection at once
// (a close with SO_LINGER 0), so that the answer and the reset reach the proxy together.
class ResettingOrigin {
 public:
  explicit ResettingOrigin(std::string response) : response_(std::move(response)) {}
  uint16_t port() const { return conn_.port(); }

 private:
  void Serve(Fd& c) {
    std::string in;
    char buf[4096];
    while (in.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
    ::send(c.get(), response_.data(), response_.size(), MSG_NOSIGNAL);
    linger reset{1, 0};
    ::setsockopt(c.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  }

  std::string response_;
  OneConnection conn_{[this](Fd& c) { Serve(c); }};
};

// An origin for one connection: answers the first request head with `response`, then echoes every byte it gets,
// keeping them (received()) until the connection ends.
class AnsweringOrigin {
 public:
  explicit AnsweringOrigin(std::string response) : response_(std::move(response)) {}
  uint16_t port() const { return conn_.port(); }
  // What came after the first head; call once the connection has ended.
  const std::string& received() {
    conn_.Join();
    return after_;
  }

 private:
  void Serve(Fd& c) {
    std::string in;
    char buf[4096];
    size_t end;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
    after_ = in.substr(end + 4);
    ::send(c.get(), response_.data(), response_.size(), MSG_NOSIGNAL);
    if (!after_.empty()) ::send(c.get(), after_.data(), after_.size(), MSG_NOSIGNAL);
    for (;;) {
      ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
      if (n <= 0) return;
      after_.append(buf, static_cast<size_t>(n));
      ::send(c.get(), buf, static_cast<size_t>(n), MSG_NOSIGNAL);
    }
  }

  std::string response_;
  std::string after_;
  OneConnection conn_{[this](Fd& c) { Serve(c); }};
};

// An origin that ignores request bodies ("CL.0", as many back ends do on GET): it reads request heads one after
// another from its connection's bytes, answers each with an empty 200, and logs the Host of every head it parses.
class BodyIgnoringOrigin {
 public:
  uint16_t port() const { return conn_.port(); }
  // The Host of each head parsed; call once the connection has ended.
  const std::vector<std::string>& hosts() {
    conn_.Join();
    return hosts_;
  }

 private:
  void Serve(Fd& c) {
    std::string in;
    char buf[4096];
    for (;;) {
      size_t end;
      while ((end = in.find("\r\n\r\n")) != std::string::npos) {
        const std::string head = in.substr(0, end);
        in.erase(0, end + 4);
        size_t h = head.find("\r\nHost: ");
        hosts_.push_back(h == std::string::npos ? "" : head.substr(h + 8, head.find("\r\n", h + 8) - h - 8));
        const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        ::send(c.get(), ok.data(), ok.size(), MSG_NOSIGNAL);
      }
      ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
  }

  std::vector<std::string> hosts_;
  OneConnection conn_{[this](Fd& c) { Serve(c); }};
};

// Hosts: "allowed.test" reaches the echo server (or origin_port_ when a test sets it); everything else is refused.
// "TLS:NAME\n" stands for a TLS ClientHello naming NAME.
Sniff TestClassifier(std::string_view bytes, uint16_t, bool explicit_proxy) {
  Sniff s;
  if (bytes.find("\r\n\r\n") == std::string_view::npos &&
      (bytes.starts_with("GET") || bytes.starts_with("POST") || bytes.starts_with("CONNECT")))
    return s;
  s.state = Sniff::State::kDone;
  if (!explicit_proxy && bytes.starts_with("TLS:")) {
    s.kind = Sniff::Kind::kTls;
    s.host = std::string(bytes.substr(4, bytes.find('\n') - 4));
    return s;
  }
  if (explicit_proxy && bytes.starts_with("CONNECT ")) {
    s.kind = Sniff::Kind::kConnect;
    size_t end = bytes.find(' ', 8);
    std::string_view authority = bytes.substr(8, end - 8);
    size_t colon = authority.rfind(':');
    s.host = std::string(authority.substr(0, colon));
    s.port = static_cast<uint16_t>(std::stoi(std::string(authority.substr(colon + 1))));
    s.upstream_prefix = std::string(bytes.substr(bytes.find("\r\n\r\n") + 4));
    return s;
  }
  if (bytes.starts_with("GET ") || bytes.starts_with("POST ")) {
    s.kind = Sniff::Kind::kHttp;
    size_t h = bytes.find("Host: ");
    if (h == std::string_view::npos) {
      s.state = Sniff::State::kMalformed;
      s.reason = "no Host header";
      return s;
    }
    s.host = std::string(bytes.substr(h + 6, bytes.find("\r\n", h) - h - 6));
    const size_t space = bytes.find(' ');
    s.method = std::string(bytes.substr(0, space));
    s.path = std::string(bytes.substr(space + 1, bytes.find(' ', space + 1) - space - 1));
  }
  return s;
}

class ProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // As `isb serve` does (proxy.h): a splice into a socket its peer has reset raises SIGPIPE, and a relay may still
    // be splicing after a test's body has returned, until TearDown stops the proxy.
    ::signal(SIGPIPE, SIG_IGN);
    ProxyHooks h;
    h.classify = TestClassifier;
    h.sandbox = [](uint32_t addr) -> std::optional<std::string> {
      if (addr == INADDR_LOOPBACK) return "sb1";
      return std::nullopt;
    };
    h.host_for_port = [this](const std::string&, uint16_t port) -> std::optional<std::string> {
      if (port == fallback_port_) return "allowed.test";
      return std::nullopt;
    };
    h.decide = [this](const std::string& sandbox, const std::string& host, uint16_t, const std::string& method,
                      const std::string& path) {
      {
        std::lock_guard lock(mu_);
        decided_.push_back(host + " " + method + " " + path);
      }
      // Paths under /judged/ are decided per request ("denied" in them refused); others by host alone.
      const bool judged = path.starts_with("/judged/");
      if (judged && path.find("denied") != std::string::npos)
        return Admission{false, "the judge refuses " + method + " " + path, true};
      if (sandbox == "sb1" && host == "allowed.test") return Admission{true, "", judged};
      return Admission{false, "egress to " + host + " is not allowed for this sandbox"};
    };
    h.dial = [this](const std::string& host, uint16_t) -> Result<Fd> {
      if (host != "allowed.test") return Error::Msg("test dialer knows only allowed.test");
      if (int ms = slow_dial_ms_; ms > 0) {  // a name slow to answer: how many such dials run at once
        int now = ++dialing_;
        for (int seen = max_dialing_; now > seen && !max_dialing_.compare_exchange_weak(seen, now);) {
        }
        ::usleep(static_cast<useconds_t>(ms) * 1000);
        --dialing_;
      }
      Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      const uint16_t origin = origin_port_;
      a.sin_port = htons(origin != 0 ? origin : echo_.port());
      if (::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return Error::Sys("connect");
      return s;
    };
    h.on_deny = [this](const std::string& sandbox, const std::string& target, const std::string& reason, bool first) {
      std::lock_guard lock(mu_);
      denials_.push_back(sandbox + " " + target + " " + reason + (first ? " (logged)" : ""));
    };
    ProxyOptions o;
    o.listen_address = "127.0.0.1";
    o.sniff_timeout_ms = 2000;  // generous: a loaded machine may be slow to send
    o.connections_per_sandbox = connections_per_sandbox_;
    o.relay_idle_ms = relay_idle_ms_;
    o.filter = filter_;
    Result<std::unique_ptr<Proxy>> p = Proxy::Start(o, h);
    ASSERT_TRUE(p.ok()) << p.error().message;
    proxy_ = std::move(*p);
    fallback_port_ = proxy_->port();
  }

  void TearDown() override {
    // Every connection the test opened is closed by now: the proxy holds none.
    for (int i = 0; i < 100 && proxy_ && proxy_->stats().active != 0; ++i) ::usleep(20000);
    if (proxy_) {
      EXPECT_EQ(proxy_->stats().active.load(), 0u);
    }
  }

  Fd Connect() {
    Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(proxy_->port());
    EXPECT_EQ(::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
    timeval tv{5, 0};
    ::setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return s;
  }

  static void SendAll(int fd, const std::string& bytes) {
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }

  // Reads until `n` bytes, end of stream, or 10 s without a byte (a test that fails, not one that hangs).
  static std::string ReadN(int fd, size_t n) {
    std::string out;
    char buf[65536];
    while (out.size() < n) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 10000) != 1) break;
      ssize_t r = ::recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
      if (r <= 0) break;
      out.append(buf, static_cast<size_t>(r));
    }
    return out;
  }

  static std::string ReadToEnd(int fd) { return ReadN(fd, 1 << 20); }

  // Sends `request` then `payload` on `c` from a thread of its own and half-closes, while reading what comes back
  // (the echo server's copy) until the end: a body larger than the sockets' buffers cannot wait for the reading.
  static std::string SendAndReadBack(int c, const std::string& request, const std::string& payload) {
    std::thread writer([&] {
      SendAll(c, request);
      SendAll(c, payload);
      ::shutdown(c, SHUT_WR);
    });
    std::string back = ReadN(c, request.size() + payload.size() + 1);
    writer.join();
    return back;
  }

  // Once every connection has ended, each relay has counted all it moved.
  void WaitForNoConnection() {
    for (int i = 0; i < 500 && proxy_->stats().active.load() != 0; ++i) ::usleep(10000);
    ASSERT_EQ(proxy_->stats().active.load(), 0u);
  }

  // The proxy again with its own port as the explicit one (where HTTP_PROXY points), classifying with `classify`,
  // allowing allowed.test on ports 80 and 443 and dialling the echo server.
  void RestartAsExplicitProxy(Classifier classify) {
    proxy_.reset();
    ProxyOptions o;
    o.listen_address = "127.0.0.1";
    ProxyHooks h;
    h.classify = std::move(classify);
    h.sandbox = [](uint32_t) { return std::optional<std::string>("sb1"); };
    h.host_for_port = [](const std::string&, uint16_t) { return std::optional<std::string>(); };
    h.decide = [](const std::string&, const std::string& host, uint16_t port, const std::string&, const std::string&) {
      return Admission{host == "allowed.test" && (port == 443 || port == 80), "egress to " + host + " is not allowed"};
    };
    uint16_t echo_port = echo_.port();
    h.dial = [echo_port](const std::string&, uint16_t) -> Result<Fd> {
      Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(echo_port);
      if (::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return Error::Sys("connect");
      return s;
    };
    h.on_deny = [this](const std::string& sandbox, const std::string& target, const std::string& reason, bool first) {
      std::lock_guard lock(mu_);
      denials_.push_back(sandbox + " " + target + " " + reason + (first ? " (logged)" : ""));
    };
    Result<std::unique_ptr<Proxy>> p = StartOnExplicitPort(o, h);
    ASSERT_TRUE(p.ok()) << p.error().message;
    proxy_ = std::move(*p);
  }

  EchoServer echo_;
  std::unique_ptr<Proxy> proxy_;
  uint16_t fallback_port_ = 0;
  std::atomic<uint16_t> origin_port_ = 0;  // where allowed.test is dialled when not 0, else the echo server
  std::atomic<int> slow_dial_ms_ = 0;      // when not 0, each dial of allowed.test first sleeps this long
  std::atomic<int> dialing_ = 0, max_dialing_ = 0;
  int connections_per_sandbox_ = 4096;     // set before SetUp to try a smaller limit
  int relay_idle_ms_ = 3600 * 1000;        // likewise
  std::shared_ptr<MessageFilter> filter_;  // likewise
  std::mutex mu_;
  std::vector<std::string> denials_;
  std::vector<std::string> decided_;  // "host method path" of each decision asked for
};

TEST_F(ProxyTest, AnAllowedNameIsRelayedUntouchedBothWaysWithHalfClose) {
  Fd c = Connect();
  std::string request = "POST /items?x=1 HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 8\r\n\r\n";
  SendAll(c.get(), request);
  EXPECT_EQ(ReadN(c.get(), request.size()), request);
  {
    std::lock_guard lock(mu_);
    EXPECT_EQ(decided_, std::vector<std::string>{"allowed.test POST /items?x=1"}) << "the judge sees method and path";
  }
  SendAll(c.get(), std::string("\0binary\xff", 8));  // the body
  EXPECT_EQ(ReadN(c.get(), 8), std::string("\0binary\xff", 8));
  ::shutdown(c.get(), SHUT_WR);
  EXPECT_EQ(ReadToEnd(c.get()), "") << "the upstream's half-close came back as end of stream";
  EXPECT_EQ(proxy_->stats().allowed.load(), 1u);
}

TEST_F(ProxyTest, ARefusedNameGetsA403WithTheReasonAndIsLoggedOncePerWindow) {
  for (int i = 0; i < 2; ++i) {
    Fd c = Connect();
    SendAll(c.get(), "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n");
    EXPECT_EQ(ReadToEnd(c.get()),
              "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 57\r\nConnection: close\r\n\r\n"
              "isb: egress to evil.test is not allowed for this sandbox\n");
  }
  std::lock_guard lock(mu_);
  ASSERT_EQ(denials_.size(), 2u);
  EXPECT_EQ(denials_[0], "sb1 evil.test:" + std::to_string(proxy_->port()) +
                             " egress to evil.test is not allowed for this sandbox (logged)");
  EXPECT_EQ(denials_[1],
            "sb1 evil.test:" + std::to_string(proxy_->port()) + " egress to evil.test is not allowed for this sandbox");
  EXPECT_EQ(proxy_->stats().denied.load(), 2u);
}

TEST_F(ProxyTest, MalformedHttpGetsA400AndSilenceGetsClosed) {
  Fd c = Connect();
  SendAll(c.get(), "GET / HTTP/1.1\r\nX: y\r\n\r\n");
  EXPECT_EQ(ReadToEnd(c.get()),
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 20\r\nConnection: close\r\n\r\n"
            "isb: no Host header\n");
  Fd quiet = Connect();
  SendAll(quiet.get(), "GET / HT");  // then nothing: closed after the sniff timeout, nothing sent back
  EXPECT_EQ(ReadToEnd(quiet.get()), "");
}

TEST_F(ProxyTest, AConnectionWithoutANameGoesToTheOneHostListedOnItsPort) {
  Fd c = Connect();
  SendAll(c.get(), "\x01raw protocol");
  EXPECT_EQ(ReadN(c.get(), 13), "\x01raw protocol");
}

TEST_F(ProxyTest, ExplicitConnectAnswers200AndThenRelays) {
  RestartAsExplicitProxy(TestClassifier);
  Fd c = Connect();
  SendAll(c.get(), "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\nhello");
  EXPECT_EQ(ReadN(c.get(), 39 + 5), "HTTP/1.1 200 Connection established\r\n\r\nhello");
  Fd d = Connect();
  SendAll(d.get(), "CONNECT allowed.test:22 HTTP/1.1\r\nHost: allowed.test:22\r\n\r\n");
  EXPECT_EQ(ReadToEnd(d.get()).substr(0, 24), "HTTP/1.1 403 Forbidden\r\n");
}

// What a CONNECT tunnel carries is checked before it goes on: plain HTTP (whose Host no one would check) and TLS
// naming another host close it unrelayed; TLS for the CONNECT's host, and protocols without a name, pass.
TEST_F(ProxyTest, AConnectTunnelCarriesNoPlainHttpAndNoOtherHostsTls) {
  RestartAsExplicitProxy(TestClassifier);
  const std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
  for (const std::string& inside :
       {std::string("GET /x HTTP/1.1\r\nHost: other.test\r\n\r\n"),
        std::string("GET /x HTTP/1.1\r\nHost: allowed.test\r\n\r\n"), std::string("TLS:other.test\n")}) {
    Fd c = Connect();
    SendAll(c.get(), "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n" + inside);
    // The echo server would send back whatever reached it.
    EXPECT_EQ(ReadToEnd(c.get()), established) << inside;
  }
  Fd tls = Connect();
  SendAll(tls.get(), "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\nTLS:allowed.test\n");
  EXPECT_EQ(ReadN(tls.get(), established.size() + 17), established + "TLS:allowed.test\n");
  // A request line alone is enough to refuse: the tunnel closes without waiting for the rest of its head.
  Fd line = Connect();
  SendAll(line.get(), "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\nGET / HTTP/1.1\r\n");
  EXPECT_EQ(ReadN(line.get(), established.size()), established);
  pollfd closed{line.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&closed, 1, 3000), 1) << "the tunnel waited for the rest of the head";
  char byte = 0;
  EXPECT_EQ(::recv(line.get(), &byte, 1, 0), 0);
}

// With the daemon's classifier: a line protocol whose first line looks like the start of a request (SMTP's EHLO)
// goes on at its first line, as its client waits for the answer and sends no blank line.
TEST_F(ProxyTest, AConnectTunnelPassesALineProtocolAtItsFirstLine) {
  RestartAsExplicitProxy(ClassifyConnection);
  const std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
  Fd smtp = Connect();
  SendAll(smtp.get(), "CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\nEHLO sandbox.test\r\n");
  EXPECT_EQ(ReadN(smtp.get(), established.size() + 19), established + "EHLO sandbox.test\r\n");
}

// With the daemon's classifier: what a tunnel carries is told apart before any of it goes on, or the tunnel closes.
// An HTTP request line with blanks after its version, or naming another version (HTTP/2's preface), is HTTP; bytes
// that could still be either after all the bytes a head may take are never relayed undecided.
TEST_F(ProxyTest, AConnectTunnelRelaysNothingItCouldNotTellApart) {
  RestartAsExplicitProxy(ClassifyConnection);
  const std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
  const std::string connect = "CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n";
  for (const std::string& inside :
       {std::string("GET / HTTP/1.1 \r\nHost: other.test\r\n\r\n"),
        std::string("GET / http/1.1\t\r\nHost: other.test\r\n\r\n"), std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")}) {
    Fd c = Connect();
    SendAll(c.get(), connect + inside);
    EXPECT_EQ(ReadToEnd(c.get()), established) << inside;  // the echo server would send back what reached it
  }
  // A first line that never ends: past the most a head may take (64 KiB), still undecided.
  Fd endless = Connect();
  SendAll(endless.get(), connect);
  ASSERT_EQ(ReadN(endless.get(), established.size()), established);
  const std::string line = "GET /" + std::string(80 << 10, 'a');
  for (size_t sent = 0; sent < line.size();) {
    ssize_t n = ::send(endless.get(), line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // refused and closed meanwhile
    sent += static_cast<size_t>(n);
  }
  EXPECT_EQ(ReadToEnd(endless.get()), "");
}

// With the daemon's classifier: a tunnel whose bytes begin with an empty line (which servers skip before a request)
// is taken for the HTTP it is, refused and closed; none of it reaches the origin.
TEST_F(ProxyTest, AConnectTunnelBeginningWithAnEmptyLineIsRefusedUnrelayed) {
  RestartAsExplicitProxy(ClassifyConnection);
  const std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
  Fd c = Connect();
  SendAll(c.get(),
          "CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n"
          "\r\nGET /?k=PLACEHOLDER HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
  EXPECT_EQ(ReadToEnd(c.get()), established);  // the echo server would send back what reached it
  std::lock_guard lock(mu_);
  ASSERT_EQ(denials_.size(), 1u);
  EXPECT_EQ(denials_[0],
            "sb1 allowed.test:80 a CONNECT tunnel carries no plain HTTP: send http:// requests to the "
            "proxy as they are, each is checked (logged)");
}

TEST_F(ProxyTest, BulkTransferArrivesWhole) {
  Fd c = Connect();
  std::string request = "POST / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 33554432\r\n\r\n";
  std::string payload(32 << 20, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 131 % 251);
  std::string back = SendAndReadBack(c.get(), request, payload);
  ASSERT_EQ(back.size(), request.size() + payload.size());
  EXPECT_TRUE(back == request + payload);
}

// A plain HTTP connection's bytes (a head, then a body large enough to be spliced) are counted for its sandbox each
// way, exactly as the proxy's totals count them; another sandbox's stay 0 and an untracked one has none.
TEST_F(ProxyTest, BytesRelayedAreCountedForTheirSandboxEachWay) {
  proxy_->traffic().Track("sb1");
  proxy_->traffic().Track("sb2");
  Fd c = Connect();
  std::string request = "POST / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 4194304\r\n\r\n";
  std::string payload(4 << 20, 'x');
  ASSERT_EQ(SendAndReadBack(c.get(), request, payload).size(), request.size() + payload.size());
  c = Fd();
  WaitForNoConnection();
  const uint64_t n = request.size() + payload.size();  // the echo server sends back what it got
  EXPECT_EQ(proxy_->traffic().Read("sb1"), (TrafficTotals{n, n}));
  EXPECT_EQ(proxy_->stats().bytes_up.load(), n);
  EXPECT_EQ(proxy_->stats().bytes_down.load(), n);
  EXPECT_EQ(proxy_->traffic().Read("sb2"), (TrafficTotals{0, 0}));
  EXPECT_EQ(proxy_->traffic().Read("sb3"), std::nullopt);

  // A connection without a name (relayed untouched) adds to the same counters.
  Fd raw = Connect();
  SendAll(raw.get(), "\x01raw protocol");
  EXPECT_EQ(ReadN(raw.get(), 13), "\x01raw protocol");
  raw = Fd();
  WaitForNoConnection();
  EXPECT_EQ(proxy_->traffic().Read("sb1"), (TrafficTotals{n + 13, n + 13}));
}

// A CONNECT tunnel counts what it carries (not the CONNECT request and its answer, which are the proxy's own);
// a forgotten sandbox's bytes are no longer counted anywhere it can be read.
TEST_F(ProxyTest, ATunnelsBytesAreCountedForItsSandboxUntilItIsForgotten) {
  RestartAsExplicitProxy(TestClassifier);
  proxy_->traffic().Track("sb1");
  Fd c = Connect();
  SendAll(c.get(), "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\nhello");
  EXPECT_EQ(ReadN(c.get(), 39 + 5), "HTTP/1.1 200 Connection established\r\n\r\nhello");
  SendAll(c.get(), "world!");
  EXPECT_EQ(ReadN(c.get(), 6), "world!");
  c = Fd();
  WaitForNoConnection();
  EXPECT_EQ(proxy_->traffic().Read("sb1"), (TrafficTotals{11, 11}));
  proxy_->traffic().Track("sb1");  // tracked again (started again): the counts stay
  EXPECT_EQ(proxy_->traffic().Read("sb1"), (TrafficTotals{11, 11}));
  proxy_->traffic().Forget("sb1");
  EXPECT_EQ(proxy_->traffic().Read("sb1"), std::nullopt);
  EXPECT_EQ(proxy_->traffic().Find("sb1"), nullptr);
  Fd d = Connect();
  SendAll(d.get(), "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\nagain");
  EXPECT_EQ(ReadN(d.get(), 39 + 5), "HTTP/1.1 200 Connection established\r\n\r\nagain");
  d = Fd();
  WaitForNoConnection();
  EXPECT_EQ(proxy_->traffic().Read("sb1"), std::nullopt) << "an untracked sandbox's connection makes no entry";
  EXPECT_EQ(proxy_->stats().bytes_up.load(), 16u) << "the totals count it all the same";
}

// A connection keeps the counters it found when it began: forgotten (its sandbox removed) while it still runs, it
// counts on into them, never into the entry tracked afresh under that id, and nothing is freed under it.
TEST_F(ProxyTest, AConnectionOutlivingItsForgottenCountersNeverCountsIntoANewEntry) {
  RestartAsExplicitProxy(TestClassifier);
  proxy_->traffic().Track("sb1");
  Fd c = Connect();
  SendAll(c.get(), "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\nhello");
  EXPECT_EQ(ReadN(c.get(), 39 + 5), "HTTP/1.1 200 Connection established\r\n\r\nhello");
  EXPECT_EQ(proxy_->traffic().Read("sb1"), (TrafficTotals{5, 5}));
  proxy_->traffic().Forget("sb1");
  proxy_->traffic().Track("sb1");
  SendAll(c.get(), "later!");
  EXPECT_EQ(ReadN(c.get(), 6), "later!");
  c = Fd();
  WaitForNoConnection();
  EXPECT_EQ(proxy_->traffic().Read("sb1"), (TrafficTotals{0, 0}));
  EXPECT_EQ(proxy_->stats().bytes_up.load(), 11u);
  Fd d = Connect();
  SendAll(d.get(), "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\nnew");
  EXPECT_EQ(ReadN(d.get(), 39 + 3), "HTTP/1.1 200 Connection established\r\n\r\nnew");
  d = Fd();
  WaitForNoConnection();
  EXPECT_EQ(proxy_->traffic().Read("sb1"), (TrafficTotals{3, 3}));
}

// Small messages go through a buffer and bulk through splice: one connection switches between the two ways and
// back, each message arriving whole and in order.
// Request bodies (framed by Content-Length) too; a bulk body is followed by the next request head.
TEST_F(ProxyTest, SmallMessagesAndBulkAlternateOnOneConnection) {
  Fd c = Connect();
  std::string request = "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
  SendAll(c.get(), request);
  ASSERT_EQ(ReadN(c.get(), request.size()), request);
  auto post = [](const std::string& body) {
    return "POST /up HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
           body;
  };
  for (int round = 0; round < 3; ++round) {
    std::string small = post("ping " + std::to_string(round));
    SendAll(c.get(), small);
    ASSERT_EQ(ReadN(c.get(), small.size()), small) << "round " << round;
    std::string bulk = post(std::string((1 << 20) + round, static_cast<char>('a' + round)));
    std::thread writer([&] { SendAll(c.get(), bulk); });
    std::string back = ReadN(c.get(), bulk.size());
    writer.join();
    ASSERT_TRUE(back == bulk) << "round " << round << ": " << back.size() << " bytes back";
  }
  std::string last = post("last");
  SendAll(c.get(), last);
  ::shutdown(c.get(), SHUT_WR);
  EXPECT_EQ(ReadToEnd(c.get()), last);
}

// The client sends its request and half-closes; the origin answers and resets at once. The answer still reaches the
// client, and the proxy lets the connection go (TearDown: none left), though the reset came with the answer's bytes.
TEST_F(ProxyTest, AnAnswerFollowedByAResetAfterTheClientHalfClosedArrivesAndTheConnectionIsLetGo) {
  const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  ResettingOrigin origin(answer);
  origin_port_ = origin.port();
  Fd c = Connect();
  SendAll(c.get(), "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
  ::shutdown(c.get(), SHUT_WR);
  EXPECT_EQ(ReadToEnd(c.get()), answer);
}

// Keep-alive: every request head on a plain HTTP connection is checked, not only the first. A second request for
// another host gets the 403 with its reason and the connection closes; the origin never sees it.
TEST_F(ProxyTest, ALaterRequestForAnotherHostOnTheSameConnectionIsRefused) {
  Fd c = Connect();
  std::string first = "GET /a HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
  SendAll(c.get(), first);
  ASSERT_EQ(ReadN(c.get(), first.size()), first);
  std::string same = "GET /b HTTP/1.1\r\nHost: ALLOWED.test\r\n\r\n";
  SendAll(c.get(), same);
  ASSERT_EQ(ReadN(c.get(), same.size()), same);
  SendAll(c.get(), "GET /c HTTP/1.1\r\nHost: evil.test\r\n\r\n");
  const std::string port = std::to_string(proxy_->port());
  const std::string reason = "egress to evil.test:" + port + " on a connection to allowed.test:" + port +
                             " is refused: one host per connection";
  EXPECT_EQ(ReadToEnd(c.get()), "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: " +
                                    std::to_string(reason.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + reason +
                                    "\n");
  std::lock_guard lock(mu_);
  EXPECT_EQ(denials_, std::vector<std::string>{"sb1 evil.test:" + port + " " + reason + " (logged)"});
  EXPECT_EQ(decided_, std::vector<std::string>{"allowed.test GET /a"}) << "a name not judged is decided once";
}

// Through the explicit proxy each absolute-form request is rewritten to origin form, and each is checked: another
// port is another upstream, refused like another host.
TEST_F(ProxyTest, ExplicitProxyRequestsAreEachRewrittenAndChecked) {
  RestartAsExplicitProxy(ClassifyConnection);
  Fd c = Connect();
  for (const char* path : {"/a", "/b?x=1"}) {
    SendAll(c.get(), std::string("GET http://allowed.test") + path +
                         " HTTP/1.1\r\nHost: allowed.test\r\nProxy-Connection: keep-alive\r\n\r\n");
    std::string origin_form = std::string("GET ") + path + " HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
    ASSERT_EQ(ReadN(c.get(), origin_form.size()), origin_form);
  }
  SendAll(c.get(), "GET http://allowed.test:8080/ HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n");
  const std::string reason =
      "egress to allowed.test:8080 on a connection to allowed.test:80 is refused: one host per connection";
  EXPECT_EQ(ReadToEnd(c.get()), "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: " +
                                    std::to_string(reason.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + reason +
                                    "\n");
}

// Bodies are skipped by their framing: a request inside a body is data, and the head after the body is checked.
TEST_F(ProxyTest, ARequestInsideABodyIsDataAndTheHeadAfterItIsChecked) {
  Fd c = Connect();
  const std::string inner = "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n";
  std::string sized =
      "POST /a HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: " + std::to_string(inner.size()) + "\r\n\r\n" + inner;
  SendAll(c.get(), sized);
  ASSERT_EQ(ReadN(c.get(), sized.size()), sized);
  std::string chunked = "POST /b HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n" +
                        std::string("5\r\nGET /\r\n1e\r\n HTTP/1.1\r\nHost: evil.test\r\n\r\n\r\n0\r\n\r\n");
  SendAll(c.get(), chunked);
  ASSERT_EQ(ReadN(c.get(), chunked.size()), chunked);
  SendAll(c.get(), inner);
  EXPECT_EQ(ReadToEnd(c.get()).substr(0, 24), "HTTP/1.1 403 Forbidden\r\n");
  std::lock_guard lock(mu_);
  EXPECT_EQ(denials_.size(), 1u);
}

// A judged name (the decision depends on method and path): each request on the connection is decided.
TEST_F(ProxyTest, EveryRequestToAJudgedNameIsDecided) {
  Fd c = Connect();
  for (const char* path : {"/judged/1", "/judged/2"}) {
    std::string request = std::string("GET ") + path + " HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
    SendAll(c.get(), request);
    ASSERT_EQ(ReadN(c.get(), request.size()), request);
  }
  SendAll(c.get(), "DELETE /judged/denied HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
  EXPECT_EQ(ReadToEnd(c.get()),
            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 45\r\nConnection: close\r\n\r\n"
            "isb: the judge refuses DELETE /judged/denied\n");
  std::lock_guard lock(mu_);
  EXPECT_EQ(decided_, (std::vector<std::string>{"allowed.test GET /judged/1", "allowed.test GET /judged/2",
                                                "allowed.test DELETE /judged/denied"}));
}

// On a judged name a GET or HEAD with a body is refused, before the judge is asked: an origin that ignores such a
// body would read it as the next request, one the judge never saw. An empty body (Content-Length: 0) goes on.
TEST_F(ProxyTest, AJudgedNameRefusesAGetWithABody) {
  Fd c = Connect();
  const std::string empty = "GET /judged/1 HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 0\r\n\r\n";
  SendAll(c.get(), empty);
  ASSERT_EQ(ReadN(c.get(), empty.size()), empty);
  const std::string hidden = "DELETE /judged/denied HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
  SendAll(c.get(), "GET /judged/2 HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: " + std::to_string(hidden.size()) +
                       "\r\n\r\n" + hidden);
  const std::string reason =
      "a GET request with a body is refused (an origin may read the body as another request); "
      "send the body with POST";
  EXPECT_EQ(ReadToEnd(c.get()), "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: " +
                                    std::to_string(reason.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + reason +
                                    "\n");
  // The first request of a connection too (its admission judged the request, not what its body hides), chunked or
  // not. (The parser's other methods are checked in BodylessMethodRefusal's test.)
  for (std::string first : {"GET /judged/3 HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 1\r\n\r\nx",
                            "GET /judged/4 HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "1\r\nx\r\n0\r\n\r\n"}) {
    Fd d = Connect();
    SendAll(d.get(), first);
    const std::string method = first.substr(0, first.find(' '));
    const std::string why = "a " + method + reason.substr(reason.find(" request"));
    EXPECT_EQ(ReadToEnd(d.get()), "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: " +
                                      std::to_string(why.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + why +
                                      "\n");
  }
  std::lock_guard lock(mu_);
  EXPECT_EQ(decided_, (std::vector<std::string>{"allowed.test GET /judged/1", "allowed.test GET /judged/3",
                                                "allowed.test GET /judged/4"}))
      << "the hidden request was never judged";
  EXPECT_EQ(denials_.size(), 3u) << "each refusal is reported";
}

// On any allowed name, a GET (or HEAD, DELETE, TRACE) with a body never reaches the origin: one that ignores such a
// body would read a second request, for another host, from it. An empty body (Content-Length: 0) goes on.
TEST_F(ProxyTest, AGetWithABodyNeverReachesAnOriginThatIgnoresBodies) {
  const std::string hidden = "GET /b HTTP/1.1\r\nHost: bad.test\r\n\r\n";
  const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  auto refusal = [](const std::string& method) {
    const std::string why = "a " + method +
                            " request with a body is refused (an origin may read the body as another "
                            "request); send the body with POST";
    return "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(why.size() + 6) +
           "\r\nConnection: close\r\n\r\nisb: " + why + "\n";
  };
  {
    BodyIgnoringOrigin origin;
    origin_port_ = origin.port();
    Fd c = Connect();
    SendAll(c.get(), "GET /a HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: " + std::to_string(hidden.size()) +
                         "\r\n\r\n" + hidden);
    EXPECT_EQ(ReadToEnd(c.get()), refusal("GET"));
    c.Reset();
    EXPECT_EQ(origin.hosts(), std::vector<std::string>{}) << "nothing reached the origin";
  }
  {
    // A later request on a kept-alive connection, chunked, with another method.
    BodyIgnoringOrigin origin;
    origin_port_ = origin.port();
    Fd c = Connect();
    SendAll(c.get(), "GET /a HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 0\r\n\r\n");
    ASSERT_EQ(ReadN(c.get(), ok.size()), ok);
    SendAll(c.get(), "DELETE /a HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n" +
                         std::to_string(hidden.size()) + "\r\n" + hidden + "\r\n0\r\n\r\n");
    EXPECT_EQ(ReadToEnd(c.get()), refusal("DELETE"));
    c.Reset();
    EXPECT_EQ(origin.hosts(), std::vector<std::string>{"allowed.test"}) << "only the bodiless GET reached the origin";
  }
  {
    BodyIgnoringOrigin origin;  // a body on POST is its own and goes on
    origin_port_ = origin.port();
    Fd c = Connect();
    SendAll(c.get(), "GET /a HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
    ASSERT_EQ(ReadN(c.get(), ok.size()), ok);
    SendAll(c.get(), "POST /a HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 2\r\n\r\nhi");
    ASSERT_EQ(ReadN(c.get(), ok.size()), ok);
    c.Reset();
    EXPECT_EQ(origin.hosts(), (std::vector<std::string>{"allowed.test", "allowed.test"}));
  }
  std::lock_guard lock(mu_);
  EXPECT_EQ(denials_.size(), 2u) << "each refusal is reported";
}

// After an Upgrade request, bytes that are no HTTP request are the new protocol: relayed untouched from there on.
TEST_F(ProxyTest, AfterAnUpgradeTheSwitchedProtocolIsRelayedUntouched) {
  const std::string switching = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
  AnsweringOrigin origin(switching);
  origin_port_ = origin.port();
  Fd c = Connect();
  std::string upgrade = "GET /ws HTTP/1.1\r\nHost: allowed.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
  SendAll(c.get(), upgrade);
  ASSERT_EQ(ReadN(c.get(), switching.size()), switching);
  std::string frames("\x81\x05hello\x82\x03\0\1\2", 12);
  SendAll(c.get(), frames);
  EXPECT_EQ(ReadN(c.get(), frames.size()), frames);
  std::string later = "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n";  // inside the new protocol: its data
  SendAll(c.get(), later);
  EXPECT_EQ(ReadN(c.get(), later.size()), later);
  c.Reset();
  EXPECT_EQ(origin.received(), frames + later);
}

// An upgrade to HTTP/2 over cleartext is refused before it reaches the origin: after a 101 its streams would carry
// requests for any host, method and path, relayed unparsed.
TEST_F(ProxyTest, AnUpgradeToH2cIsRefused) {
  const std::string switching = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
  for (const std::string& extra : {std::string("Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                                               "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n"),
                                   std::string("Connection: Upgrade\r\nUpgrade: websocket, H2C\r\n"),
                                   std::string("HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n")}) {
    AnsweringOrigin origin(switching);
    origin_port_ = origin.port();
    Fd c = Connect();
    SendAll(c.get(), "GET / HTTP/1.1\r\nHost: allowed.test\r\n" + extra + "\r\n");
    const std::string reason =
        "isb: an upgrade to HTTP/2 over cleartext (h2c) is not relayed: its requests could not "
        "be checked; use HTTP/1.1, or https\n";
    EXPECT_EQ(ReadToEnd(c.get()), "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: " +
                                      std::to_string(reason.size()) + "\r\nConnection: close\r\n\r\n" + reason)
        << extra;
    c.Reset();
    EXPECT_EQ(origin.received(), "") << extra;
  }
}

// An Upgrade the origin declines (200, not 101) switches nothing: a later head that does not parse is refused as
// it would be without the Upgrade header, and never reaches the origin.
TEST_F(ProxyTest, AnUpgradeTheOriginDeclinedLeavesEveryLaterRequestChecked) {
  const std::string declined = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  AnsweringOrigin origin(declined);
  origin_port_ = origin.port();
  Fd c = Connect();
  SendAll(c.get(), "GET /ok HTTP/1.1\r\nHost: allowed.test\r\nUpgrade: x\r\n\r\n");
  ASSERT_EQ(ReadN(c.get(), declined.size()), declined);
  SendAll(c.get(), "DELETE /judged/denied HTTP/1.1\nHost: evil.test\n\n");  // bare LF: not a head
  std::string answer = ReadToEnd(c.get());
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 400 ")) << answer;
  EXPECT_EQ(origin.received(), "");
}

// With the descriptor table full, clients wait in the listen queue: the accept loop waits between tries instead of
// spinning a core, and takes them once descriptors free up.
TEST_F(ProxyTest, AFullDescriptorTableDoesNotSpinTheAcceptLoop) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  std::vector<Fd> clients;
  for (int i = 0; i < 4; ++i) clients.emplace_back(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  rlimit low = saved;
  low.rlim_cur = 512;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<Fd> filler;
  for (;;) {
    Fd f(::fcntl(0, F_DUPFD_CLOEXEC, 0));
    if (!f.valid()) break;
    filler.push_back(std::move(f));
  }
  ASSERT_EQ(errno, EMFILE);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(proxy_->port());
  for (Fd& c : clients) ASSERT_EQ(::connect(c.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  ::usleep(500000);
  ::getrusage(RUSAGE_SELF, &after);
  auto cpu_us = [](const rusage& r) {
    return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000L + r.ru_utime.tv_usec + r.ru_stime.tv_usec;
  };
  EXPECT_LT(cpu_us(after) - cpu_us(before), 150000) << "the accept loop spun while the descriptor table was full";
  filler.clear();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  for (Fd& c : clients) {
    std::string request = "GET /late HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
    SendAll(c.get(), request);
    EXPECT_EQ(ReadN(c.get(), request.size()), request);
  }
}

// A sandbox dialling a name slow to answer holds at most its share of the blocking threads (4 of 8): another
// sandbox's connections always find one free. Eight slow connections: never more than four dials at once, and
// every one gets through in the end.
TEST_F(ProxyTest, ASandboxsSlowDialsHoldOnlyItsShareOfTheBlockingThreads) {
  slow_dial_ms_ = 300;
  std::vector<Fd> conns;
  const std::string request = "GET /slow HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
  for (int i = 0; i < 8; ++i) {
    conns.push_back(Connect());
    SendAll(conns.back().get(), request);
  }
  for (Fd& c : conns) EXPECT_EQ(ReadN(c.get(), request.size()), request);
  EXPECT_EQ(max_dialing_.load(), 4);
}

// A head sent a byte at a time is parsed again after every read: past 256 reads without a whole head, it is
// refused, so a slow sender cannot make the event loop's work grow with the square of the head's length.
TEST_F(ProxyTest, AHeadSentInTooManyPiecesIsRefused) {
  Fd c = Connect();
  const std::string first = "GET /a HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
  SendAll(c.get(), first);
  ASSERT_EQ(ReadN(c.get(), first.size()), first);
  int one = 1;
  ::setsockopt(c.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const std::string second = "GET /b HTTP/1.1\r\nHost: allowed.test\r\nX-Pad: " + std::string(800, 'p') + "\r\n\r\n";
  for (char ch : second) {
    if (::send(c.get(), &ch, 1, MSG_NOSIGNAL) != 1) break;  // refused and closed meanwhile
    ::usleep(1000);
  }
  std::string answer = ReadToEnd(c.get());
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 400 ")) << answer;
  EXPECT_NE(answer.find("request head sent in too many pieces"), std::string::npos) << answer;
}

class ProxyLimitTest : public ProxyTest {
 protected:
  void SetUp() override {
    connections_per_sandbox_ = 3;
    ProxyTest::SetUp();
  }
};

// Past its limit of open connections, a sandbox's next one is closed at once; once one ends, a new one is served.
TEST_F(ProxyLimitTest, ASandboxPastItsConnectionLimitIsClosedAtOnce) {
  const std::string request = "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
  std::vector<Fd> open;
  for (int i = 0; i < 3; ++i) {
    open.push_back(Connect());
    SendAll(open.back().get(), request);
    ASSERT_EQ(ReadN(open.back().get(), request.size()), request);
  }
  Fd over = Connect();
  SendAll(over.get(), request);
  EXPECT_EQ(ReadToEnd(over.get()), "");
  open.pop_back();
  for (int i = 0; i < 100 && proxy_->stats().active != 2; ++i) ::usleep(10000);
  Fd again = Connect();
  SendAll(again.get(), request);
  EXPECT_EQ(ReadN(again.get(), request.size()), request);
}

class ProxyIdleTest : public ProxyTest {
 protected:
  void SetUp() override {
    relay_idle_ms_ = 400;
    ProxyTest::SetUp();
  }
};

// A relayed connection that moves nothing either way for relay_idle_ms is closed; one that keeps talking is not.
TEST_F(ProxyIdleTest, ARelayedConnectionIdleForTheTimeoutIsClosed) {
  const std::string request = "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
  Fd talking = Connect();
  Fd idle = Connect();
  for (Fd* c : {&talking, &idle}) {
    SendAll(c->get(), request);
    ASSERT_EQ(ReadN(c->get(), request.size()), request);
  }
  // 1 s: twice the timeout and more, with a request every 100 ms on one of them.
  for (int i = 0; i < 10; ++i) {
    ::usleep(100000);
    SendAll(talking.get(), request);
    ASSERT_EQ(ReadN(talking.get(), request.size()), request) << "the talking connection was closed at " << i;
  }
  EXPECT_EQ(ReadToEnd(idle.get()), "");  // closed by the proxy, not by the test
  EXPECT_EQ(proxy_->stats().idle_closed.load(), 1u);
}

TEST_F(ProxyTest, AThousandConcurrentConnectionsAllGetThroughAndNoneIsLeft) {
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  r.rlim_cur = std::max<rlim_t>(r.rlim_cur, std::min<rlim_t>(r.rlim_max, 16384));
  ::setrlimit(RLIMIT_NOFILE, &r);
  ASSERT_GE(r.rlim_cur, 5000u) << "needs room for 4000 sockets";
  constexpr int kConns = 1000;
  std::vector<Fd> conns;
  for (int i = 0; i < kConns; ++i) {
    conns.push_back(Connect());
    SendAll(conns.back().get(), "GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
  }
  for (int i = 0; i < kConns; ++i) {
    std::string want = "GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
    ASSERT_EQ(ReadN(conns[i].get(), want.size()), want) << "connection " << i;
  }
  EXPECT_EQ(proxy_->stats().active.load(), static_cast<uint64_t>(kConns));
  EXPECT_EQ(proxy_->stats().allowed.load(), static_cast<uint64_t>(kConns));
  conns.clear();
}

// Connections end while others open, some by a reset in the middle of a bulk transfer (the relay closes both its
// sockets while the other direction may be splicing), some normally: every client receives its own bytes and only
// those, so no direction ever writes to or reads from a descriptor number reused by another connection.
TEST_F(ProxyTest, ConnectionsResetMidTransferNeverCrossBytesWithOthers) {
  constexpr int kThreads = 6, kRounds = 24;
  std::atomic<int> failures{0};
  auto pattern = [](int t, int round, size_t size) {
    std::string tag = "<" + std::to_string(t) + ":" + std::to_string(round) + ">";
    std::string out;
    while (out.size() < size) out += tag;
    out.resize(size);
    return out;
  };
  auto client = [&](int t) {
    for (int round = 0; round < kRounds && failures == 0; ++round) {
      Fd c = Connect();
      std::string request =
          "POST /" + std::to_string(t) + " HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 262144\r\n\r\n";
      SendAll(c.get(), request);
      if (ReadN(c.get(), request.size()) != request) ++failures;
      std::string payload = pattern(t, round, 256 << 10);  // the body
      if (round % 2 == 0) {
        std::thread writer([&] {
          SendAll(c.get(), payload);
          ::shutdown(c.get(), SHUT_WR);
        });
        std::string back = ReadToEnd(c.get());
        writer.join();
        if (back != payload) ++failures;
        continue;
      }
      // As much as the buffers take at once, some of it read back, then a reset while the rest is in flight.
      ssize_t sent = ::send(c.get(), payload.data(), payload.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (sent <= 0) {
        ++failures;
        continue;
      }
      size_t want = std::min<size_t>(static_cast<size_t>(sent), 16 << 10);
      if (ReadN(c.get(), want) != payload.substr(0, want)) ++failures;
      linger reset{1, 0};
      ::setsockopt(c.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(client, t);
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(proxy_->stats().allowed.load(), static_cast<uint64_t>(kThreads * kRounds));
}

class ProxyFilterTest : public ProxyTest {
 protected:
  void SetUp() override {
    filter_ = std::make_shared<ReplacingFilter>("PLACEHOLDER", "s3cr3t");
    ProxyTest::SetUp();
  }
};

// On plain HTTP the filter sees each request too: its head is edited for the sandbox and a body whose length it
// changes goes chunked, exactly so; the echo server shows what the origin got.
TEST_F(ProxyFilterTest, ARequestBodyAFilterChangesIsChunkedAnew) {
  Fd c = Connect();
  SendAll(c.get(), "POST /a HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 17\r\n\r\nkey=PLACEHOLDER!!");
  const std::string filtered =
      "POST /a HTTP/1.1\r\nHost: allowed.test\r\nX-Filtered: sb1\r\nTransfer-Encoding: chunked\r\n"
      "\r\na\r\nkey=s3cr3t\r\n2\r\n!!\r\n0\r\n\r\n";
  EXPECT_EQ(ReadN(c.get(), filtered.size()), filtered);
  const std::string chunked =
      "POST /b HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4;x=1\r\nPLAC\r\n7\r\nEHOLDER\r\n0\r\nX-T: 1\r\n\r\n";
  SendAll(c.get(), chunked);
  const std::string rechunked =
      "POST /b HTTP/1.1\r\nHost: allowed.test\r\nX-Filtered: sb1\r\nTransfer-Encoding: chunked\r\n"
      "\r\n6\r\ns3cr3t\r\n0\r\nX-T: 1\r\n\r\n";
  EXPECT_EQ(ReadN(c.get(), rechunked.size()), rechunked);
  ::shutdown(c.get(), SHUT_WR);
  EXPECT_EQ(ReadToEnd(c.get()), "");
}

// A body larger than any buffer of the relay's (and than the bound for a held body) goes through filtered in
// pieces, and the request after it on the connection is relayed and checked as usual.
TEST_F(ProxyFilterTest, ALargeFilteredBodyArrivesWholeAndTheNextRequestFollows) {
  std::string body;
  for (int i = 0; body.size() < (3u << 20); ++i) body += "PLACEHOLDER " + std::to_string(i) + "\n";
  std::string expected;
  size_t at = 0;
  for (size_t hit; (hit = body.find("PLACEHOLDER", at)) != std::string::npos; at = hit + 11)
    expected.append(body, at, hit - at).append("s3cr3t");
  expected.append(body, at);
  Fd c = Connect();
  const std::string next = "GET /after HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
  std::thread writer([&] {
    SendAll(c.get(),
            "POST /big HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n");
    SendAll(c.get(), body);
    SendAll(c.get(), next);
    ::shutdown(c.get(), SHUT_WR);
  });
  std::string back = ReadN(c.get(), 16u << 20);
  writer.join();
  const std::string head =
      "POST /big HTTP/1.1\r\nHost: allowed.test\r\nX-Filtered: sb1\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_TRUE(back.starts_with(head)) << back.substr(0, 200);
  ChunkedScanner scanner;
  std::string content;
  ChunkedScanner::Step step = scanner.Feed(std::string_view(back).substr(head.size()), &content);
  ASSERT_EQ(step.state, ChunkedScanner::State::kDone) << step.reason;
  EXPECT_TRUE(content == expected) << content.size() << " bytes, not " << expected.size();
  EXPECT_EQ(back.substr(head.size() + step.used),
            "GET /after HTTP/1.1\r\nHost: allowed.test\r\nX-Filtered: sb1\r\n\r\n");
}

// An HTTP/1.0 request's filtered body is held whole, to be sent with its new length; past the bound it is refused
// with 413 before any of it reaches the origin.
TEST_F(ProxyFilterTest, AnHttp10RequestsFilteredBodyPastTheBoundGets413) {
  Fd c = Connect();
  SendAll(c.get(), "POST /a HTTP/1.0\r\nHost: allowed.test\r\nContent-Length: 15\r\n\r\nPLACEHOLDER!!!!");
  const std::string held =
      "POST /a HTTP/1.0\r\nHost: allowed.test\r\nX-Filtered: sb1\r\nContent-Length: 10\r\n\r\ns3cr3t!!!!";
  EXPECT_EQ(ReadN(c.get(), held.size()), held);
  Fd big = Connect();
  const size_t size = kMaxBufferedBody + 100;
  std::thread writer([&] {
    SendAll(big.get(),
            "POST /a HTTP/1.0\r\nHost: allowed.test\r\nContent-Length: " + std::to_string(size) + "\r\n\r\n");
    std::string body(size, 'a');
    (void)::send(big.get(), body.data(), body.size(), MSG_NOSIGNAL);  // refused, and closed, part way
  });
  const std::string reason =
      "an HTTP/1.0 request's body that a filter changes is held whole, and this one came to "
      "more than 1048576 bytes: send it with HTTP/1.1";
  EXPECT_EQ(ReadToEnd(big.get()), "HTTP/1.1 413 Content Too Large\r\nContent-Type: text/plain\r\nContent-Length: " +
                                      std::to_string(reason.size() + 6) +
                                      "\r\nConnection: close\r\n\r\nisb: " + reason + "\n");
  writer.join();
}

}  // namespace
}  // namespace isb::egress
