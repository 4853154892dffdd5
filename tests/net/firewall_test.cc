// The sandbox network and its host-side rules, in network namespaces of the test's own: one plays the host, others
// the sandboxes and a public server. Real veths, real nftables, real TCP and UDP.
#include "net/firewall.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "base/fd.h"
#include "base/file.h"
#include "base/program.h"
#include "must_work.h"
#include "net/netlink.h"
#include "net/netns.h"
#include "net/nft_elements.h"
#include "net/sandbox_network.h"

namespace isb::net {
namespace {

using namespace isb::testing;  // NOLINT: the namespaces and sockets of net/netns.h

// A UDP socket of `ns` bound to addr:port.
Fd UdpIn(const Fd& ns, uint32_t addr, uint16_t port) {
  Fd s = SocketIn(ns, SOCK_DGRAM);
  sockaddr_in a = Addr(addr, port);
  EXPECT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  return s;
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

// True when `listener` gets a connection within 300 ms (which it accepts and closes).
bool Accepts(const Fd& listener) {
  pollfd p{listener.get(), POLLIN, 0};
  if (::poll(&p, 1, 300) != 1) return false;
  return Fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC)).valid();
}

// Closes a connected TCP socket without a FIN or a reset (repair mode), as a peer that vanished would: the kernel's
// tracking of the connection stays established.
void CloseSilently(Fd& s) {
  int one = 1;
  EXPECT_EQ(::setsockopt(s.get(), SOL_TCP, TCP_REPAIR, &one, sizeof one), 0) << std::strerror(errno);
  s.Reset();
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

  // A sandbox namespace attached at `slot` of the pool, its veth named with `prefix`.
  Fd Sandbox(uint32_t index, SandboxLink* link, const std::string& prefix = "isb") {
    Fd ns = NewNetns();
    In(host_, [&]() -> Status {
      ISB_ASSIGN_OR_RETURN(*link, AttachSandbox(ns.get(), pool_.SlotAt(index), prefix));
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

  // The table `table`, its sandboxes' veths named with the same prefix, as isb serve has it.
  Status Apply(const std::vector<SandboxRules>& rules, uint16_t proxy_port = kProxyPort, uint16_t dns_port = kDnsPort,
               const std::string& table = "isb") {
    FirewallConfig c;
    c.table = c.ifname_prefix = table;
    c.proxy_port = proxy_port;
    c.dns_port = dns_port;
    return InNetns(host_.get(), [&] { return ApplyRuleset(RenderRuleset(c, rules)); });
  }

  // The firewall of the table "isb", its veths named isb-*, as isb serve has it.
  static FirewallConfig IsbConfig() {
    FirewallConfig c;
    c.proxy_port = kProxyPort;
    c.dns_port = kDnsPort;
    return c;
  }

  Fd host_;
  AddressPool pool_{*ParseSubnet(kDefaultSandboxSubnet)};
};

TEST_F(FirewallTest, AttachGivesTheSandboxItsAddressItsRouteAndNoIpv6) {
  SandboxLink link;
  Fd sb = Sandbox(1, &link);
  EXPECT_EQ(link.host_ifname, "isb-1");
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
    EXPECT_EQ(*ReadFile("/proc/sys/net/ipv6/conf/isb-1/disable_ipv6"), "1\n");
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
    EXPECT_EQ(nl.IfIndex("isb-1").error().code, Code::kNotFound);
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
  ASSERT_TRUE(
      Apply({{a.host_ifname, EgressMode::kList, {443, 80}}, {b.host_ifname, EgressMode::kList, {443, 80}}}).ok());
  EXPECT_EQ(ConnectFrom(sb, b.slot.host, 80), 0);
  EXPECT_EQ(::send(c.get(), "x", 1, MSG_NOSIGNAL), 1);
  char got = 0;
  EXPECT_EQ(::recv(accepted.get(), &got, 1, 0), 1);
  EXPECT_EQ(got, 'x');
}

// Port 53 of the host end is the DNS responder's, over TCP as over UDP, also for a list that names a host on port 53
// (that host is for the explicit proxy): the answers a sandbox gets over TCP are the responder's, never a relay's.
TEST_F(FirewallTest, DnsOverTcpReachesTheResponderWhereAListNamesPort53) {
  SandboxLink a;
  Fd sa = Sandbox(1, &a);
  ASSERT_TRUE(Apply({{a.host_ifname, EgressMode::kList, {53, 443}}}).ok());
  auto [proxy, dns, dns_tcp] = ListenAsIsb();
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 53), 0);
  EXPECT_TRUE(Accepts(dns_tcp)) << "TCP to port 53 did not reach the DNS responder";
  EXPECT_FALSE(Accepts(proxy)) << "TCP to port 53 reached the proxy";
  EXPECT_TRUE(UdpReaches(sa, a.slot.host, 53, dns));
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 443), 0);
  EXPECT_TRUE(Accepts(proxy));
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
  Fd internet = Internet(host_);
  Fd server = ListenIn(internet, INADDR_ANY, 80);
  ASSERT_TRUE(
      Apply({{open_link.host_ifname, EgressMode::kOpen, {}}, {list_link.host_ifname, EgressMode::kList, {443}}}).ok());

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
  // DNS over UDP to the host end reaches the responder (which relays it to the host's resolvers); over TCP, and
  // the responder's own port asked for directly, nothing.
  auto [proxy, dns, dns_tcp] = ListenAsIsb();
  EXPECT_TRUE(UdpReaches(open_sb, open_link.slot.host, 53, dns));
  EXPECT_FALSE(UdpReaches(open_sb, open_link.slot.host, kDnsPort, dns));
  EXPECT_EQ(ConnectFrom(open_sb, open_link.slot.host, 53), ECONNREFUSED);
  EXPECT_FALSE(Accepts(dns_tcp));
}

