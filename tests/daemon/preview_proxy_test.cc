// The preview proxy without a sandbox: connections handed to it as the HTTP server hands them over, and an app on
// this process's own loopback (its network namespace stands in for the sandbox's).
#include "daemon/preview_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <thread>

#include "daemon/netns_dial.h"

namespace isb::daemon {
namespace {

// A listening socket on 127.0.0.1 and its port.
std::pair<Fd, uint16_t> ListenLoopback() {
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(s.get(), 8), 0);
  ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len);
  return {std::move(s), ntohs(a.sin_port)};
}

std::string ReadToEnd(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

class PreviewProxyTest : public ::testing::Test {
 protected:
  // Sends `request` through the proxy as a connection the HTTP server gave it; the whole response.
  std::string Through(const std::string& request) {
    auto [listener, port] = ListenLoopback();
    Fd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    int served = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
    proxy_.Take(served, request);
    return ReadToEnd(client.get());
  }
  std::string Host(uint16_t port) const { return std::to_string(port) + "-sb-0123456789abcdef-acme.localhost:8092"; }

  api::PreviewAccess access_{api::PreviewAccessOptions{}};
  PreviewProxy proxy_{access_, PreviewProxyOptions{.netns = [](const std::string&) { return OpenNetns(::getpid()); }}};
};

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

}  // namespace
}  // namespace isb::daemon
