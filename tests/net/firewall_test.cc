// The sandbox network and its host-side rules, in network namespaces of the test's own: one plays the host, others
// the sandboxes and a public server. Real veths, real nftables, real TCP and UDP.
#include "net/firewall.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "base/fd.h"
#include "base/file.h"
#include "must_work.h"
#include "net/netlink.h"
#include "net/sandbox_network.h"

namespace isb::net {
namespace {

// A fresh network namespace, alive as long as the returned fd.
Fd NewNetns() {
  Fd ns;
  std::thread([&] {
    if (::unshare(CLONE_NEWNET) != 0) return;
    ns = Fd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  }).join();
  return ns;
}

// Runs `fn` in `ns`, failing the test on error.
void In(const Fd& ns, const std::function<Status()>& fn) {
  Status s = InNetns(ns.get(), fn);
  ASSERT_TRUE(s.ok()) << s.error().message;
}

sockaddr_in Addr(uint32_t host_order, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr = ToInAddr(host_order);
  a.sin_port = htons(port);
  return a;
}

uint32_t Ip(const char* text) {
  in_addr a{};
  ::inet_pton(AF_INET, text, &a);
  return ntohl(a.s_addr);
}

// A socket of `type` created in `ns` (it stays in that namespace whichever thread uses it later).
Fd SocketIn(const Fd& ns, int type) {
  Fd s;
  In(ns, [&]() -> Status {
    s = Fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
    return s.valid() ? Status() : Error::Sys("socket");
  });
  return s;
}

Fd ListenIn(const Fd& ns, uint32_t addr, uint16_t port) {
  Fd s = SocketIn(ns, SOCK_STREAM);
  int one = 1;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = Addr(addr, port);
  EXPECT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  EXPECT_EQ(::listen(s.get(), 16), 0);
  return s;
}

// A UDP socket of `ns` bound to addr:port.
Fd UdpIn(const Fd& ns, uint32_t addr, uint16_t port) {
  Fd s = SocketIn(ns, SOCK_DGRAM);
  sockaddr_in a = Addr(addr, port);
  EXPECT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  return s;
}

// Connects from `ns`; 0 on success (the connected socket in `out`), else the errno, ETIMEDOUT after 1.5 s.
int ConnectFrom(const Fd& ns, uint32_t addr, uint16_t port, Fd* out = nullptr) {
  Fd s = SocketIn(ns, SOCK_STREAM | SOCK_NONBLOCK);
  sockaddr_in a = Addr(addr, port);
  if (::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) return errno;
  pollfd p{s.get(), POLLOUT, 0};
  if (::poll(&p, 1, 1500) == 0) return ETIMEDOUT;
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err == 0 && out != nullptr) *out = std::move(s);
  return err;
}

// Sends one datagram from `ns`; true when `receiver` got it within 300 ms.
bool UdpReaches(const Fd& ns, uint32_t addr, uint16_t port, const Fd& receiver) {
  Fd s = SocketIn(ns, SOCK_DGRAM);
  sockaddr_in a = Addr(addr, port);
  ::sendto(s.get(), "q", 1, 0, reinterpret_cast<sockaddr*>(&a), sizeof a);
  pollfd p{receiver.get(), POLLIN, 0};
  if (::poll(&p, 1, 300) != 1) return false;
  char buf[16];
  return ::recv(receiver.get(), buf, sizeof buf, 0) == 1;
}

class FirewallTest : public ::testing::Test {
 protected:
  static constexpr uint16_t kProxyPort = 15001, kDnsPort = 15053;

  void SetUp() override {
    ISB_REQUIRE_ROOT();
    host_ = NewNetns();
    ASSERT_TRUE(host_.valid()) << "cannot create a network namespace: " << std::strerror(errno);
    In(host_, [] { return WriteKernelFile("/proc/sys/net/ipv4/ip_forward", "1"); });
  }

  // A sandbox namespace attached at `slot` of the pool.
  Fd Sandbox(uint32_t index, SandboxLink* link) {
    Fd ns = NewNetns();
    In(host_, [&]() -> Status {
      ISB_ASSIGN_OR_RETURN(*link, AttachSandbox(ns.get(), pool_.SlotAt(index), "isb"));
      return {};
    });
    return ns;
  }

