// Rtnetlink requests built by hand: a header, a fixed struct, then attributes (nested where the kernel nests them).
#include "net/netlink.h"

#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

#include "net/netlink_message.h"

namespace isb::net {

Result<Netlink> Netlink::Open() {
  int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return Error::Sys("netlink socket");
  Fd owned(fd);
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return Error::Sys("netlink bind");
  int one = 1;
  // Errors come back with only their header, not the whole request echoed.
  ::setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
  ::setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
  return Netlink(std::move(owned));
}

Status InNetns(int netns_fd, const std::function<Status()>& fn) {
  Status result = Error::Msg("network namespace thread did not run");
  std::thread t([&] {
    // Only this thread's namespace changes; the thread ends right after, so nothing runs in it by accident later.
    if (::unshare(CLONE_FS) != 0) {
      result = Error::Sys("unshare CLONE_FS");
      return;
    }
    if (::setns(netns_fd, CLONE_NEWNET) != 0) {
      result = Error::Sys("entering the sandbox's network namespace");
      return;
    }
    result = fn();
  });
  t.join();
  return result;
}

Result<Netlink> Netlink::OpenIn(int netns_fd) {
  Fd fd;
  ISB_TRY(InNetns(netns_fd, [&]() -> Status {
    ISB_ASSIGN_OR_RETURN(Netlink nl, Open());
    fd = std::move(nl.fd_);
    return {};
  }));
  return Netlink(std::move(fd));
}

Status Netlink::Transact(void* msg, size_t len, const char* what) {
  auto* h = static_cast<nlmsghdr*>(msg);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd_.get(), msg, len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) !=
      static_cast<ssize_t>(len))
    return Error::Sys(std::string("netlink send (") + what + ")");
  char buf[8192];
  for (;;) {
    ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::Sys(std::string("netlink receive (") + what + ")");
    }
    for (auto* r = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(r, static_cast<unsigned>(n)); r = NLMSG_NEXT(r, n)) {
      if (r->nlmsg_seq != h->nlmsg_seq || r->nlmsg_type != NLMSG_ERROR) continue;
      int err = -reinterpret_cast<nlmsgerr*>(NLMSG_DATA(r))->error;
      if (err == 0) return {};
      Error e = Error::Sys(what, err);
      if (err == ENODEV) e.code = Code::kNotFound;
      if (err == EEXIST) e.code = Code::kConflict;
      return e;
    }
  }
}

Status Netlink::CreateVeth(const std::string& host, const std::string& peer, int peer_netns_fd) {
  if (host.size() >= IFNAMSIZ || peer.size() >= IFNAMSIZ)
    return Error::Of(Code::kInvalidArgument, "interface name too long");
  NetlinkMessage m(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);
  m.Fixed<ifinfomsg>()->ifi_family = AF_UNSPEC;
  m.Str(IFLA_IFNAME, host);
  size_t info = m.BeginNest(IFLA_LINKINFO);
  m.Str(IFLA_INFO_KIND, "veth");
  size_t data = m.BeginNest(IFLA_INFO_DATA);
  size_t peer_at = m.BeginNest(VETH_INFO_PEER);
  m.Fixed<ifinfomsg>()->ifi_family = AF_UNSPEC;
  m.Str(IFLA_IFNAME, peer);
  m.Scalar<uint32_t>(IFLA_NET_NS_FD, static_cast<uint32_t>(peer_netns_fd));
  m.EndNest(peer_at);
  m.EndNest(data);
  m.EndNest(info);
  return Transact(m.Finish(++seq_), m.size(), "creating the veth pair");
}

