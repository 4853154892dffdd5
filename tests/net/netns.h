// Network namespaces of a test's own for the network tests: fresh namespaces, TCP between them, and a public server
// behind a namespace that plays the host. Header-only, so any test binary may use it.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "base/fd.h"
#include "base/result.h"
#include "net/address_pool.h"
#include "net/netlink.h"

namespace isb::testing {

// A fresh network namespace, alive as long as the returned fd.
inline Fd NewNetns() {
  Fd ns;
  std::thread([&] {
    if (::unshare(CLONE_NEWNET) != 0) return;
    ns = Fd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  }).join();
  return ns;
}

// Runs `fn` in `ns`, failing the test on error.
inline void In(const Fd& ns, const std::function<Status()>& fn) {
  Status s = net::InNetns(ns.get(), fn);
  ASSERT_TRUE(s.ok()) << s.error().message;
}

inline sockaddr_in Addr(uint32_t host_order, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr = net::ToInAddr(host_order);
  a.sin_port = htons(port);
  return a;
}

inline uint32_t Ip(const char* text) {
  in_addr a{};
  ::inet_pton(AF_INET, text, &a);
  return ntohl(a.s_addr);
}

// A socket of `type` created in `ns` (it stays in that namespace whichever thread uses it later).
inline Fd SocketIn(const Fd& ns, int type) {
  Fd s;
  In(ns, [&]() -> Status {
    s = Fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
    return s.valid() ? Status() : Error::Sys("socket");
  });
  return s;
}

inline Fd ListenIn(const Fd& ns, uint32_t addr, uint16_t port) {
  Fd s = SocketIn(ns, SOCK_STREAM);
  int one = 1;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = Addr(addr, port);
  EXPECT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  EXPECT_EQ(::listen(s.get(), 16), 0);
  return s;
}

// Connects from `ns` (from `from_port` unless 0); 0 on success (the connected socket in `out`), else the errno,
// ETIMEDOUT after 1.5 s.
inline int ConnectFrom(const Fd& ns, uint32_t addr, uint16_t port, Fd* out = nullptr, uint16_t from_port = 0) {
  Fd s = SocketIn(ns, SOCK_STREAM | SOCK_NONBLOCK);
  if (from_port != 0) {
    int one = 1;
    ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in local = Addr(INADDR_ANY, from_port);
    if (::bind(s.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) return errno;
  }
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

// The public internet behind `host`: a namespace on the host's veth wan0, with the public address 11.0.0.1 and the
// private 10.20.0.1 (the host's ends: 11.0.0.254 and 10.20.0.254), routed through the host.
inline Fd Internet(const Fd& host) {
  Fd internet = NewNetns();
  In(host, [&]() -> Status {
    ISB_ASSIGN_OR_RETURN(net::Netlink nl, net::Netlink::Open());
    ISB_TRY(nl.CreateVeth("wan0", "eth0", internet.get()));
    ISB_ASSIGN_OR_RETURN(int wan, nl.IfIndex("wan0"));
    ISB_TRY(nl.AddAddress(wan, net::ToInAddr(Ip("11.0.0.254")), 24));
    ISB_TRY(nl.AddAddress(wan, net::ToInAddr(Ip("10.20.0.254")), 24));
    return nl.SetUp(wan);
  });
  In(internet, []() -> Status {
    ISB_ASSIGN_OR_RETURN(net::Netlink nl, net::Netlink::Open());
    ISB_ASSIGN_OR_RETURN(int eth0, nl.IfIndex("eth0"));
    ISB_TRY(nl.AddAddress(eth0, net::ToInAddr(Ip("11.0.0.1")), 24));
    ISB_TRY(nl.AddAddress(eth0, net::ToInAddr(Ip("10.20.0.1")), 24));
    ISB_TRY(nl.SetUp(eth0));
    return nl.AddDefaultRoute(net::ToInAddr(Ip("11.0.0.254")), eth0);
  });
  return internet;
}

// A machine on the host's LAN that is no sandbox: a namespace on the host's veth lan0 (10.30.0.254/24), at 10.30.0.1,
// whose default route is the host.
inline Fd LanMachine(const Fd& host) {
  Fd lan = NewNetns();
  In(host, [&]() -> Status {
    ISB_ASSIGN_OR_RETURN(net::Netlink nl, net::Netlink::Open());
    ISB_TRY(nl.CreateVeth("lan0", "eth0", lan.get()));
    ISB_ASSIGN_OR_RETURN(int lan0, nl.IfIndex("lan0"));
    ISB_TRY(nl.AddAddress(lan0, net::ToInAddr(Ip("10.30.0.254")), 24));
    return nl.SetUp(lan0);
  });
  In(lan, []() -> Status {
    ISB_ASSIGN_OR_RETURN(net::Netlink nl, net::Netlink::Open());
    ISB_ASSIGN_OR_RETURN(int eth0, nl.IfIndex("eth0"));
    ISB_TRY(nl.AddAddress(eth0, net::ToInAddr(Ip("10.30.0.1")), 24));
    ISB_TRY(nl.SetUp(eth0));
    return nl.AddDefaultRoute(net::ToInAddr(Ip("10.30.0.254")), eth0);
  });
  return lan;
}

}  // namespace isb::testing