// A sandbox's root may send from any source it likes (CAP_NET_RAW in its namespace, or an address added to eth0):
// a packet whose source its veth does not route back to reaches neither the host (the DNS responder would answer
// that address, from the host, where the sandbox may not go) nor, through it, anywhere else.
TEST_F(FirewallTest, APacketWithAForgedSourceIsDropped) {
  SandboxLink list_link, open_link;
  Fd list_sb = Sandbox(1, &list_link);
  Fd open_sb = Sandbox(2, &open_link);
  Fd internet = Internet(host_);
  Fd echo = UdpIn(internet, INADDR_ANY, 7);
  ASSERT_TRUE(
      Apply({{list_link.host_ifname, EgressMode::kList, {443}}, {open_link.host_ifname, EgressMode::kOpen, {}}}).ok());
  auto [proxy, dns, dns_tcp] = ListenAsIsb();
  // The forged source: a LAN address, added to each sandbox's eth0 (as its root may).
  for (const Fd* ns : {&list_sb, &open_sb}) {
    In(*ns, []() -> Status {
      ISB_ASSIGN_OR_RETURN(Netlink nl, Netlink::Open());
      ISB_ASSIGN_OR_RETURN(int eth0, nl.IfIndex("eth0"));
      return nl.AddAddress(eth0, ToInAddr(Ip("10.30.0.77")), 32);
    });
  }
  auto send_from = [&](const Fd& ns, uint32_t source, uint32_t to, uint16_t port) {
    Fd s = SocketIn(ns, SOCK_DGRAM);
    sockaddr_in from = Addr(source, 0);
    EXPECT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&from), sizeof from), 0) << std::strerror(errno);
    sockaddr_in a = Addr(to, port);
    EXPECT_EQ(::sendto(s.get(), "q", 1, 0, reinterpret_cast<sockaddr*>(&a), sizeof a), 1);
  };
  auto arrives = [](const Fd& receiver) {
    pollfd p{receiver.get(), POLLIN, 0};
    if (::poll(&p, 1, 300) != 1) return false;
    char buf[16];
    return ::recv(receiver.get(), buf, sizeof buf, 0) == 1;
  };
  // The controls: from their own addresses, DNS reaches the responder and the open sandbox the public echo.
  send_from(list_sb, list_link.slot.sandbox, list_link.slot.host, 53);
  EXPECT_TRUE(arrives(dns));
  send_from(open_sb, open_link.slot.sandbox, Ip("11.0.0.1"), 7);
  EXPECT_TRUE(arrives(echo));
  // Forged: nothing arrives.
  send_from(list_sb, Ip("10.30.0.77"), list_link.slot.host, 53);
  EXPECT_FALSE(arrives(dns));
  send_from(open_sb, Ip("10.30.0.77"), open_link.slot.host, 53);
  EXPECT_FALSE(arrives(dns));
  send_from(open_sb, Ip("10.30.0.77"), Ip("11.0.0.1"), 7);
  EXPECT_FALSE(arrives(echo));
}

// Two daemons on one host, each with its table and its veths' prefix: the one that forwards only sandboxes drops
// a LAN machine's packets, but lets the other daemon's open sandbox through to that daemon's own rules (its veth is
// an isb veth by its group, whatever its name), which pass it; a sandbox of neither is dropped.
TEST_F(FirewallTest, AnotherDaemonsOpenSandboxIsNotDroppedByTheForwardingOnlyRules) {
  SandboxLink mine, theirs;
  Fd my_sb = Sandbox(1, &mine);
  Fd their_sb = Sandbox(2, &theirs, "other");
  Fd internet = Internet(host_);
  Fd lan = LanMachine(host_);
  Fd server = ListenIn(internet, INADDR_ANY, 80);
  FirewallConfig c;
  c.proxy_port = kProxyPort;
  c.dns_port = kDnsPort;
  c.forward_only_sandboxes = true;
  Firewall firewall(c);
  In(host_, [&] { return firewall.Set({mine.host_ifname, EgressMode::kOpen, {}}); });
  ASSERT_TRUE(Apply({{theirs.host_ifname, EgressMode::kOpen, {}}}, kProxyPort + 1, kDnsPort + 1, "other").ok());
  EXPECT_EQ(ConnectFrom(my_sb, Ip("11.0.0.1"), 80), 0);
  EXPECT_EQ(ConnectFrom(their_sb, Ip("11.0.0.1"), 80), 0) << "the other daemon's open sandbox was dropped";
  EXPECT_EQ(ConnectFrom(lan, Ip("11.0.0.1"), 80), ETIMEDOUT);
  // The other daemon's rules still judge its sandboxes: a list sandbox of it reaches nothing out there.
  ASSERT_TRUE(Apply({{theirs.host_ifname, EgressMode::kList, {443}}}, kProxyPort + 1, kDnsPort + 1, "other").ok());
  EXPECT_EQ(ConnectFrom(their_sb, Ip("11.0.0.1"), 80), ECONNREFUSED);
  In(host_, [] { return DeleteTable("other"); });
}