Result<int> Netlink::IfIndex(const std::string& name) {
  // if_nametoindex asks the namespace of the calling thread; ask this socket's namespace instead.
  NetlinkMessage m(RTM_GETLINK, NLM_F_ACK);
  m.Fixed<ifinfomsg>()->ifi_family = AF_UNSPEC;
  m.Str(IFLA_IFNAME, name);
  nlmsghdr* h = m.Finish(++seq_);
  h->nlmsg_flags = NLM_F_REQUEST;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd_.get(), h, m.size(), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0)
    return Error::Sys("netlink send (looking up a link)");
  alignas(nlmsghdr) char buf[16384];
  for (;;) {
    ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::Sys("netlink receive (looking up a link)");
    }
    for (auto* r = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(r, static_cast<unsigned>(n)); r = NLMSG_NEXT(r, n)) {
      if (r->nlmsg_seq != seq_) continue;
      if (r->nlmsg_type == NLMSG_ERROR) {
        int err = -reinterpret_cast<nlmsgerr*>(NLMSG_DATA(r))->error;
        return Error::Of(err == ENODEV ? Code::kNotFound : Code::kInternal, "no link named " + name);
      }
      if (r->nlmsg_type == RTM_NEWLINK) return reinterpret_cast<ifinfomsg*>(NLMSG_DATA(r))->ifi_index;
    }
  }
}

Status Netlink::SetUp(int ifindex) {
  NetlinkMessage m(RTM_NEWLINK, NLM_F_ACK);
  auto* ifi = m.Fixed<ifinfomsg>();
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  ifi->ifi_flags = IFF_UP;
  ifi->ifi_change = IFF_UP;
  return Transact(m.Finish(++seq_), m.size(), "bringing a link up");
}

Status Netlink::SetGroup(int ifindex, uint32_t group) {
  NetlinkMessage m(RTM_NEWLINK, NLM_F_ACK);
  auto* ifi = m.Fixed<ifinfomsg>();
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  m.Scalar<uint32_t>(IFLA_GROUP, group);
  return Transact(m.Finish(++seq_), m.size(), "setting a link's group");
}

Status Netlink::Rename(int ifindex, const std::string& name) {
  NetlinkMessage m(RTM_NEWLINK, NLM_F_ACK);
  auto* ifi = m.Fixed<ifinfomsg>();
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  m.Str(IFLA_IFNAME, name);
  return Transact(m.Finish(++seq_), m.size(), "renaming a link");
}

Status Netlink::AddAddress(int ifindex, in_addr addr, int prefix_len) {
  NetlinkMessage m(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);
  auto* ifa = m.Fixed<ifaddrmsg>();
  ifa->ifa_family = AF_INET;
  ifa->ifa_prefixlen = static_cast<unsigned char>(prefix_len);
  ifa->ifa_scope = RT_SCOPE_UNIVERSE;
  ifa->ifa_index = static_cast<unsigned>(ifindex);
  m.Attr(IFA_LOCAL, &addr, sizeof addr);
  m.Attr(IFA_ADDRESS, &addr, sizeof addr);
  return Transact(m.Finish(++seq_), m.size(), "adding an address");
}

Status Netlink::AddDefaultRoute(in_addr gateway, int ifindex) {
  NetlinkMessage m(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);
  auto* rt = m.Fixed<rtmsg>();
  rt->rtm_family = AF_INET;
  rt->rtm_table = RT_TABLE_MAIN;
  rt->rtm_protocol = RTPROT_STATIC;
  rt->rtm_scope = RT_SCOPE_UNIVERSE;
  rt->rtm_type = RTN_UNICAST;
  m.Attr(RTA_GATEWAY, &gateway, sizeof gateway);
  m.Scalar<uint32_t>(RTA_OIF, static_cast<uint32_t>(ifindex));
  return Transact(m.Finish(++seq_), m.size(), "adding the default route");
}

Status Netlink::DeleteLink(int ifindex) {
  NetlinkMessage m(RTM_DELLINK, NLM_F_ACK);
  auto* ifi = m.Fixed<ifinfomsg>();
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  return Transact(m.Finish(++seq_), m.size(), "deleting a link");
}

}  // namespace isb::net