  // What isb listens on in the host, on every address: the proxy, and the DNS responder over UDP and TCP.
  struct Responders {
    Fd proxy, dns, dns_tcp;
  };
  Responders ListenAsIsb() {
    return {ListenIn(host_, INADDR_ANY, kProxyPort), UdpIn(host_, INADDR_ANY, kDnsPort),
            ListenIn(host_, INADDR_ANY, kDnsPort)};
  }

  Status Apply(const std::vector<SandboxRules>& rules) {
    FirewallConfig c;
    c.proxy_port = kProxyPort;
    c.dns_port = kDnsPort;
    return InNetns(host_.get(), [&] { return ApplyRuleset(RenderRuleset(c, rules)); });
  }

  Fd host_;
  AddressPool pool_{*ParseSubnet(kDefaultSandboxSubnet)};
};

TEST_F(FirewallTest, AttachGivesTheSandboxItsAddressItsRouteAndNoIpv6) {
  SandboxLink link;
  Fd sb = Sandbox(1, &link);
  EXPECT_EQ(link.host_ifname, "isb1");
  EXPECT_EQ(FormatIpv4(link.slot.host), "198.18.0.5");
  EXPECT_EQ(FormatIpv4(link.slot.sandbox), "198.18.0.6");
  In(sb, []() -> Status {
    EXPECT_EQ(*ReadFile("/proc/sys/net/ipv6/conf/eth0/disable_ipv6"), "1\n");
    EXPECT_EQ(*ReadFile("/proc/sys/net/ipv6/conf/all/disable_ipv6"), "1\n");
    std::string routes = *ReadFile("/proc/thread-self/net/route");
    // The default route through the host end (198.18.0.5 as the kernel prints it) and the /30.
    EXPECT_NE(routes.find("eth0\t00000000\t050012C6"), std::string::npos) << routes;
    return {};
  });
  In(host_, [] {
    EXPECT_EQ(*ReadFile("/proc/sys/net/ipv6/conf/isb1/disable_ipv6"), "1\n");
    return Status();
  });
  // No rules yet: a listener on the host end is reachable, as a plain veth would have it.
  Fd l = ListenIn(host_, link.slot.host, 8080);
  EXPECT_EQ(ConnectFrom(sb, link.slot.host, 8080), 0);
  // Detach removes both ends; a second detach is not an error.
  In(host_, [&] { return DetachSandbox(link.host_ifname); });
  In(host_, [&] { return DetachSandbox(link.host_ifname); });
  In(host_, [&]() -> Status {
    ISB_ASSIGN_OR_RETURN(Netlink nl, Netlink::Open());
    EXPECT_EQ(nl.IfIndex("isb1").error().code, Code::kNotFound);
    return {};
  });
  In(sb, []() -> Status {
    ISB_ASSIGN_OR_RETURN(Netlink nl, Netlink::Open());
    EXPECT_EQ(nl.IfIndex("eth0").error().code, Code::kNotFound);
    return {};
  });
}

TEST_F(FirewallTest, AListedSandboxReachesOnlyTheProxyOnItsPortsAndDns) {
  SandboxLink a, b;
  Fd sa = Sandbox(1, &a);
  Fd sb = Sandbox(2, &b);
  ASSERT_TRUE(Apply({{a.host_ifname, EgressMode::kList, {443, 80}}, {b.host_ifname, EgressMode::kList, {443}}}).ok());

  auto [proxy, dns, dns_tcp] = ListenAsIsb();
  Fd host_service = ListenIn(host_, INADDR_ANY, 22);
  Fd other_udp = UdpIn(host_, INADDR_ANY, 9999);

  // A listed port on the host end lands on the proxy, which learns the port asked for and, from the address the
  // connection arrived at, the sandbox.
  Fd c;
  ASSERT_EQ(ConnectFrom(sa, a.slot.host, 443, &c), 0);
  Fd accepted(::accept4(proxy.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(accepted.valid());
  sockaddr_in local{}, original{};
  socklen_t len = sizeof local;
  ::getsockname(accepted.get(), reinterpret_cast<sockaddr*>(&local), &len);
  EXPECT_EQ(FormatIpv4(ntohl(local.sin_addr.s_addr)), "198.18.0.5");
  len = sizeof original;
  ASSERT_EQ(::getsockopt(accepted.get(), SOL_IP, SO_ORIGINAL_DST, &original, &len), 0);
  EXPECT_EQ(ntohs(original.sin_port), 443);
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 80), 0);
  // Port 80 is listed for a, not for b.
  EXPECT_EQ(ConnectFrom(sb, b.slot.host, 80), ECONNREFUSED);
  // Everything else is refused at once (TCP) or vanishes (UDP): other ports, the proxy port asked for directly, the
  // host's own services on any of its addresses, other sandboxes.
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 8443), ECONNREFUSED);
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, kProxyPort), ECONNREFUSED);
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 22), ECONNREFUSED);
  EXPECT_EQ(ConnectFrom(sa, b.slot.host, 22), ECONNREFUSED);
  EXPECT_EQ(ConnectFrom(sa, b.slot.sandbox, 443), ECONNREFUSED);
  EXPECT_TRUE(UdpReaches(sa, a.slot.host, 53, dns));
  // DNS over TCP: port 53 lands on the responder's TCP side; its own port asked for directly is refused.
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 53), 0);
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, kDnsPort), ECONNREFUSED);
  EXPECT_FALSE(UdpReaches(sa, a.slot.host, 9999, other_udp));
  EXPECT_FALSE(UdpReaches(sa, a.slot.host, kDnsPort, dns));

  // A live change: b's list gains port 80, atomically, without touching a's connection.
  ASSERT_TRUE(Apply({{a.host_ifname, EgressMode::kList, {443, 80}}, {b.host_ifname, EgressMode::kList, {443, 80}}}).ok());
  EXPECT_EQ(ConnectFrom(sb, b.slot.host, 80), 0);
  EXPECT_EQ(::send(c.get(), "x", 1, MSG_NOSIGNAL), 1);
  char got = 0;
  EXPECT_EQ(::recv(accepted.get(), &got, 1, 0), 1);
  EXPECT_EQ(got, 'x');
}

