// The SSRF-safe dialer against an injected resolver and connector, and for real against loopback listeners of the
// test's own, reached through pins.
#include "egress/dialer.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "must_work.h"

namespace isb::egress {
namespace {

using std::chrono::milliseconds;

const char* const kHint =
    "; a non-public address is reachable only through a pin (isb serve --egress-pin NAME=IP[:PORT])";

IpAddress Ip(const char* text) { return *ParseIpAddress(text); }

Pin MustPin(const std::string& text) {
  auto pin = ParsePin(text);
  EXPECT_TRUE(pin.ok()) << pin.error().message;
  return *pin;
}

// A TCP listener on 127.0.0.1 at a port the kernel picks.
struct Listener {
  Fd fd;
  uint16_t port = 0;

  explicit Listener(int backlog = 16) {
    fd = Fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(fd.get(), backlog), 0);
    socklen_t len = sizeof a;
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }

  // True when a connection waits to be accepted.
  bool Pending() const {
    pollfd p{fd.get(), POLLIN, 0};
    return poll(&p, 1, 0) == 1;
  }
};

// Records what it was asked to connect to, and hands back one end of a socket pair.
struct FakeNet {
  std::vector<std::string> asked;
  std::vector<Endpoint> connected;
  std::vector<Result<std::vector<IpAddress>>> answers;          // one per resolution, in order
  std::vector<IpAddress> local = {Ip("127.0.0.1"), Ip("::1")};  // the host's own addresses

  DialerOptions Options() {
    DialerOptions o;
    o.resolver = [this](const std::string& name) -> Result<std::vector<IpAddress>> {
      asked.push_back(name);
      if (asked.size() > answers.size()) return Error::Of(Code::kInternal, "resolver asked too often");
      return answers[asked.size() - 1];
    };
    o.local_addresses = [this]() -> Result<std::vector<IpAddress>> { return local; };
    o.connector = [this](const Endpoint& to, milliseconds) -> Result<Fd> {
      connected.push_back(to);
      int sv[2];
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return Error::Sys("socketpair");
      close(sv[1]);
      return Fd(sv[0]);
    };
    return o;
  }
};

Dialer MakeDialer(DialerOptions o) {
  auto d = Dialer::Create(std::move(o));
  EXPECT_TRUE(d.ok()) << d.error().message;
  return std::move(*d);
}

TEST(DialerTest, RebindingCannotSwapAnAddressIn) {
  FakeNet net;
  net.answers = {std::vector<IpAddress>{Ip("93.184.216.34")}, std::vector<IpAddress>{Ip("127.0.0.1")}};
  Dialer dialer = MakeDialer(net.Options());

  auto first = dialer.Dial("rebind.example", 443);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(net.asked, std::vector<std::string>{"rebind.example"});  // resolved once, not again to connect
  ASSERT_EQ(net.connected.size(), 1u);
  EXPECT_EQ(net.connected[0], (Endpoint{Ip("93.184.216.34"), 443}));

  auto second = dialer.Dial("rebind.example", 443);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, Code::kForbidden);
  EXPECT_EQ(second.error().message,
            std::string("egress refused 'rebind.example': it resolves to loopback (127.0.0.0/8)") + kHint);
  EXPECT_EQ(net.asked.size(), 2u);
  EXPECT_EQ(net.connected.size(), 1u);  // never connected to the second answer
}

TEST(DialerTest, RefusesWhenAnyAddressIsNotPublic) {
  FakeNet net;
  net.answers = {std::vector<IpAddress>{Ip("8.8.8.8"), Ip("2606:4700::1"), Ip("::ffff:169.254.169.254")}};
  Dialer dialer = MakeDialer(net.Options());
  auto r = dialer.Resolve("Mixed.Example.", 443);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kForbidden);
  EXPECT_EQ(r.error().message,
            std::string("egress refused 'mixed.example': it resolves to link-local (169.254.0.0/16), the cloud "
                        "metadata service inside an IPv4-mapped address (::ffff:0:0/96)") +
                kHint);
  EXPECT_EQ(r.error().message.find("169.254.169.254"), std::string::npos);  // the address itself never shows
  EXPECT_EQ(net.asked, std::vector<std::string>{"mixed.example"});
  EXPECT_TRUE(net.connected.empty());
}