// Where isb turned IPv4 forwarding on, the host forwards nothing but sandboxes: a machine on its LAN that it routed
// before is dropped, while an open sandbox still reaches the public server.
TEST_F(FirewallTest, ForwardingOnlySandboxesTheHostRoutesNothingElse) {
  SandboxLink open_link;
  Fd open_sb = Sandbox(1, &open_link);
  Fd internet = Internet(host_);
  Fd lan = LanMachine(host_);
  Fd server = ListenIn(internet, INADDR_ANY, 80);
  FirewallConfig c;
  c.proxy_port = kProxyPort;
  c.dns_port = kDnsPort;
  Firewall firewall(c);
  In(host_, [&] { return firewall.Set({open_link.host_ifname, EgressMode::kOpen, {}}); });
  EXPECT_EQ(ConnectFrom(lan, Ip("11.0.0.1"), 80), 0) << "the control: a host that routes for its LAN";
  EXPECT_EQ(ConnectFrom(open_sb, Ip("11.0.0.1"), 80), 0);

  In(host_, [&] { return firewall.SetForwardOnlySandboxes(true); });
  EXPECT_TRUE(firewall.config().forward_only_sandboxes);
  EXPECT_EQ(ConnectFrom(lan, Ip("11.0.0.1"), 80), ETIMEDOUT);
  EXPECT_EQ(ConnectFrom(open_sb, Ip("11.0.0.1"), 80), 0);
  // It outlives the sandboxes' changes: the last sandbox gone, the host still routes nothing.
  In(host_, [&] { return firewall.Remove(open_link.host_ifname); });
  EXPECT_EQ(ConnectFrom(lan, Ip("11.0.0.1"), 80), ETIMEDOUT);
  // A change nft refuses (none in PATH) leaves the rules and the config as they were.
  char dir[] = "/tmp/isb-no-nft-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = ::getenv("PATH");
  ASSERT_EQ(::setenv("PATH", dir, 1), 0);
  Status refused = InNetns(host_.get(), [&] { return firewall.SetForwardOnlySandboxes(false); });
  ASSERT_EQ(::setenv("PATH", path.c_str(), 1), 0);
  ::rmdir(dir);
  EXPECT_FALSE(refused.ok());
  EXPECT_TRUE(firewall.config().forward_only_sandboxes);
  EXPECT_EQ(ConnectFrom(lan, Ip("11.0.0.1"), 80), ETIMEDOUT);
  In(host_, [&] { return firewall.SetForwardOnlySandboxes(false); });
  EXPECT_EQ(ConnectFrom(lan, Ip("11.0.0.1"), 80), 0);
}

// `nft -s list table inet TABLE` in the test's host namespace: the table as the kernel has it, sets sorted.
std::string Listed(const Fd& host, const std::string& table = "isb") {
  std::string out;
  In(host, [&]() -> Status {
    ISB_ASSIGN_OR_RETURN(ProgramExit exit, RunProgram({"nft", "-s", "list", "table", "inet", table}, {}, 1 << 20));
    if (!exit.ok()) return Error::Msg("nft list: " + exit.stderr_text);
    out = exit.stdout_text;
    return {};
  });
  return out;
}

// After the first whole apply, sandboxes join, change and leave the table as set elements (no nft process): the
// table they leave is byte for byte the one a whole apply of the same sandboxes writes, and the traffic follows it.
TEST_F(FirewallTest, ASandboxsRulesJoinAndLeaveAsSetElementsAndTheTableIsTheOneAWholeApplyWrites) {
  SandboxLink a, b, c;
  Fd sa = Sandbox(1, &a);
  Fd sb = Sandbox(2, &b);
  Fd sc = Sandbox(3, &c);
  Firewall firewall(IsbConfig());
  In(host_, [&] { return firewall.Sync(); });
  In(host_, [&] { return firewall.Set({a.host_ifname, EgressMode::kList, {443, 80}}); });
  In(host_, [&] { return firewall.Set({b.host_ifname, EgressMode::kOpen, {}}); });
  In(host_, [&] { return firewall.Set({c.host_ifname, EgressMode::kList, {443}, /*all_ports=*/true}); });
  EXPECT_EQ(firewall.counts().whole, 1u);
  EXPECT_EQ(firewall.counts().elements, 3u);
  auto [proxy, dns, dns_tcp] = ListenAsIsb();
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 80), 0);
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 8443), ECONNREFUSED);
  EXPECT_EQ(ConnectFrom(sc, c.slot.host, 8443), 0) << "every port of an all-ports sandbox reaches the proxy";
  EXPECT_TRUE(UdpReaches(sa, a.slot.host, 53, dns));

  // A change: port 80 leaves, 8443 joins, in one transaction; the same rules again change nothing.
  In(host_, [&] { return firewall.Set({a.host_ifname, EgressMode::kList, {443, 8443}}); });
  In(host_, [&] { return firewall.Set({a.host_ifname, EgressMode::kList, {8443, 443, 443}}); });
  EXPECT_EQ(firewall.counts().elements, 4u);
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 80), ECONNREFUSED);
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 8443), 0);
  In(host_, [&] { return firewall.Remove(c.host_ifname); });
  EXPECT_EQ(firewall.counts().elements, 5u);
  EXPECT_EQ(ConnectFrom(sc, c.slot.host, 8443), ECONNREFUSED);
  EXPECT_FALSE(UdpReaches(sc, c.slot.host, 53, dns));

  const std::string by_elements = Listed(host_);
  EXPECT_NE(by_elements.find("\"" + a.host_ifname + "\" . 8443"), std::string::npos) << by_elements;
  In(host_, [&] { return firewall.Sync(); });
  EXPECT_EQ(firewall.counts().whole, 2u);
  EXPECT_EQ(Listed(host_), by_elements);

  // The table deleted under it (another program): the next change cannot be made by elements, and the whole table
  // is written again, with every sandbox the firewall knows.
  In(host_, [] { return DeleteTable("isb"); });
  In(host_, [&] { return firewall.Set({c.host_ifname, EgressMode::kList, {443}}); });
  EXPECT_EQ(firewall.counts().whole, 3u);
  EXPECT_EQ(firewall.counts().elements, 5u);
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 8443), 0);
  EXPECT_EQ(ConnectFrom(sc, c.slot.host, 443), 0);
  EXPECT_EQ(ConnectFrom(sc, c.slot.host, 8443), ECONNREFUSED);
  In(host_, [] { return DeleteTable("isb"); });
}

