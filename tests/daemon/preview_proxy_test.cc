// The preview proxy without a sandbox: connections handed to it as the HTTP server hands them over, and an app on
// this process's own loopback (its network namespace stands in for the sandbox's).
#include "daemon/preview_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <thread>

#include "daemon/netns_dial.h"

namespace isb::daemon {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// This process's network namespace, standing in for the sandbox's.
Result<Fd> OwnNetns() {
  Fd netns(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!netns.valid()) return Error::Sys("opening /proc/self/ns/net");
  return netns;
}

// A listening socket on 127.0.0.1 (or [::1]) and its port.
std::pair<Fd, uint16_t> ListenLoopback(bool v6 = false) {
  Fd s(::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (v6) {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&a);
    a6->sin6_family = AF_INET6;
    a6->sin6_addr = in6addr_loopback;
    len = sizeof *a6;
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&a);
    a4->sin_family = AF_INET;
    a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a4;
  }
  EXPECT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), len), 0);
  EXPECT_EQ(::listen(s.get(), 8), 0);
  ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len);
  return {std::move(s),
          ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&a)->sin6_port : reinterpret_cast<sockaddr_in*>(&a)->sin_port)};
}

// A connection to 127.0.0.1:`port`, made (blocking).
Fd ConnectTo(uint16_t port) {
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return s;
}

// Reads until the peer ends (EOF or reset) or `quiet` passes without a byte.
std::string ReadToEnd(int fd, milliseconds quiet = milliseconds(5000)) {
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(quiet.count())) <= 0) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Reads one response of `size` bytes.
std::string ReadBytes(int fd, size_t size) {
  std::string out;
  char buf[4096];
  while (out.size() < size) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) break;
    ssize_t n = ::recv(fd, buf, std::min(sizeof buf, size - out.size()), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Whether the peer of `fd` has ended (EOF or reset) within `within`, nothing more having come.
bool EndsWithin(int fd, milliseconds within) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(within.count())) <= 0) return false;
  char c;
  return ::recv(fd, &c, 1, 0) <= 0;
}