// The proxy and the DNS responder listen on every address of the host and know a sandbox by the address a
// connection arrives at: only a sandbox's own redirected traffic may reach them. The host itself and a machine on
// its LAN (here a namespace on a veth that is no sandbox's) are dropped, on the sandbox's host end and on loopback.
TEST_F(FirewallTest, OnlySandboxesReachTheProxyAndTheDnsResponder) {
  SandboxLink a, lan_link;
  Fd sa = Sandbox(1, &a);
  Fd lan = NewNetns();
  In(host_, [&]() -> Status {
    ISB_ASSIGN_OR_RETURN(lan_link, AttachSandbox(lan.get(), pool_.SlotAt(2), "lan"));
    return {};
  });
  ASSERT_TRUE(Apply({{a.host_ifname, EgressMode::kList, {443}}}).ok());
  auto [proxy, dns, dns_tcp] = ListenAsIsb();
  Fd host_service = ListenIn(host_, INADDR_ANY, 8080);
  In(host_, []() -> Status {
    ISB_ASSIGN_OR_RETURN(Netlink nl, Netlink::Open());
    ISB_ASSIGN_OR_RETURN(int lo, nl.IfIndex("lo"));
    return nl.SetUp(lo);
  });

  // The sandbox: its listed port and DNS land on them.
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 443), 0);
  EXPECT_TRUE(UdpReaches(sa, a.slot.host, 53, dns));
  // The host, on the sandbox's host end and on loopback: dropped.
  for (uint32_t to : {a.slot.host, Ip("127.0.0.1")}) {
    EXPECT_EQ(ConnectFrom(host_, to, kProxyPort), ETIMEDOUT) << FormatIpv4(to);
    EXPECT_EQ(ConnectFrom(host_, to, kDnsPort), ETIMEDOUT) << FormatIpv4(to);
    EXPECT_FALSE(UdpReaches(host_, to, kDnsPort, dns)) << FormatIpv4(to);
  }
  // The LAN, to the sandbox's host end: the ports themselves dropped, and the sandbox's redirects are not its.
  EXPECT_EQ(ConnectFrom(lan, a.slot.host, kProxyPort), ETIMEDOUT);
  EXPECT_EQ(ConnectFrom(lan, a.slot.host, kDnsPort), ETIMEDOUT);
  EXPECT_FALSE(UdpReaches(lan, a.slot.host, kDnsPort, dns));
  EXPECT_EQ(ConnectFrom(lan, a.slot.host, 443), ECONNREFUSED);
  EXPECT_FALSE(UdpReaches(lan, a.slot.host, 53, dns));
  // The controls: the host and the LAN do reach the host's other services, so what stopped them was the rules.
  EXPECT_EQ(ConnectFrom(host_, Ip("127.0.0.1"), 8080), 0);
  EXPECT_EQ(ConnectFrom(lan, a.slot.host, 8080), 0);
  In(host_, [&] { return DetachSandbox(lan_link.host_ifname); });
}