// Whether `nft list`'s output has `ifname` among the elements of set `set`.
bool SetHolds(const std::string& listed, const std::string& set, const std::string& ifname) {
  const size_t at = listed.find("set " + set + " {");
  if (at == std::string::npos) return false;
  const size_t end =
      listed.find('}', listed.find("elements", at) == std::string::npos ? at : listed.find("elements", at));
  const size_t in = listed.find("\"" + ifname + "\"", at);
  return in != std::string::npos && in < end;
}

// The ruleset's generation in the test's host namespace.
uint32_t Generation(const Fd& host) {
  uint32_t g = 0;
  In(host, [&]() -> Status {
    ISB_ASSIGN_OR_RETURN(g, RulesetGeneration());
    return {};
  });
  return g;
}

// Firewall::Restore (the watch's look) in the test's host namespace: what it found; a failure fails the test.
std::string Look(const Fd& host, Firewall& firewall) {
  std::string found = "not run";
  In(host, [&]() -> Status {
    ISB_ASSIGN_OR_RETURN(found, firewall.Restore());
    return {};
  });
  return found;
}

// `nft -f -` of `script` in the test's host namespace: another program's edit.
void Nft(const Fd& host, const std::string& script) {
  In(host, [&]() -> Status {
    ISB_ASSIGN_OR_RETURN(ProgramExit exit, RunProgram({"nft", "-f", "-"}, script));
    if (!exit.ok()) return Error::Msg("nft: " + exit.stderr_text);
    return {};
  });
}

// One nfnetlink batch is all or nothing: an addition beside a deletion of an element that is not there is not made,
// and the error names the set and the errno. A batch made for an older generation is refused whole.
TEST_F(FirewallTest, AnElementChangeIsOneTransactionForItsGenerationAndItsErrorNamesTheSet) {
  ASSERT_TRUE(Apply({}).ok());
  const std::string before = Listed(host_);
  const uint32_t g = Generation(host_);
  Status refused = InNetns(host_.get(), [&] {
    return ChangeSetElements("isb", {{"list_ifaces", *IfnameKey("isb-9")}}, {{"open_ifaces", *IfnameKey("isb-8")}}, g);
  });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kNotFound);
  EXPECT_EQ(refused.error().message,
            "deleting elements from set list_ifaces of table inet isb: No such file or directory");
  EXPECT_EQ(Listed(host_), before);
  EXPECT_EQ(Generation(host_), g) << "a refused batch commits nothing";
  Status missing = InNetns(host_.get(), [&] {
    return ChangeSetElements("isb", {}, {{"nosuch", *IfnameKey("isb-8")}}, g);
  });
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "adding elements to set nosuch of table inet isb: No such file or directory");

  Nft(host_, "table inet isbtest-other\n");  // anyone's commit
  Status stale = InNetns(host_.get(), [&] {
    return ChangeSetElements("isb", {}, {{"open_ifaces", *IfnameKey("isb-8")}}, g);
  });
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, Code::kConflict);
  EXPECT_EQ(stale.error().message, "table inet isb: the ruleset changed since generation " + std::to_string(g));
  EXPECT_EQ(Listed(host_), before);
  const uint32_t now = Generation(host_);
  EXPECT_EQ(now, NextGeneration(g));
  ASSERT_TRUE(InNetns(host_.get(), [&] {
                return ChangeSetElements("isb", {}, {{"open_ifaces", *IfnameKey("isb-8")}}, now);
              }).ok());
  EXPECT_EQ(Generation(host_), NextGeneration(now));
  EXPECT_NE(Listed(host_).find("\"isb-8\""), std::string::npos);

  EXPECT_EQ(IfnameKey("sixteen-letters!").error().message,
            "interface name 'sixteen-letters!' is not one an interface can have");
  EXPECT_EQ(*IfnamePortKey("isb-1", 443), std::string("isb-1\0\0\0\0\0\0\0\0\0\0\0\x01\xbb\0\0", 20));
  EXPECT_EQ(NextGeneration(0xffffffffu), 1u);
  In(host_, [] { return DeleteTable("isb"); });
  In(host_, [] { return DeleteTable("isbtest-other"); });
}