TEST(DialerTest, TheHostsOwnPublicAddressesAreRefused) {
  // The daemon dials from the host: a name (or literal) that points at one of the host's own public addresses would
  // reach its services (sshd, a database on 0.0.0.0, isb's API), in any spelling of that address.
  FakeNet net;
  net.local = {Ip("127.0.0.1"), Ip("93.184.216.99"), Ip("2606:4700::99")};
  net.answers = {std::vector<IpAddress>{Ip("8.8.8.8"), Ip("93.184.216.99")},
                 std::vector<IpAddress>{Ip("2606:4700::99")}, std::vector<IpAddress>{Ip("::ffff:93.184.216.99")},
                 std::vector<IpAddress>{Ip("93.184.216.98")}};
  Dialer dialer = MakeDialer(net.Options());
  const std::string resolves =
      "': it resolves to an address of this host (its own services are never reached "
      "through egress)" +
      std::string(kHint);
  for (const char* name : {"one.example", "two.example", "three.example"}) {
    auto r = dialer.Dial(name, 22);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().code, Code::kForbidden);
    EXPECT_EQ(r.error().message, "egress refused '" + std::string(name) + resolves);
    EXPECT_EQ(r.error().message.find("93.184"), std::string::npos);  // the address itself never shows
  }
  for (const char* literal : {"93.184.216.99", "1572395107", "[::ffff:93.184.216.99]", "2606:4700::99"}) {
    auto r = dialer.Resolve(literal, 22);
    ASSERT_FALSE(r.ok()) << literal;
    EXPECT_EQ(r.error().message, "egress refused '" + std::string(literal) +
                                     "': it is an address of this host (its own services are never reached through "
                                     "egress)" +
                                     kHint);
  }
  EXPECT_TRUE(net.connected.empty());
  // Another public address is reached as before.
  auto other = dialer.Dial("four.example", 22);
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_EQ(net.connected, (std::vector<Endpoint>{{Ip("93.184.216.98"), 22}}));
}

TEST(DialerTest, HostAddressesListsLoopback) {
  auto local = HostAddresses();
  ASSERT_TRUE(local.ok()) << local.error().message;
  EXPECT_NE(std::find(local->begin(), local->end(), Ip("127.0.0.1")), local->end());
}

// The dialer's view of the host's addresses is read again only after the kernel announced a change, and an address
// added or removed is seen by the very next check. In a network namespace of the test's own: an address added to
// its loopback (an alias, as `ip addr add` would) and taken away again.
TEST(DialerTest, TheHostAddressWatchReadsAgainOnlyAfterAChange) {
  ISB_REQUIRE_ROOT();
  std::thread([] {
    ASSERT_EQ(::unshare(CLONE_NEWNET), 0) << std::strerror(errno);
    HostAddressWatch watch;
    auto has = [&](const char* ip) {
      auto local = watch.Get();
      EXPECT_TRUE(local.ok()) << local.error().message;
      return local.ok() && std::find(local->begin(), local->end(), Ip(ip)) != local->end();
    };
    EXPECT_FALSE(has("203.0.113.9"));
    EXPECT_FALSE(has("203.0.113.9"));
    EXPECT_EQ(watch.reads(), 1u) << "read again without a change";

    Fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    ASSERT_TRUE(s.valid());
    ifreq req{};
    std::strncpy(req.ifr_name, "lo:1", IFNAMSIZ - 1);
    auto* sin = reinterpret_cast<sockaddr_in*>(&req.ifr_addr);
    sin->sin_family = AF_INET;
    ASSERT_EQ(::inet_pton(AF_INET, "203.0.113.9", &sin->sin_addr), 1);
    ASSERT_EQ(::ioctl(s.get(), SIOCSIFADDR, &req), 0) << std::strerror(errno);
    EXPECT_TRUE(has("203.0.113.9")) << "an address added before the check was not seen";
    EXPECT_EQ(watch.reads(), 2u);
    EXPECT_TRUE(has("203.0.113.9"));
    EXPECT_EQ(watch.reads(), 2u);

    // Taking the alias down removes its address.
    ASSERT_EQ(::ioctl(s.get(), SIOCGIFFLAGS, &req), 0) << std::strerror(errno);
    req.ifr_flags = static_cast<short>(req.ifr_flags & ~IFF_UP);
    ASSERT_EQ(::ioctl(s.get(), SIOCSIFFLAGS, &req), 0) << std::strerror(errno);
    EXPECT_FALSE(has("203.0.113.9")) << "an address removed before the check was still listed";
    EXPECT_EQ(watch.reads(), 3u);
  }).join();
}

TEST(DialerTest, ConnectsOnlyToCheckedAddressesInOrder) {
  FakeNet net;
  net.answers = {std::vector<IpAddress>{Ip("8.8.8.8"), Ip("2001:4860:4860::8888"), Ip("64:ff9b::8.8.4.4")}};
  Dialer dialer = MakeDialer(net.Options());
  auto r = dialer.Resolve("dns.example", 853);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, (std::vector<Endpoint>{
                    {Ip("8.8.8.8"), 853}, {Ip("2001:4860:4860::8888"), 853}, {Ip("64:ff9b::808:404"), 853}}));
}