size_t OpenFds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// An app on the loopback that takes one connection and answers each of `answers` to one request head (GET, no
// body) on it, keeping what it was sent; then it waits for the connection to end.
class FakeApp {
 public:
  explicit FakeApp(std::vector<std::string> answers, bool v6 = false) {
    auto [listener, port] = ListenLoopback(v6);
    listener_ = std::move(listener);
    port_ = port;
    thread_ = std::thread([this, answers = std::move(answers)] {
      Fd c(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      std::string buffer;
      char buf[4096];
      for (const std::string& answer : answers) {
        while (buffer.find("\r\n\r\n") == std::string::npos) {
          ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
          if (n <= 0) return;
          buffer.append(buf, static_cast<size_t>(n));
        }
        const size_t end = buffer.find("\r\n\r\n") + 4;
        seen_ += buffer.substr(0, end);
        buffer.erase(0, end);
        ::send(c.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
      }
      while (::recv(c.get(), buf, sizeof buf, 0) > 0) {
      }
    });
  }
  ~FakeApp() { Join(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return port_; }
  const std::string& seen() const { return seen_; }  // once joined

 private:
  Fd listener_;
  uint16_t port_ = 0;
  std::string seen_;
  std::thread thread_;
};

constexpr char kSandbox[] = "sb-0123456789abcdef";

class PreviewProxyTest : public ::testing::Test {
 protected:
  PreviewProxyTest() { Remake({}); }
  ~PreviewProxyTest() override {
    Release();  // a dial still held would keep the proxy's stop waiting
    proxy_.reset();
  }

  // The proxy again, with `options`, its namespace lookups held until Release() (then this process's own).
  void RemakeHeld(PreviewProxyOptions options = {}) {
    options.netns = [released = released_](const std::string&) -> Result<Fd> {
      released.wait();
      return OwnNetns();
    };
    Remake(std::move(options));
  }
  void Release() {
    if (!release_sent_) release_.set_value();
    release_sent_ = true;
  }

  // The proxy again, with `options` (its netns: this process's own, standing in for the sandbox's).
  void Remake(PreviewProxyOptions options) {
    proxy_.reset();
    if (!options.netns) options.netns = [](const std::string&) { return OwnNetns(); };
    proxy_ = std::make_unique<PreviewProxy>(access_, std::move(options));
  }

  // A client connection handed to the proxy as the HTTP server hands one over, `pending` read from it already.
  Fd Connect(const std::string& pending) {
    auto [listener, port] = ListenLoopback();
    Fd client = ConnectTo(port);
    int served = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
    proxy_->Take(served, pending);
    return client;
  }
  // Sends `request` through the proxy on a connection of its own; the whole response.
  std::string Through(const std::string& request) {
    Fd client = Connect(request);
    return ReadToEnd(client.get());
  }
  std::string Host(uint16_t port) const { return std::to_string(port) + "-" + kSandbox + "-acme.localhost:8092"; }
  // A session's cookie for the preview of `port`, its link spent as the proxy would.
  std::string Cookie(uint16_t port) {
    const api::PreviewHost host{port, kSandbox, "acme"};
    auto link = access_.Open(host, api::Identity::Host());
    EXPECT_TRUE(link.ok());
    const std::string token = link->url.substr(link->url.find(api::kPreviewLinkPath) + 14);
    auto session = access_.Spend(token, host);
    EXPECT_TRUE(session.ok());
    return session.ok() ? session->cookie : std::string();
  }
  std::string Get(uint16_t port, const std::string& cookie, const std::string& path = "/") {
    return "GET " + path + " HTTP/1.1\r\nHost: " + Host(port) + "\r\nCookie: isb_preview=" + cookie + "\r\n\r\n";
  }
  // Waits until the proxy holds no connection.
  bool Drained() {
    for (int i = 0; i < 500 && proxy_->open_connections() != 0; ++i) std::this_thread::sleep_for(milliseconds(10));
    return proxy_->open_connections() == 0;
  }

  api::PreviewAccess access_{api::PreviewAccessOptions{}};
  std::unique_ptr<PreviewProxy> proxy_;
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
  bool release_sent_ = false;
};

// The proxy's own answers, byte for byte.
std::string Plain(const std::string& status, const std::string& text) {
  return "HTTP/1.1 " + status +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\nReferrer-Policy: no-referrer\r\n"
         "Content-Length: " +
         std::to_string(text.size() + 1) + "\r\nConnection: close\r\n\r\n" + text + "\n";
}

const std::string kHello = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

TEST_F(PreviewProxyTest, ALinkIsSpentForACookieAndTheAppGetsTheRequestWithoutIsbsCredentials) {
  auto [app, app_port] = ListenLoopback();
  std::string seen;
  std::thread server([&, fd = app.get()] {
    int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    char buf[4096];
    ssize_t n = ::recv(c, buf, sizeof buf, 0);
    seen.assign(buf, n > 0 ? static_cast<size_t>(n) : 0);
    const std::string answer =
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nSet-Cookie: a=1; Domain=localhost\r\n"
        "Connection: close\r\n\r\nhi";
    ::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
    ::close(c);
  });
  auto link = access_.Open(api::PreviewHost{app_port, "sb-0123456789abcdef", "acme"}, api::Identity::Host());
  ASSERT_TRUE(link.ok());
  const std::string path = link->url.substr(link->url.find("/.isb-preview/"));
  const std::string spent = Through("GET " + path + " HTTP/1.1\r\nHost: " + Host(app_port) + "\r\n\r\n");
  ASSERT_EQ(spent.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << spent;
  const size_t at = spent.find("isb_preview=");
  ASSERT_NE(at, std::string::npos) << spent;
  const std::string cookie = spent.substr(at + 12, 64);

  const std::string answered =
      Through("GET /x HTTP/1.1\r\nHost: " + Host(app_port) + "\r\nCookie: isb_preview=" + cookie +
              "; app=2\r\nAuthorization: Bearer isb_tok_x\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n");
  server.join();
  // A head the filter changed is written again, its framing field last.
  EXPECT_EQ(answered, "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_EQ(seen, "GET /x HTTP/1.1\r\nHost: " + Host(app_port) + "\r\nCookie: app=2\r\n\r\n");
}

TEST_F(PreviewProxyTest, ARequestWithoutASessionIsRefusedAndNothingIsDialled) {
  EXPECT_EQ(Through("GET /api/v1/tools/whoami HTTP/1.1\r\nHost: " + Host(8080) + "\r\n\r\n"),
            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n"
            "Referrer-Policy: no-referrer\r\nContent-Length: 84\r\nConnection: close\r\n\r\n"
            "no preview session here: open this preview with a link from isb (sandbox_port_open)\n");
}

TEST_F(PreviewProxyTest, AHostThatIsNoPreviewIsAnswered421) {
  EXPECT_EQ(Through("GET / HTTP/1.1\r\nHost: isb.example:8092\r\n\r\n"),
            Plain("421 Misdirected Request", "this connection is for another preview: open a connection of its own"));
}

TEST_F(PreviewProxyTest, ASecondRequestForAnotherPreviewOnTheConnectionIsAnswered421) {
  FakeApp app({kHello});
  const std::string cookie = Cookie(app.port());
  Fd client = Connect(Get(app.port(), cookie));
  EXPECT_EQ(ReadBytes(client.get(), kHello.size()), kHello);
  const std::string other = "GET / HTTP/1.1\r\nHost: " + Host(app.port() + 1) + "\r\n\r\n";
  ASSERT_EQ(::send(client.get(), other.data(), other.size(), MSG_NOSIGNAL), static_cast<ssize_t>(other.size()));
  EXPECT_EQ(ReadToEnd(client.get()),
            Plain("421 Misdirected Request", "this connection is for another preview: open a connection of its own"));
}

TEST_F(PreviewProxyTest, TwoRequestsOnOneConnectionGoToTheAppOnOneConnection) {
  const std::string second = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nbye";
  FakeApp app({kHello, second});
  const std::string cookie = Cookie(app.port());
  Fd client = Connect(Get(app.port(), cookie, "/one"));
  EXPECT_EQ(ReadBytes(client.get(), kHello.size()), kHello);
  const std::string again = Get(app.port(), cookie, "/two");
  ASSERT_EQ(::send(client.get(), again.data(), again.size(), MSG_NOSIGNAL), static_cast<ssize_t>(again.size()));
  EXPECT_EQ(ReadToEnd(client.get()), second);
  client.Reset();
  app.Join();
  EXPECT_EQ(app.seen(), "GET /one HTTP/1.1\r\nHost: " + Host(app.port()) +
                            "\r\n\r\nGET /two HTTP/1.1\r\nHost: " + Host(app.port()) + "\r\n\r\n");
}

TEST_F(PreviewProxyTest, AnAppOnlyOnIpv6LoopbackIsReached) {
  FakeApp app({"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nv6"}, true);
  EXPECT_EQ(Through(Get(app.port(), Cookie(app.port()))),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nv6");
}

TEST_F(PreviewProxyTest, NothingListeningOnEitherLoopbackIs502NamingBoth) {
  uint16_t port = 0;
  {
    auto [unused, p] = ListenLoopback();
    port = p;
  }
  const std::string p = std::to_string(port);
  EXPECT_EQ(Through(Get(port, Cookie(port))),
            Plain("502 Bad Gateway", "nothing answers on port " + p + " in sandbox " + kSandbox + ": 127.0.0.1:" + p +
                                         ": Connection refused; [::1]:" + p + ": Connection refused"));
}

TEST_F(PreviewProxyTest, LoopbackPeersAreNotHeldToThePerAddressCapByDefault) {
  Remake({.netns = {}, .max_connections_per_address = 2});
  Fd first = Connect("");
  Fd second = Connect("");
  EXPECT_EQ(Through("GET / HTTP/1.1\r\nHost: " + Host(8080) + "\r\n\r\n").substr(0, 24), "HTTP/1.1 403 Forbidden\r\n");
}

TEST_F(PreviewProxyTest, ConnectionsPastThePerAddressCapAreAnswered429AndClosed) {
  Remake({.netns = {}, .max_connections_per_address = 2, .limit_loopback_peers = true});
  Fd first = Connect("");
  Fd second = Connect("");
  EXPECT_EQ(Through("GET / HTTP/1.1\r\nHost: " + Host(8080) + "\r\n\r\n"),
            Plain("429 Too Many Requests", "this address has 2 preview connections open; close one first"));
  first.Reset();
  for (int i = 0; i < 500 && proxy_->open_connections() != 1; ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(proxy_->open_connections(), 1u);
  EXPECT_EQ(Through("GET / HTTP/1.1\r\nHost: " + Host(8080) + "\r\n\r\n").substr(0, 24), "HTTP/1.1 403 Forbidden\r\n");
}

TEST_F(PreviewProxyTest, ConnectionsPastTheTotalCapAreAnswered503AndClosed) {
  Remake({.netns = {}, .max_connections = 1});
  Fd first = Connect("");
  EXPECT_EQ(
      Through("GET / HTTP/1.1\r\nHost: " + Host(8080) + "\r\n\r\n"),
      Plain("503 Service Unavailable", "the preview proxy has 1 connections open; try again once one has closed"));
}

TEST_F(PreviewProxyTest, AHeadTheServerRefusedIsAnsweredWithTheProxysOwn431And400) {
  for (int status : {431, 400}) {
    auto [listener, port] = ListenLoopback();
    Fd client = ConnectTo(port);
    proxy_->TakeRefused(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC), status);
    const std::string rest(100000, 'a');  // what the client still sends is read and dropped, not reset
    ASSERT_EQ(::send(client.get(), rest.data(), rest.size(), MSG_NOSIGNAL), static_cast<ssize_t>(rest.size()));
    ::shutdown(client.get(), SHUT_WR);
    EXPECT_EQ(ReadToEnd(client.get()), status == 431
                                           ? Plain("431 Request Header Fields Too Large", "request head too large")
                                           : Plain("400 Bad Request", "malformed request head"));
  }
  EXPECT_TRUE(Drained());
}

TEST_F(PreviewProxyTest, ARefusedClientThatKeepsSendingIsClosedAfterOneMebibyte) {
  Remake({.netns = {}, .head_timeout = milliseconds(60'000)});
  auto [listener, port] = ListenLoopback();
  Fd client = ConnectTo(port);
  proxy_->TakeRefused(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC), 400);
  // Sent without end: before the head deadline, the proxy stops reading once 1 MiB is dropped and closes.
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    const std::string piece(64 << 10, 'a');
    while (!stop && ::send(client.get(), piece.data(), piece.size(), MSG_NOSIGNAL) > 0) {
    }
  });
  EXPECT_TRUE(Drained());
  EXPECT_EQ(proxy_->open_connections(), 0u);
  stop = true;
  ::shutdown(client.get(), SHUT_RDWR);
  sender.join();
}

TEST_F(PreviewProxyTest, AHeadSentAByteAtATimeIsClosedAtTheHeadDeadline) {
  Remake({.netns = {}, .head_timeout = milliseconds(300)});
  Fd client = Connect("G");
  std::atomic<bool> done{false};
  std::thread drip([&] {
    const std::string rest = "ET / HTTP/1.1\r\nHost: " + Host(8080) + "\r\nX-Slow: " + std::string(200, 'a');
    for (size_t i = 0; i < rest.size() && !done; ++i) {
      if (::send(client.get(), &rest[i], 1, MSG_NOSIGNAL) != 1) break;
      std::this_thread::sleep_for(milliseconds(20));
    }
  });
  const auto start = Clock::now();
  EXPECT_EQ(ReadToEnd(client.get(), milliseconds(3000)), "");
  const auto took = Clock::now() - start;
  done = true;
  drip.join();
  EXPECT_GE(took, milliseconds(250));
  EXPECT_LT(took, milliseconds(2000));  // a per-read timeout would let it drip for 4 s
  EXPECT_TRUE(Drained());
}

TEST_F(PreviewProxyTest, AnAppThatNeverAnswersIsClosedAfterTheIdleTimeout) {
  Remake({.netns = {}, .idle_timeout = milliseconds(300)});
  FakeApp app({});  // reads nothing, answers nothing
  Fd client = Connect(Get(app.port(), Cookie(app.port())));
  const auto start = Clock::now();
  EXPECT_EQ(ReadToEnd(client.get(), milliseconds(3000)), "");
  EXPECT_LT(Clock::now() - start, milliseconds(2000));
  EXPECT_TRUE(Drained());
}

TEST_F(PreviewProxyTest, AnAppThatTakesTheRequestAndNeverAnswersGets504AndItsConnectionClosed) {
  // The idle watch well after the response deadline: the 504 comes from the deadline, not from the idle close.
  Remake({.netns = {}, .idle_timeout = milliseconds(5000), .response_timeout = milliseconds(300)});
  EXPECT_EQ(Through("GET / HTTP/1.1\r\nHost: isb.example\r\n\r\n").substr(0, 12), "HTTP/1.1 421");
  ASSERT_TRUE(Drained());
  const size_t before = OpenFds();
  {
    auto [app, app_port] = ListenLoopback();
    // Takes the connection and the request, never answers, and notes when the connection ends.
    std::string seen;
    Clock::time_point ended;
    std::thread server([&, fd = app.get()] {
      Fd c(::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC));
      char buf[4096];
      for (ssize_t n; (n = ::recv(c.get(), buf, sizeof buf, 0)) > 0;) seen.append(buf, static_cast<size_t>(n));
      ended = Clock::now();
    });
    const std::string request = Get(app_port, Cookie(app_port), "/slow");
    Fd client = Connect(request);
    const auto start = Clock::now();
    EXPECT_EQ(ReadToEnd(client.get(), milliseconds(3000)),
              Plain("504 Gateway Timeout", "port " + std::to_string(app_port) + " in sandbox " + kSandbox +
                                               " took the request but sent no response within 300 ms"));
    const auto took = Clock::now() - start;
    EXPECT_GE(took, milliseconds(250));
    EXPECT_LT(took, milliseconds(2000));
    server.join();
    EXPECT_LT(ended - start, milliseconds(2000));  // the proxy closed it, long before the idle watch's 5 s
    EXPECT_EQ(seen, "GET /slow HTTP/1.1\r\nHost: " + Host(app_port) + "\r\n\r\n");
  }
  ASSERT_TRUE(Drained());
  EXPECT_EQ(OpenFds(), before);
}

TEST_F(PreviewProxyTest, AnInterimAnswerStartsTheWaitAgainAndSilenceAfterItIs504) {
  Remake({.netns = {}, .idle_timeout = milliseconds(5000), .response_timeout = milliseconds(300)});
  FakeApp app({"HTTP/1.1 100 Continue\r\n\r\n"});  // an interim answer, then nothing
  Fd client = Connect(Get(app.port(), Cookie(app.port()), "/slow"));
  EXPECT_EQ(ReadToEnd(client.get(), milliseconds(3000)),
            "HTTP/1.1 100 Continue\r\n\r\n" +
                Plain("504 Gateway Timeout", "port " + std::to_string(app.port()) + " in sandbox " + kSandbox +
                                                 " took the request but sent no response within 300 ms"));
  EXPECT_TRUE(Drained());
}

TEST_F(PreviewProxyTest, EachRequestOnAConnectionHasTheResponseTimeoutFromItsOwnSending) {
  Remake({.netns = {}, .idle_timeout = milliseconds(5000), .response_timeout = milliseconds(300)});
  FakeApp app({kHello});  // answers the first request only
  const std::string cookie = Cookie(app.port());
  Fd client = Connect(Get(app.port(), cookie, "/one"));
  EXPECT_EQ(ReadBytes(client.get(), kHello.size()), kHello);
  std::this_thread::sleep_for(milliseconds(500));  // longer than the deadline: the connection's age does not count
  const std::string again = Get(app.port(), cookie, "/two");
  ASSERT_EQ(::send(client.get(), again.data(), again.size(), MSG_NOSIGNAL), static_cast<ssize_t>(again.size()));
  const auto start = Clock::now();
  EXPECT_EQ(ReadToEnd(client.get(), milliseconds(3000)),
            Plain("504 Gateway Timeout", "port " + std::to_string(app.port()) + " in sandbox " + kSandbox +
                                             " took the request but sent no response within 300 ms"));
  EXPECT_GE(Clock::now() - start, milliseconds(250));
  app.Join();
  EXPECT_TRUE(Drained());
}

TEST_F(PreviewProxyTest, AResponseThatHasBegunIsNotCutAtTheResponseTimeout) {
  Remake({.netns = {}, .idle_timeout = milliseconds(5000), .response_timeout = milliseconds(300)});
  auto [app, app_port] = ListenLoopback();
  std::thread server([fd = app.get()] {
    Fd c(::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC));
    char buf[4096];
    (void)::recv(c.get(), buf, sizeof buf, 0);
    // The status line at once, the rest of the head and the body well past the response deadline.
    const std::string first = "HTTP/1.1 200 OK\r\n";
    ::send(c.get(), first.data(), first.size(), MSG_NOSIGNAL);
    std::this_thread::sleep_for(milliseconds(800));
    const std::string rest = "Content-Length: 5\r\nConnection: close\r\n\r\nhello";
    ::send(c.get(), rest.data(), rest.size(), MSG_NOSIGNAL);
    while (::recv(c.get(), buf, sizeof buf, 0) > 0) {
    }
  });
  EXPECT_EQ(Through(Get(app_port, Cookie(app_port))),
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  server.join();
  EXPECT_TRUE(Drained());
}

TEST_F(PreviewProxyTest, ARequestBodyThatStallsIsClosedAfterTheIdleTimeout) {
  Remake({.netns = {}, .idle_timeout = milliseconds(300)});
  FakeApp app({kHello});
  const std::string head = "POST / HTTP/1.1\r\nHost: " + Host(app.port()) +
                           "\r\nCookie: isb_preview=" + Cookie(app.port()) + "\r\nContent-Length: 100\r\n\r\nonly part";
  Fd client = Connect(head);
  EXPECT_TRUE(EndsWithin(client.get(), milliseconds(2000)));
  EXPECT_TRUE(Drained());
}

TEST_F(PreviewProxyTest, ASlowLookupOfOneSandboxDoesNotHoldUpAnotherConnection) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Remake({.netns = [released](const std::string&) -> Result<Fd> {
    released.wait();
    return Error::Of(Code::kConflict, "sandbox " + std::string(kSandbox) + " is not running");
  }});
  Fd slow = Connect(Get(8080, Cookie(8080)));
  const auto start = Clock::now();
  EXPECT_EQ(Through("GET / HTTP/1.1\r\nHost: isb.example\r\n\r\n").substr(0, 34),
            "HTTP/1.1 421 Misdirected Request\r\n");
  EXPECT_LT(Clock::now() - start, milliseconds(1000));
  release.set_value();
  EXPECT_EQ(ReadToEnd(slow.get()),
            Plain("502 Bad Gateway", "the preview of port 8080 in sandbox " + std::string(kSandbox) +
                                         " is not reachable: sandbox " + kSandbox + " is not running"));
}

TEST_F(PreviewProxyTest, DialsOfOneSandboxPastItsCapAreAnswered503) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Remake({.netns = [released](const std::string&) -> Result<Fd> {
            released.wait();
            return Error::Of(Code::kConflict, "sandbox " + std::string(kSandbox) + " is not running");
          },
          .max_dials_per_sandbox = 1});
  Fd slow = Connect(Get(8080, Cookie(8080)));
  for (int i = 0; i < 500 && proxy_->open_connections() != 1; ++i) std::this_thread::sleep_for(milliseconds(10));
  std::this_thread::sleep_for(milliseconds(100));  // the first dial is on its worker
  EXPECT_EQ(Through(Get(8081, Cookie(8081))),
            Plain("503 Service Unavailable", "sandbox " + std::string(kSandbox) +
                                                 " has 1 preview connections waiting for its app; try again once one "
                                                 "has connected"));
  release.set_value();
  EXPECT_EQ(ReadToEnd(slow.get()).substr(0, 24), "HTTP/1.1 502 Bad Gateway");
}

TEST_F(PreviewProxyTest, AStoppedProxyDoesNotLookUpOrDialTheDialsStillQueued) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto lookups = std::make_shared<std::atomic<int>>(0);
  Remake({.netns = [released, lookups](const std::string&) -> Result<Fd> {
            ++*lookups;
            released.wait();
            return Error::Of(Code::kConflict, "not running");
          },
          .dial_workers = 1});
  Fd first = Connect(Get(8080, Cookie(8080)));
  Fd second = Connect(Get(8081, Cookie(8081)));
  for (int i = 0; i < 500 && *lookups != 1; ++i) std::this_thread::sleep_for(milliseconds(10));
  std::this_thread::sleep_for(milliseconds(100));  // the second dial is queued behind the first
  std::thread stopping([this] { proxy_->Stop(); });
  std::this_thread::sleep_for(milliseconds(100));
  release.set_value();
  stopping.join();
  EXPECT_EQ(*lookups, 1);
}

// One dial worker, held by a first dial whose lookup waits: the dials behind it wait in the queue.
TEST_F(PreviewProxyTest, AClientThatHangsUpWhileItsDialIsQueuedIsClosedAndItsDialNeverMade) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto lookups = std::make_shared<std::atomic<int>>(0);
  Remake({.netns = [released, lookups](const std::string&) -> Result<Fd> {
            if (++*lookups == 1) released.wait();
            return OwnNetns();
          },
          .dial_workers = 1});
  FakeApp first({kHello});
  FakeApp app({kHello});  // takes one connection: were the gone client's dial made, it would be that one
  const std::string cookie = Cookie(app.port());
  Fd holding = Connect(Get(first.port(), Cookie(first.port())));
  for (int i = 0; i < 500 && *lookups != 1; ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(*lookups, 1);
  Fd gone = Connect(Get(app.port(), cookie, "/gone"));
  for (int i = 0; i < 500 && proxy_->dials() != 2; ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(proxy_->dials(), 2u);  // queued behind the first
  // The client ends its side: the proxy closes the connection at once, the dial still queued.
  ASSERT_EQ(::shutdown(gone.get(), SHUT_WR), 0);
  EXPECT_TRUE(EndsWithin(gone.get(), milliseconds(2000)));
  gone.Reset();
  // A new client, whose connection may well get the gone one's descriptor number: its dial is made.
  Fd next = Connect(Get(app.port(), cookie, "/next"));
  for (int i = 0; i < 500 && proxy_->dials() != 3; ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(proxy_->dials(), 3u);  // the gone one's slot is given back once the worker has dropped its dial
  release.set_value();
  EXPECT_EQ(ReadBytes(holding.get(), kHello.size()), kHello);
  EXPECT_EQ(ReadBytes(next.get(), kHello.size()), kHello);
  EXPECT_EQ(*lookups, 2);  // the first's and the new one's: the gone one's dial was never looked up
  holding.Reset();
  next.Reset();
  first.Join();
  app.Join();
  EXPECT_EQ(app.seen(), "GET /next HTTP/1.1\r\nHost: " + Host(app.port()) + "\r\n\r\n");
  EXPECT_TRUE(Drained());
  EXPECT_EQ(proxy_->dials(), 0u);
}

TEST_F(PreviewProxyTest, AClientThatHangsUpWhileItsSandboxIsLookedUpIsClosedAtOnceAndTheAppNeverDialled) {
  RemakeHeld();
  EXPECT_EQ(Through("GET / HTTP/1.1\r\nHost: isb.example\r\n\r\n").substr(0, 12), "HTTP/1.1 421");
  ASSERT_TRUE(Drained());
  auto [app, app_port] = ListenLoopback();
  const std::string request = Get(app_port, Cookie(app_port));
  const size_t before = OpenFds();
  Fd client = Connect(request);
  for (int i = 0; i < 500 && proxy_->dials() != 1; ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(proxy_->dials(), 1u);
  client.Reset();
  // The proxy's side of the client's connection is closed at once, though the dial runs on (its slot taken).
  for (int i = 0; i < 500 && OpenFds() != before; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(OpenFds(), before);
  EXPECT_EQ(proxy_->dials(), 1u);
  Release();
  EXPECT_TRUE(Drained());
  EXPECT_EQ(proxy_->dials(), 0u);
  pollfd p{app.get(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 200), 0) << "the app was dialled for a client gone";
  EXPECT_EQ(OpenFds(), before);
}

// Whether this network namespace has a connection to 127.0.0.1:`port` whose SYN is sent and not yet answered.
bool SynSentTo(uint16_t port) {
  char want[16];
  std::snprintf(want, sizeof want, ":%04X 02 ", port);  // the remote address's port, then the state SYN_SENT
  std::ifstream tcp("/proc/net/tcp");
  for (std::string line; std::getline(tcp, line);)
    if (line.find(want) != std::string::npos) return true;
  return false;
}

TEST_F(PreviewProxyTest, AClientThatHangsUpWhileItsDialConnectsHasTheConnectionClosedAsSoonAsItIsMade) {
  EXPECT_EQ(Through("GET / HTTP/1.1\r\nHost: isb.example\r\n\r\n").substr(0, 12), "HTTP/1.1 421");
  ASSERT_TRUE(Drained());
  // An app whose accept queue is full (a backlog of 0, and a connection in it): a new SYN is dropped, and answered
  // only once the queue has room again and the SYN is sent again (a second later).
  auto [app, app_port] = ListenLoopback();
  ASSERT_EQ(::listen(app.get(), 0), 0);
  Fd filler = ConnectTo(app_port);
  const std::string request = Get(app_port, Cookie(app_port));
  const size_t before = OpenFds();
  Fd client = Connect(request);
  for (int i = 0; i < 500 && !SynSentTo(app_port); ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_TRUE(SynSentTo(app_port));  // the dial is connecting
  client.Reset();
  // The proxy's side of the client's connection is closed at once (the dial's socket and namespace are open).
  for (int i = 0; i < 500 && OpenFds() != before + 2; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(OpenFds(), before + 2);
  EXPECT_EQ(proxy_->dials(), 1u);
  // Room in the queue: the SYN sent again is answered, the dial connects, and its connection is closed at once.
  Fd(::accept4(app.get(), nullptr, nullptr, SOCK_CLOEXEC)).Reset();
  filler.Reset();
  pollfd p{app.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1) << "the dial did not connect";
  Fd accepted(::accept4(app.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(accepted.valid());
  EXPECT_TRUE(EndsWithin(accepted.get(), milliseconds(2000)));  // ended, with no byte sent
  accepted.Reset();
  EXPECT_TRUE(Drained());
  EXPECT_EQ(proxy_->dials(), 0u);
  for (int i = 0; i < 500 && OpenFds() != before - 1; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(OpenFds(), before - 1);  // all but the filler, closed since
}

TEST_F(PreviewProxyTest, AClientStillSendingItsBodyWhileItsDialWaitsIsNotTakenForGone) {
  RemakeHeld();
  auto [app, app_port] = ListenLoopback();
  std::string seen;
  std::thread server([&, fd = app.get()] {
    Fd c(::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC));
    char buf[4096];
    while (seen.find("abcdefghij") == std::string::npos) {
      ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
      if (n <= 0) return;
      seen.append(buf, static_cast<size_t>(n));
    }
    const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    ::send(c.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
  });
  const std::string head = "POST / HTTP/1.1\r\nHost: " + Host(app_port) +
                           "\r\nCookie: isb_preview=" + Cookie(app_port) + "\r\nContent-Length: 10\r\n\r\n";
  Fd client = Connect(head + "abcde");
  for (int i = 0; i < 500 && proxy_->dials() != 1; ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(proxy_->dials(), 1u);
  // The rest of the body comes while the dial waits, in two pieces: the hang-up watch reads none of it.
  ASSERT_EQ(::send(client.get(), "fgh", 3, MSG_NOSIGNAL), 3);
  std::this_thread::sleep_for(milliseconds(100));
  ASSERT_EQ(::send(client.get(), "ij", 2, MSG_NOSIGNAL), 2);
  std::this_thread::sleep_for(milliseconds(100));
  Release();
  EXPECT_EQ(ReadToEnd(client.get()), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  server.join();
  EXPECT_EQ(seen, "POST / HTTP/1.1\r\nHost: " + Host(app_port) + "\r\nContent-Length: 10\r\n\r\nabcdefghij");
  EXPECT_TRUE(Drained());
}

TEST_F(PreviewProxyTest, OpenConnectionsAreCutWhenThePreviewEnds) {
  access_.OnEnded([this] { proxy_->CutEnded(); });
  FakeApp app({kHello});
  Fd client = Connect(Get(app.port(), Cookie(app.port())));
  EXPECT_EQ(ReadBytes(client.get(), kHello.size()), kHello);
  EXPECT_EQ(access_.Close(kSandbox, 0), 1u);
  EXPECT_TRUE(EndsWithin(client.get(), milliseconds(2000)));
  EXPECT_TRUE(Drained());
  access_.OnEnded({});
}

TEST_F(PreviewProxyTest, EveryDescriptorIsReleasedOnceConnectionsEnd) {
  // A first connection, for what the event loop makes once (its epoll, eventfd and timerfd).
  EXPECT_EQ(Through("GET / HTTP/1.1\r\nHost: isb.example\r\n\r\n").substr(0, 12), "HTTP/1.1 421");
  ASSERT_TRUE(Drained());
  const size_t before = OpenFds();
  {
    FakeApp app({kHello});
    const std::string cookie = Cookie(app.port());
    Fd client = Connect(Get(app.port(), cookie));
    EXPECT_EQ(ReadBytes(client.get(), kHello.size()), kHello);
    Fd refused = Connect(Get(1, cookie));  // another preview's host: 403 (the cookie is port app.port()'s)
    EXPECT_EQ(ReadToEnd(refused.get()).substr(0, 24), "HTTP/1.1 403 Forbidden\r\n");
    Fd idle = Connect("GET / HT");
  }
  ASSERT_TRUE(Drained());
  EXPECT_EQ(OpenFds(), before);
}

}  // namespace
}  // namespace isb::daemon