// Another program's edit of the table is never built on and never kept: an edit before a change makes that change
// a whole apply, which undoes it; an edit between changes is found by the watch's next look and undone. With no
// commit by anyone, a look writes nothing; another table's commit is told apart from an edit of this one.
TEST_F(FirewallTest, AnEditByAnotherProgramIsUndoneWhenSandboxesChangeAsWhenTheyDoNot) {
  SandboxLink a;
  Fd sa = Sandbox(1, &a);
  Firewall firewall(IsbConfig());
  In(host_, [&] { return firewall.Sync(); });
  EXPECT_EQ(Look(host_, firewall), "");
  EXPECT_EQ(firewall.counts().whole, 1u) << "a look with no commit since writes nothing";
  const std::string edit = "add element inet isb open_ifaces { \"isb-7\" }\nflush chain inet isb from_sandbox\n";

  Nft(host_, edit);
  In(host_, [&] { return firewall.Set({a.host_ifname, EgressMode::kList, {443}}); });
  EXPECT_EQ(firewall.counts().whole, 2u) << "a change on top of another's edit";
  EXPECT_EQ(firewall.counts().elements, 0u);
  std::string listed = Listed(host_);
  EXPECT_EQ(listed.find("isb-7"), std::string::npos) << listed;
  EXPECT_NE(listed.find("fib saddr . iif oif missing"), std::string::npos) << listed;

  In(host_, [&] { return firewall.Set({a.host_ifname, EgressMode::kList, {443, 80}}); });
  EXPECT_EQ(firewall.counts().elements, 1u);
  EXPECT_EQ(Look(host_, firewall), "");
  EXPECT_EQ(firewall.counts().whole, 2u);
  Nft(host_, edit);
  EXPECT_EQ(Look(host_, firewall), "changed");
  EXPECT_EQ(firewall.counts().whole, 3u);
  listed = Listed(host_);
  EXPECT_EQ(listed.find("isb-7"), std::string::npos) << listed;
  EXPECT_TRUE(SetHolds(listed, "list_ifaces", a.host_ifname)) << listed;
  EXPECT_EQ(Look(host_, firewall), "");

  Nft(host_, "table inet isbtest-other\n");  // another table's commit
  EXPECT_EQ(Look(host_, firewall), "");
  In(host_, [&] { return firewall.Set({a.host_ifname, EgressMode::kList, {443}}); });
  EXPECT_EQ(firewall.counts().elements, 2u) << "changes go on by elements after the look";
  In(host_, [] { return DeleteTable("isb"); });
  EXPECT_EQ(Look(host_, firewall), "deleted");
  EXPECT_TRUE(SetHolds(Listed(host_), "list_ifaces", a.host_ifname));
  In(host_, [] { return DeleteTable("isb"); });
  In(host_, [] { return DeleteTable("isbtest-other"); });
}

// Runs `fn` on a thread in the host namespace that can open no descriptor: neither nfnetlink nor nft can be reached.
Status WithoutDescriptors(const Fd& host, const std::function<Status()>& fn) {
  Status result = Error::Msg("not run");
  std::thread([&] {
    ::unshare(CLONE_FS);
    ::setns(host.get(), CLONE_NEWNET);
    rlimit was{};
    ::getrlimit(RLIMIT_NOFILE, &was);
    rlimit none = was;
    none.rlim_cur = 0;
    ::setrlimit(RLIMIT_NOFILE, &none);
    result = fn();
    ::setrlimit(RLIMIT_NOFILE, &was);
  }).join();
  return result;
}

// A removal the kernel could not be told of leaves the firewall knowing its table is not the model's: the watch's
// next look writes it whole without calling that an edit, so a sandbox that reuses the slot does not inherit the
// old one's elements. A refused change leaves the model as the kernel has it.
TEST_F(FirewallTest, AChangeThatFailedIsMadeGoodWithoutBeingTakenForAnEdit) {
  SandboxLink a;
  Fd sa = Sandbox(1, &a);
  Firewall firewall(IsbConfig());
  In(host_, [&] { return firewall.Sync(); });
  In(host_, [&] { return firewall.Set({a.host_ifname, EgressMode::kList, {443}}); });
  Status refused = WithoutDescriptors(host_, [&] {
    return firewall.Set({a.host_ifname, EgressMode::kList, {443, 80}});
  });
  ASSERT_FALSE(refused.ok());
  In(host_, [&] { return firewall.Sync(); });
  EXPECT_EQ(Listed(host_).find(" . 80"), std::string::npos) << "the refused port came back";

  In(host_, [&] { return firewall.Set({a.host_ifname, EgressMode::kOpen, {}}); });
  Status removed = WithoutDescriptors(host_, [&] { return firewall.Remove(a.host_ifname); });
  ASSERT_FALSE(removed.ok());
  EXPECT_TRUE(SetHolds(Listed(host_), "open_ifaces", a.host_ifname)) << "the kernel kept it";
  EXPECT_EQ(Look(host_, firewall), "");
  EXPECT_FALSE(SetHolds(Listed(host_), "open_ifaces", a.host_ifname));
  In(host_, [&] { return firewall.Set({a.host_ifname, EgressMode::kList, {443}}); });
  const std::string listed = Listed(host_);
  EXPECT_FALSE(SetHolds(listed, "open_ifaces", a.host_ifname)) << listed;
  EXPECT_TRUE(SetHolds(listed, "list_ifaces", a.host_ifname)) << listed;
  In(host_, [] { return DeleteTable("isb"); });
}

// The nft that PATH names, by its full path.
std::string RealNft() {
  Result<ProgramExit> real = RunProgram({"sh", "-c", "command -v nft"}, {}, 4096);
  EXPECT_TRUE(real.ok() && real->ok());
  return real.ok() ? real->stdout_text.substr(0, real->stdout_text.find('\n')) : "nft";
}

// A directory with an `nft` that runs the real one and then, after each `nft -f` that succeeded, runs `after` (nft
// arguments) as another program would right after isb's commit. Removed by the caller.
std::string NftWrapper(const std::string& after) {
  char dir[] = "/tmp/isb-nft-wrapper-XXXXXX";
  EXPECT_NE(::mkdtemp(dir), nullptr);
  const std::string nft = RealNft();
  EXPECT_TRUE(WriteFile(std::string(dir) + "/nft",
                        "#!/bin/sh\n" + nft + " \"$@\" || exit\n[ \"$1\" = -f ] || exit 0\n" + nft + " " + after + "\n",
                        0755)
                  .ok());
  return dir;
}

// Runs `fn` in the host namespace with `dir` first in PATH.
Status WithPathFirst(const Fd& host, const std::string& dir, const std::function<Status()>& fn) {
  const std::string path = ::getenv("PATH");
  ::setenv("PATH", (dir + ":" + path).c_str(), 1);
  Status s = InNetns(host.get(), fn);
  ::setenv("PATH", path.c_str(), 1);
  return s;
}