TEST(DialerTest, AddressLiteralsAreJudgedWithoutResolving) {
  FakeNet net;
  Dialer dialer = MakeDialer(net.Options());
  struct Case {
    const char* host;
    const char* reason;
  };
  const Case refused[] = {
      {"127.0.0.1", "loopback (127.0.0.0/8)"},
      {"0x7f.1", "loopback (127.0.0.0/8)"},
      {"2130706433", "loopback (127.0.0.0/8)"},
      {"[::1]", "loopback (::1)"},
      {"::ffff:10.0.0.1", "private (10.0.0.0/8) inside an IPv4-mapped address (::ffff:0:0/96)"},
      {"0251.0376.0251.0376", "link-local (169.254.0.0/16), the cloud metadata service"},
      {"100.100.100.100", "shared address space, CGNAT (100.64.0.0/10)"},
      {"0", "unspecified (0.0.0.0)"},
  };
  for (const Case& c : refused) {
    auto r = dialer.Dial(c.host, 80);
    ASSERT_FALSE(r.ok()) << c.host;
    EXPECT_EQ(r.error().code, Code::kForbidden);
    EXPECT_EQ(r.error().message, "egress refused '" + std::string(c.host) + "': " + c.reason + kHint);
  }
  auto ok = dialer.Dial("[2606:4700::1111]", 443);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  auto ok4 = dialer.Dial("134744072", 53);
  ASSERT_TRUE(ok4.ok()) << ok4.error().message;
  EXPECT_EQ(net.connected, (std::vector<Endpoint>{{Ip("2606:4700::1111"), 443}, {Ip("8.8.8.8"), 53}}));
  EXPECT_TRUE(net.asked.empty());
}

TEST(DialerTest, RefusesHostsThatAreNeitherNameNorAddress) {
  FakeNet net;
  Dialer dialer = MakeDialer(net.Options());
  auto r = dialer.Dial("evil\r\nhost", 80);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_EQ(r.error().message,
            "egress: 'evil\\x0d\\x0ahost' is neither a host name nor an address: it contains '\\x0d'");
  auto z = dialer.Dial("fe80::1%eth0", 80);
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.error().message, "egress: 'fe80::1%eth0' is neither a host name nor an address: it contains ':'");
  EXPECT_TRUE(net.asked.empty());
}

TEST(DialerTest, ResolverErrorsPassThrough) {
  FakeNet net;
  net.answers = {Error::Of(Code::kNotFound, "egress: cannot resolve 'nope.example': Name or service not known"),
                 std::vector<IpAddress>{}};
  Dialer dialer = MakeDialer(net.Options());
  auto r = dialer.Dial("nope.example", 443);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kNotFound);
  EXPECT_EQ(r.error().message, "egress: cannot resolve 'nope.example': Name or service not known");
  auto empty = dialer.Dial("empty.example", 443);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, Code::kNotFound);
  EXPECT_EQ(empty.error().message, "egress: 'empty.example' has no address");
  EXPECT_TRUE(net.connected.empty());
}

TEST(DialerTest, FallsBackToTheNextAddress) {
  FakeNet net;
  net.answers = {std::vector<IpAddress>{Ip("2001:4860:4860::8888"), Ip("8.8.8.8")}};
  DialerOptions o = net.Options();
  auto fake = o.connector;
  o.connector = [fake](const Endpoint& to, milliseconds t) -> Result<Fd> {
    if (to.address.v6) return Error{"Network is unreachable", ENETUNREACH, Code::kUnavailable};
    return fake(to, t);
  };
  Dialer dialer = MakeDialer(std::move(o));
  ASSERT_TRUE(dialer.Dial("dual.example", 443).ok());
  EXPECT_EQ(net.connected, (std::vector<Endpoint>{{Ip("8.8.8.8"), 443}}));
}

TEST(DialerTest, TwoPinsForOneNameAreRefused) {
  DialerOptions o;
  o.pins = {MustPin("a.test=10.0.0.1"), MustPin("A.test.=10.0.0.2")};
  auto d = Dialer::Create(std::move(o));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, Code::kInvalidArgument);
  EXPECT_EQ(d.error().message, "egress pin: 'a.test' is pinned twice; give each name one pin");
}