TEST_F(FirewallTest, AnOpenSandboxReachesPublicAddressesOnlyAndIsMasqueraded) {
  SandboxLink open_link, list_link;
  Fd open_sb = Sandbox(1, &open_link);
  Fd list_sb = Sandbox(2, &list_link);
  // A public server in a namespace of its own behind the host, and a private one on the same link.
  Fd internet = NewNetns();
  In(host_, [&]() -> Status {
    ISB_ASSIGN_OR_RETURN(Netlink nl, Netlink::Open());
    ISB_TRY(nl.CreateVeth("wan0", "eth0", internet.get()));
    ISB_ASSIGN_OR_RETURN(int wan, nl.IfIndex("wan0"));
    ISB_TRY(nl.AddAddress(wan, ToInAddr(Ip("11.0.0.254")), 24));
    ISB_TRY(nl.AddAddress(wan, ToInAddr(Ip("10.20.0.254")), 24));
    return nl.SetUp(wan);
  });
  In(internet, []() -> Status {
    ISB_ASSIGN_OR_RETURN(Netlink nl, Netlink::Open());
    ISB_ASSIGN_OR_RETURN(int eth0, nl.IfIndex("eth0"));
    ISB_TRY(nl.AddAddress(eth0, ToInAddr(Ip("11.0.0.1")), 24));
    ISB_TRY(nl.AddAddress(eth0, ToInAddr(Ip("10.20.0.1")), 24));
    ISB_TRY(nl.SetUp(eth0));
    return nl.AddDefaultRoute(ToInAddr(Ip("11.0.0.254")), eth0);
  });
  Fd server = ListenIn(internet, INADDR_ANY, 80);
  ASSERT_TRUE(Apply({{open_link.host_ifname, EgressMode::kOpen, {}}, {list_link.host_ifname, EgressMode::kList, {443}}}).ok());

  Fd c;
  ASSERT_EQ(ConnectFrom(open_sb, Ip("11.0.0.1"), 80, &c), 0);
  sockaddr_in peer{};
  socklen_t len = sizeof peer;
  Fd accepted(::accept4(server.get(), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC));
  ASSERT_TRUE(accepted.valid());
  EXPECT_EQ(FormatIpv4(ntohl(peer.sin_addr.s_addr)), "11.0.0.254") << "the sandbox's address left the host";
  EXPECT_EQ(ConnectFrom(open_sb, Ip("10.20.0.1"), 80), ECONNREFUSED);
  EXPECT_EQ(ConnectFrom(open_sb, open_link.slot.host, 22), ECONNREFUSED);
  EXPECT_EQ(ConnectFrom(open_sb, Ip("11.0.0.254"), 22), ECONNREFUSED);
  EXPECT_EQ(ConnectFrom(open_sb, list_link.slot.sandbox, 443), ECONNREFUSED);
  EXPECT_EQ(ConnectFrom(list_sb, Ip("11.0.0.1"), 80), ECONNREFUSED);
}

TEST_F(FirewallTest, ABadRulesetLeavesTheTableAsItWasAndSaysWhy) {
  SandboxLink a;
  Fd sa = Sandbox(1, &a);
  ASSERT_TRUE(Apply({{a.host_ifname, EgressMode::kList, {443}}}).ok());
  Status bad = InNetns(host_.get(), [] { return ApplyRuleset("table inet isb { chain c { nonsense } }\n"); });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("nft refused the ruleset: ", 0), 0u) << bad.error().message;
  EXPECT_NE(bad.error().message.find("syntax error"), std::string::npos) << bad.error().message;
  Fd proxy = ListenIn(host_, INADDR_ANY, kProxyPort);
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 443), 0);
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 80), ECONNREFUSED);
  In(host_, [] { return DeleteTable("isb"); });
  // Without the table, the veth is plain again.
  Fd svc = ListenIn(host_, INADDR_ANY, 80);
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 80), 0);
}

}  // namespace
}  // namespace isb::net