// Someone else's commit right after a whole apply, before its generation is read, is not taken for the apply's own,
// whether the apply was a change's or the watch's own rewrite: the next look finds the edit and undoes it.
TEST_F(FirewallTest, AnEditRightAfterAWholeApplyIsFoundByTheNextLook) {
  Firewall firewall(IsbConfig());
  const std::string dir = NftWrapper("add element inet isb open_ifaces '{ \"isb-7\" }'");
  Status synced = WithPathFirst(host_, dir, [&] { return firewall.Sync(); });
  ASSERT_TRUE(synced.ok()) << synced.error().message;
  ASSERT_TRUE(SetHolds(Listed(host_), "open_ifaces", "isb-7"));
  EXPECT_EQ(Look(host_, firewall), "changed");
  EXPECT_FALSE(SetHolds(Listed(host_), "open_ifaces", "isb-7"));

  // The watch's own rewrite, edited again right after: not kept as the table's listing.
  Nft(host_, "add element inet isb open_ifaces { \"isb-7\" }\n");
  std::string found = "not run";
  Status looked = WithPathFirst(host_, dir, [&]() -> Status {
    ISB_ASSIGN_OR_RETURN(found, firewall.Restore());
    return {};
  });
  ASSERT_TRUE(looked.ok()) << looked.error().message;
  EXPECT_EQ(found, "");  // its listings before and after its rewrite were alike: both had the edit
  ASSERT_TRUE(SetHolds(Listed(host_), "open_ifaces", "isb-7"));
  EXPECT_EQ(Look(host_, firewall), "changed");
  EXPECT_FALSE(SetHolds(Listed(host_), "open_ifaces", "isb-7"));
  EXPECT_EQ(Look(host_, firewall), "");
  std::filesystem::remove_all(dir);
  In(host_, [] { return DeleteTable("isb"); });
}

// A look that finds the table deleted and cannot write it (nft fails) says so once it has: the report is not lost
// to the failure. (The failing nft reads its input first, as the real one does: the ruleset is written to its stdin.)
TEST_F(FirewallTest, AnEditALookCouldNotUndoIsReportedOnceUndone) {
  Firewall firewall(IsbConfig());
  In(host_, [&] { return firewall.Sync(); });
  In(host_, [] { return DeleteTable("isb"); });
  char dir[] = "/tmp/isb-nft-failing-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  ASSERT_TRUE(WriteFile(std::string(dir) + "/nft",
                        "#!/bin/sh\n[ \"$1\" = -f ] && { cat >/dev/null; echo refused >&2; exit 1; }\nexec " +
                            RealNft() + " \"$@\"\n",
                        0755)
                  .ok());
  Result<std::string> failed = Error::Msg("not run");
  (void)WithPathFirst(host_, dir, [&]() -> Status {
    failed = firewall.Restore();
    return {};
  });
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "nft refused the ruleset: refused");
  EXPECT_EQ(Look(host_, firewall), "deleted");
  EXPECT_NE(Listed(host_).find("chain from_sandbox"), std::string::npos);
  EXPECT_EQ(Look(host_, firewall), "");
  In(host_, [] { return DeleteTable("isb"); });
}

// Two daemons' firewalls on one host: each one's commits are the other's foreign ones, and after one look each that
// writes its table, their looks find their tables intact and write nothing more.
TEST_F(FirewallTest, TwoFirewallsLooksSettleWithoutRewritingEachOthersTables) {
  Firewall mine(IsbConfig());
  FirewallConfig other_config = IsbConfig();
  other_config.table = other_config.ifname_prefix = "other";
  Firewall other(other_config);
  In(host_, [&] { return mine.Sync(); });
  In(host_, [&] { return other.Sync(); });
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(Look(host_, mine), "");
    EXPECT_EQ(Look(host_, other), "");
  }
  const uint64_t mine_whole = mine.counts().whole, other_whole = other.counts().whole;
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(Look(host_, mine), "");
    EXPECT_EQ(Look(host_, other), "");
  }
  EXPECT_EQ(mine.counts().whole, mine_whole);
  EXPECT_EQ(other.counts().whole, other_whole);
  EXPECT_LE(mine_whole, 2u);
  In(host_, [] { return DeleteTable("isb"); });
  In(host_, [] { return DeleteTable("other"); });
}

// Thousands of listed ports: the change is made in messages under the 64 KiB an attribute can say, in one batch,
// and the table is the one a whole apply writes.
TEST_F(FirewallTest, ASandboxWithThousandsOfPortsJoinsAsElements) {
  SandboxLink a;
  Fd sa = Sandbox(1, &a);
  Firewall firewall(IsbConfig());
  In(host_, [&] { return firewall.Sync(); });
  std::vector<uint16_t> ports;
  for (uint16_t p = 1000; p < 5000; ++p) ports.push_back(p);
  In(host_, [&] { return firewall.Set({a.host_ifname, EgressMode::kList, ports}); });
  EXPECT_EQ(firewall.counts().whole, 1u);
  EXPECT_EQ(firewall.counts().elements, 1u);
  Fd proxy = ListenIn(host_, INADDR_ANY, kProxyPort);
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 4999), 0);
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 5000), ECONNREFUSED);
  const std::string by_elements = Listed(host_);
  In(host_, [&] { return firewall.Sync(); });
  EXPECT_EQ(Listed(host_), by_elements);
  In(host_, [&] { return firewall.Remove(a.host_ifname); });
  EXPECT_EQ(firewall.counts().elements, 2u);
  EXPECT_EQ(Listed(host_).find(a.host_ifname), std::string::npos);
  In(host_, [] { return DeleteTable("isb"); });
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