// For real: a pin reaches the test's own loopback listener, and the bytes cross both ways unchanged.
TEST(DialerTest, PinReachesALoopbackListener) {
  Listener server;
  DialerOptions o;
  o.pins = {MustPin("echo.test=127.0.0.1:" + std::to_string(server.port))};
  o.resolver = [](const std::string& name) -> Result<std::vector<IpAddress>> {
    ADD_FAILURE() << "a pinned name was resolved: " << name;
    return Error::Of(Code::kInternal, "no");
  };
  Dialer dialer = MakeDialer(std::move(o));
  auto client = dialer.Dial("ECHO.test.", 443);
  ASSERT_TRUE(client.ok()) << client.error().message;
  Fd conn(accept4(server.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(conn.valid());

  const std::string ping = "ping\r\n\x00\xff";
  ASSERT_EQ(write(client->get(), ping.data(), ping.size()), static_cast<ssize_t>(ping.size()));
  char buf[64];
  ASSERT_EQ(read(conn.get(), buf, sizeof buf), static_cast<ssize_t>(ping.size()));
  EXPECT_EQ(std::string(buf, ping.size()), ping);
  ASSERT_EQ(write(conn.get(), "pong", 4), 4);
  ASSERT_EQ(read(client->get(), buf, sizeof buf), 4);  // blocking on return, as documented
  EXPECT_EQ(std::string(buf, 4), "pong");
}

TEST(DialerTest, PinHoldsForExactlyThatName) {
  Listener server;
  FakeNet net;
  net.answers = {std::vector<IpAddress>{Ip("127.0.0.1")}};
  DialerOptions o = net.Options();
  o.pins = {MustPin("echo.test=127.0.0.1:" + std::to_string(server.port))};
  Dialer dialer = MakeDialer(std::move(o));
  auto r = dialer.Dial("sub.echo.test", 443);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            std::string("egress refused 'sub.echo.test': it resolves to loopback (127.0.0.0/8)") + kHint);
  EXPECT_TRUE(net.connected.empty());
  EXPECT_FALSE(server.Pending());
}

TEST(DialerTest, PinWithoutPortKeepsTheRequestedPort) {
  Listener server;
  DialerOptions o;
  o.pins = {MustPin("echo.test=127.0.0.1")};
  Dialer dialer = MakeDialer(std::move(o));
  auto endpoints = dialer.Resolve("echo.test", server.port);
  ASSERT_TRUE(endpoints.ok());
  EXPECT_EQ(*endpoints, (std::vector<Endpoint>{{Ip("127.0.0.1"), server.port}}));
  ASSERT_TRUE(dialer.Dial("echo.test", server.port).ok());
  EXPECT_TRUE(server.Pending());
}

// The system resolver for real: localhost is loopback, so it is refused without a pin, and nothing connects.
TEST(DialerTest, LocalhostIsRefusedWithoutAPin) {
  Listener server;
  Dialer dialer = MakeDialer(DialerOptions{});
  auto r = dialer.Dial("localhost", server.port);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kForbidden);
  // /etc/hosts may list ::1 before 127.0.0.1; either is loopback.
  EXPECT_TRUE(r.error().message ==
                  std::string("egress refused 'localhost': it resolves to loopback (127.0.0.0/8)") + kHint ||
              r.error().message == std::string("egress refused 'localhost': it resolves to loopback (::1)") + kHint)
      << r.error().message;
  EXPECT_FALSE(server.Pending());
}

TEST(DialerTest, RefusedConnectionNamesHostAndPort) {
  Fd bound(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));  // bound, never listening: connect is refused
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(bound.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(bound.get(), reinterpret_cast<sockaddr*>(&a), &len);
  DialerOptions o;
  o.pins = {MustPin("closed.test=127.0.0.1:" + std::to_string(ntohs(a.sin_port)))};
  Dialer dialer = MakeDialer(std::move(o));
  auto r = dialer.Dial("closed.test", 443);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kUnavailable);
  EXPECT_EQ(r.error().err, ECONNREFUSED);
  EXPECT_EQ(r.error().message, "egress: cannot connect to closed.test:443: Connection refused");
}

// A listener whose accept queue is full drops further SYNs, so a connect to it hangs until the timeout.
TEST(DialerTest, ConnectTimesOut) {
  Listener server(0);
  std::vector<Fd> fillers;
  for (int i = 0; i < 2; ++i) {
    auto f = ConnectTcp({Ip("127.0.0.1"), server.port}, milliseconds(200));
    if (f.ok()) fillers.push_back(std::move(*f));
  }
  ASSERT_GE(fillers.size(), 1u);

  auto start = std::chrono::steady_clock::now();
  auto r = ConnectTcp({Ip("127.0.0.1"), server.port}, milliseconds(300));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTimeout);
  EXPECT_EQ(r.error().message, "connect timed out after 300 ms");
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(900));

  DialerOptions o;
  o.pins = {MustPin("slow.test=127.0.0.1:" + std::to_string(server.port))};
  o.connect_timeout = milliseconds(250);
  Dialer dialer = MakeDialer(std::move(o));
  start = std::chrono::steady_clock::now();
  auto d = dialer.Dial("slow.test", 443);
  took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, Code::kTimeout);
  EXPECT_EQ(d.error().message, "egress: cannot connect to slow.test:443: connect timed out after 250 ms");
  EXPECT_GE(took, milliseconds(250));
  EXPECT_LT(took, milliseconds(850));
}

}  // namespace
}  // namespace isb::egress