// The proxy and the DNS responder get new ports at each daemon start. A flow the kernel tracked under the old rules
// keeps their redirect to the old port (a sandbox that queries DNS from one source port again and again keeps it
// alive): under the new rules it reaches nothing on the host, whatever listens on the old port now.
TEST_F(FirewallTest, AFlowTrackedUnderTheOldPortsReachesNothingOnTheHost) {
  constexpr uint16_t kNewProxyPort = kProxyPort + 1, kNewDnsPort = kDnsPort + 1;
  SandboxLink a;
  Fd sa = Sandbox(1, &a);
  ASSERT_TRUE(Apply({{a.host_ifname, EgressMode::kList, {443}}}).ok());

  // DNS: a query from port 40000, and its answer.
  Fd dns = UdpIn(host_, INADDR_ANY, kDnsPort);
  Fd client = UdpIn(sa, INADDR_ANY, 40000);
  sockaddr_in to = Addr(a.slot.host, 53);
  ASSERT_EQ(::sendto(client.get(), "q", 1, 0, reinterpret_cast<sockaddr*>(&to), sizeof to), 1);
  pollfd p{dns.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 1000), 1);
  char buf[16];
  sockaddr_in from{};
  socklen_t len = sizeof from;
  ASSERT_EQ(::recvfrom(dns.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len), 1);
  ASSERT_EQ(::sendto(dns.get(), "a", 1, 0, reinterpret_cast<sockaddr*>(&from), len), 1);
  p = {client.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 1000), 1);
  ASSERT_EQ(::recv(client.get(), buf, sizeof buf, 0), 1);
  // TCP: a connection to the proxy from port 40001 whose ends both vanished without a word.
  Fd proxy = ListenIn(host_, INADDR_ANY, kProxyPort);
  Fd c;
  ASSERT_EQ(ConnectFrom(sa, a.slot.host, 443, &c, 40001), 0);
  Fd accepted(::accept4(proxy.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(accepted.valid());
  CloseSilently(c);
  CloseSilently(accepted);

  // The daemon restarts: its servers go, the rules come back with new ports, and host services take the old ones.
  dns.Reset();
  proxy.Reset();
  ASSERT_TRUE(Apply({{a.host_ifname, EgressMode::kList, {443}}}, kNewProxyPort, kNewDnsPort).ok());
  Fd old_dns_port = UdpIn(host_, INADDR_ANY, kDnsPort);
  Fd old_proxy_port = ListenIn(host_, INADDR_ANY, kProxyPort);
  ASSERT_EQ(::sendto(client.get(), "q", 1, 0, reinterpret_cast<sockaddr*>(&to), sizeof to), 1);
  p = {old_dns_port.get(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 300), 0) << "a host service on the old DNS port got the sandbox's query";
  // The SYN follows the old redirect (the kernel takes it for the vanished connection's peers getting in step).
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 443, nullptr, 40001), ECONNREFUSED);
  EXPECT_FALSE(Accepts(old_proxy_port)) << "a host service on the old proxy port got the sandbox's connection";
  // New flows land on the new ports.
  Fd new_dns = UdpIn(host_, INADDR_ANY, kNewDnsPort);
  Fd new_proxy = ListenIn(host_, INADDR_ANY, kNewProxyPort);
  EXPECT_TRUE(UdpReaches(sa, a.slot.host, 53, new_dns));
  EXPECT_EQ(ConnectFrom(sa, a.slot.host, 443), 0);
  EXPECT_TRUE(Accepts(new_proxy));
}

// Two daemons on one host, each with its table, its proxy and its veths (named after its table): each table's rules
// keep to its own daemon's sandboxes, also where one table's name begins with the other's.
TEST_F(FirewallTest, TwoDaemonsRulesKeepToTheirOwnSandboxes) {
  constexpr uint16_t kOtherProxyPort = kProxyPort + 100, kOtherDnsPort = kDnsPort + 100;
  SandboxLink mine, theirs;
  Fd s_mine = Sandbox(1, &mine, "isb");
  Fd s_theirs = Sandbox(2, &theirs, "isbe2e");
  ASSERT_TRUE(Apply({{mine.host_ifname, EgressMode::kList, {443}}}).ok());
  ASSERT_TRUE(Apply({{theirs.host_ifname, EgressMode::kList, {443}}}, kOtherProxyPort, kOtherDnsPort, "isbe2e").ok());
  Fd proxy = ListenIn(host_, INADDR_ANY, kProxyPort);
  Fd their_proxy = ListenIn(host_, INADDR_ANY, kOtherProxyPort);
  Fd dns = UdpIn(host_, INADDR_ANY, kDnsPort);
  Fd their_dns = UdpIn(host_, INADDR_ANY, kOtherDnsPort);

  EXPECT_EQ(ConnectFrom(s_theirs, theirs.slot.host, 443), 0);
  EXPECT_TRUE(Accepts(their_proxy));
  EXPECT_TRUE(UdpReaches(s_theirs, theirs.slot.host, 53, their_dns));
  EXPECT_EQ(ConnectFrom(s_mine, mine.slot.host, 443), 0);
  EXPECT_TRUE(Accepts(proxy));
  EXPECT_TRUE(UdpReaches(s_mine, mine.slot.host, 53, dns));
  // Neither reaches the other daemon's proxy: its own table refuses it, the other's drops it, whichever sees it first.
  for (int e :
       {ConnectFrom(s_theirs, theirs.slot.host, kProxyPort), ConnectFrom(s_mine, mine.slot.host, kOtherProxyPort)})
    EXPECT_TRUE(e == ECONNREFUSED || e == ETIMEDOUT) << std::strerror(e);
  EXPECT_FALSE(Accepts(proxy));
  EXPECT_FALSE(Accepts(their_proxy));
}

// A veth name belongs to one prefix and slot only: attaching the sandbox of slot 13 under "isb" leaves the veth of
// slot 3 under "isb1" alone (it is no stale veth of its own).
TEST_F(FirewallTest, NoVethNameOfOnePrefixIsAnothers) {
  SandboxLink one, other;
  Fd s_one = Sandbox(3, &one, "isb1");
  Fd s_other = Sandbox(13, &other, "isb");
  EXPECT_EQ(one.host_ifname, "isb1-3");
  EXPECT_EQ(other.host_ifname, "isb-13");
  In(s_one, []() -> Status {
    ISB_ASSIGN_OR_RETURN(Netlink nl, Netlink::Open());
    EXPECT_TRUE(nl.IfIndex("eth0").ok()) << "the other prefix's attach deleted this sandbox's veth";
    return {};
  });
  Fd l = ListenIn(host_, one.slot.host, 8080);
  EXPECT_EQ(ConnectFrom(s_one, one.slot.host, 8080), 0);
}

// A prefix names an nftables table and, with a slot, a veth: a letter, then letters, digits or _, and short enough
// for the last slot of the subnet.
TEST(IfnamePrefixTest, NamesEveryVethApartAndWithinTheLengthOfAnInterfaceName) {
  const Subnet big = *ParseSubnet(kDefaultSandboxSubnet), small = *ParseSubnet("10.250.0.0/24");
  for (const char* ok : {"isb", "isbe2e", "isb_2", "I"}) {
    Status s = CheckIfnamePrefix(ok, big);
    EXPECT_TRUE(s.ok()) << ok << ": " << s.error().message;
  }
  for (const char* bad : {"", "isb-e2e", "1isb", "_isb", "isb.x", "isb*", "is b"}) {
    Status s = CheckIfnamePrefix(bad, big);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code, Code::kInvalidArgument);
    EXPECT_EQ(s.error().message, "\"" + std::string(bad) +
                                     "\" must be a letter followed by letters, digits or _ (the sandboxes' veths are "
                                     "named <prefix>-<slot>)");
  }
  // 32768 slots: "isbisbisb-32767" is 15 characters, one more is too many. 64 slots leave room for a longer one.
  EXPECT_TRUE(CheckIfnamePrefix("isbisbisb", big).ok());
  Status s = CheckIfnamePrefix("isbisbisbx", big);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "\"isbisbisbx\" is too long for the sandbox subnet 198.18.0.0/15: the veth of its last slot, "
            "isbisbisbx-32767, has 16 characters, over the 15 of an interface name");
  EXPECT_TRUE(CheckIfnamePrefix("isbisbisbxyz", small).ok());
  EXPECT_FALSE(CheckIfnamePrefix("isbisbisbxyz", *ParseSubnet("10.250.0.0/23")).ok());
}

// A kernel booted with ipv6.disable=1 has no net/ipv6 under /proc/sys: IPv6 is off already, which is what was asked.
// With the tree there, an interface it does not have is an error still.
TEST(DisableIpv6Test, AKernelWithoutIpv6HasItOffAlready) {
  char dir[] = "/tmp/isb-sysctl-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string root = dir;
  ASSERT_TRUE(MakeDirs(root + "/net/ipv4", 0755).ok());
  EXPECT_TRUE(DisableIpv6("all", root).ok());
  EXPECT_TRUE(DisableIpv6("isb-1", root).ok());

  ASSERT_TRUE(MakeDirs(root + "/net/ipv6/conf/all", 0755).ok());
  ASSERT_TRUE(WriteFile(root + "/net/ipv6/conf/all/disable_ipv6", "0\n").ok());
  EXPECT_TRUE(DisableIpv6("all", root).ok());
  EXPECT_EQ(*ReadFile(root + "/net/ipv6/conf/all/disable_ipv6"), "1\n");
  Status missing = DisableIpv6("isb-1", root);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().err, ENOENT);
  EXPECT_EQ(missing.error().message, "open " + root + "/net/ipv6/conf/isb-1/disable_ipv6: No such file or directory");
  std::filesystem::remove_all(root);
}

// IPv4 forwarding is read and turned on in the sysctl tree given, and an error says which sysctl it was about.
TEST(Ipv4ForwardingTest, IsReadAndTurnedOnInTheTreeGivenAndEachErrorNamesTheSysctl) {
  char dir[] = "/tmp/isb-sysctl-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string root = dir, file = root + "/net/ipv4/ip_forward";
  Result<bool> unread = Ipv4ForwardingOn(root);
  ASSERT_FALSE(unread.ok());
  EXPECT_EQ(unread.error().err, ENOENT);
  EXPECT_EQ(unread.error().message, "reading net.ipv4.ip_forward: open " + file + ": No such file or directory");
  Status unwritten = TurnOnIpv4Forwarding(root);
  ASSERT_FALSE(unwritten.ok());
  EXPECT_EQ(unwritten.error().err, ENOENT);
  EXPECT_EQ(unwritten.error().message,
            "turning on IPv4 forwarding (net.ipv4.ip_forward): open " + file + ": No such file or directory");

  ASSERT_TRUE(MakeDirs(root + "/net/ipv4", 0755).ok());
  ASSERT_TRUE(WriteFile(file, "0\n").ok());
  EXPECT_FALSE(*Ipv4ForwardingOn(root));
  EXPECT_TRUE(TurnOnIpv4Forwarding(root).ok());
  EXPECT_EQ(*ReadFile(file), "1\n");
  EXPECT_TRUE(*Ipv4ForwardingOn(root));
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace isb::net
