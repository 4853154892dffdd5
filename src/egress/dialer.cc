// Resolve once, check every address, connect only to a checked one.
#include "egress/dialer.h"

#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "egress/host_port.h"

namespace isb::egress {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

Error Refused(const DialerOptions& options, std::string_view host, const std::string& what) {
  return Error::Of(Code::kForbidden,
                   options.refuser + " refused '" + std::string(host) + "': " + what + options.refusal_hint);
}

std::string HostPortText(std::string_view host, uint16_t port) { return Printable(host) + ":" + std::to_string(port); }

socklen_t ToSockaddr(const Endpoint& to, sockaddr_storage* ss) {
  std::memset(ss, 0, sizeof *ss);
  if (to.address.v6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(ss);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(to.port);
    std::memcpy(&s6->sin6_addr, to.address.bytes.data(), 16);
    return sizeof *s6;
  }
  auto* s4 = reinterpret_cast<sockaddr_in*>(ss);
  s4->sin_family = AF_INET;
  s4->sin_port = htons(to.port);
  std::memcpy(&s4->sin_addr, to.address.bytes.data(), 4);
  return sizeof *s4;
}

// Waits for a non-blocking connect to finish; 0 or the errno it failed with, ETIMEDOUT when time ran out.
int AwaitConnect(int fd, Clock::time_point deadline) {
  while (true) {
    auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return ETIMEDOUT;
    pollfd p{fd, POLLOUT, 0};
    int n = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) continue;  // the deadline check above decides
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    return err;
  }
}

}  // namespace

Result<std::vector<IpAddress>> ResolveSystem(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(name.c_str(), nullptr, &hints, &res);
  if (rc != 0) {
    Code code = (rc == EAI_NONAME || rc == EAI_NODATA) ? Code::kNotFound : Code::kUnavailable;
    std::string why = rc == EAI_SYSTEM ? std::strerror(errno) : gai_strerror(rc);
    return Error::Of(code, "egress: cannot resolve '" + name + "': " + why);
  }
  std::vector<IpAddress> out;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    IpAddress a;
    if (ai->ai_family == AF_INET) {
      a = IpAddress::V4(ntohl(reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr.s_addr));
    } else if (ai->ai_family == AF_INET6) {
      a.v6 = true;
      std::memcpy(a.bytes.data(), &reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_addr, 16);
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  freeaddrinfo(res);
  if (out.empty()) return Error::Of(Code::kNotFound, "egress: '" + name + "' has no address");
  return out;
}

Result<Fd> ConnectTcp(const Endpoint& to, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  Fd fd(socket(to.address.v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Error::Sys("socket");
  // Each relayed piece goes at once (the proxy writes messages in pieces; see the accept loop's note on Nagle).
  const int one = 1;
  (void)setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_storage ss;
  socklen_t len = ToSockaddr(to, &ss);
  int err = 0;
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    err = errno == EINPROGRESS ? AwaitConnect(fd.get(), deadline) : errno;
  }
  if (err == ETIMEDOUT) {
    return Error::Of(Code::kTimeout, "connect timed out after " + std::to_string(timeout.count()) + " ms");
  }
  if (err != 0) return Error{std::strerror(err), err, Code::kUnavailable};
  int flags = fcntl(fd.get(), F_GETFL);
  if (flags < 0 || fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) return Error::Sys("fcntl");
  return fd;
}

Result<std::vector<IpAddress>> HostAddresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Error::Sys("getifaddrs");
  std::vector<IpAddress> out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    if (i->ifa_addr->sa_family == AF_INET) {
      out.push_back(IpAddress::V4(ntohl(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr)));
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* a6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      uint8_t b[16];
      std::memcpy(b, a6->sin6_addr.s6_addr, 16);
      out.push_back(IpAddress::V6(b));
    }
  }
  freeifaddrs(list);
  return out;
}

HostAddressWatch::HostAddressWatch(LocalAddresses read) : read_(std::move(read)) {
  Fd sock(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE));
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (sock.valid() && ::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) sock_ = std::move(sock);
}

bool HostAddressWatch::Changed() {
  if (!sock_.valid()) return true;
  bool changed = false;
  char buf[8192];
  for (;;) {
    ssize_t n = ::recv(sock_.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      changed = true;  // any message on these groups is an address added or removed
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return changed;
    return true;  // ENOBUFS (announcements were dropped) or anything else: cannot tell, so read again
  }
}

Result<std::vector<IpAddress>> HostAddressWatch::Get() {
  MutexLock lock(mu_);
  // Drained before reading: an announcement that comes after the drain is there for the next call.
  if (Changed() || !have_) {
    have_ = false;  // a failed read leaves nothing to trust: the next call reads again
    ++reads_;
    ISB_ASSIGN_OR_RETURN(cached_, read_());
    have_ = sock_.valid();
  }
  return cached_;
}

namespace {

// An IPv4-mapped IPv6 address reaches the IPv4 address inside it.
IpAddress Unmapped(const IpAddress& a) {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (!a.v6 || std::memcmp(a.bytes.data(), kMapped, sizeof kMapped) != 0) return a;
  IpAddress v4;
  std::copy(a.bytes.begin() + 12, a.bytes.end(), v4.bytes.begin());
  return v4;
}

}  // namespace

Status Dialer::CheckNotLocal(std::string_view name, const std::vector<IpAddress>& addresses) const {
  ISB_ASSIGN_OR_RETURN(std::vector<IpAddress> local, options_.local_addresses());
  for (IpAddress& l : local) l = Unmapped(l);
  for (const IpAddress& a : addresses) {
    if (std::find(local.begin(), local.end(), Unmapped(a)) != local.end())
      return Refused(options_, name,
                     std::string(ParseIpAddress(name).ok() ? "it is" : "it resolves to") +
                         " an address of this host (its own services are never reached through egress)");
  }
  return {};
}

Result<Dialer> Dialer::Create(DialerOptions options) {
  std::vector<Pin> pins = std::move(options.pins);
  if (!options.local_addresses) {
    auto watch = std::make_shared<HostAddressWatch>();
    options.local_addresses = [watch] { return watch->Get(); };
  }
  Dialer d(std::move(options));
  for (Pin& pin : pins) {
    std::string name = pin.name;
    if (!d.pins_.emplace(name, std::move(pin)).second) {
      return Error::Of(Code::kInvalidArgument, "egress pin: '" + name + "' is pinned twice; give each name one pin");
    }
  }
  return d;
}

Result<std::vector<Endpoint>> Dialer::Resolve(std::string_view host, uint16_t port) const {
  auto literal = ParseIpAddress(host);
  if (literal.ok()) {
    AddressClass c = Classify(*literal);
    if (!c.is_public()) return Refused(options_, host, c.reason);
    ISB_TRY(CheckNotLocal(host, {*literal}));
    return std::vector<Endpoint>{{*literal, port}};
  }
  auto name = NormalizeHostName(host);
  if (!name.ok()) {
    return Error::Of(Code::kInvalidArgument, options_.refuser + ": '" + Printable(host) +
                                                 "' is neither a host name nor an address: it " + name.error().message);
  }
  if (auto pin = pins_.find(*name); pin != pins_.end()) {
    return std::vector<Endpoint>{{pin->second.address, pin->second.port.value_or(port)}};
  }
  ISB_ASSIGN_OR_RETURN(std::vector<IpAddress> addresses, options_.resolver(*name));
  if (addresses.empty()) return Error::Of(Code::kNotFound, options_.refuser + ": '" + *name + "' has no address");
  std::vector<Endpoint> out;
  for (const IpAddress& a : addresses) {
    AddressClass c = Classify(a);
    if (!c.is_public()) return Refused(options_, *name, "it resolves to " + c.reason);
    out.push_back({a, port});
  }
  ISB_TRY(CheckNotLocal(*name, addresses));
  return out;
}

Result<Fd> Dialer::Dial(std::string_view host, uint16_t port) const {
  ISB_ASSIGN_OR_RETURN(std::vector<Endpoint> endpoints, Resolve(host, port));
  auto deadline = Clock::now() + options_.connect_timeout;
  Error last;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    auto fd = options_.connector(endpoints[i], left / static_cast<long>(endpoints.size() - i));
    if (fd.ok()) return fd;
    last = fd.error();
  }
  if (last.message.empty()) last = Error::Of(Code::kTimeout, "connect timed out");
  if (last.code == Code::kTimeout) {
    last.message = "connect timed out after " + std::to_string(options_.connect_timeout.count()) + " ms";
  }
  last.message = options_.refuser + ": cannot connect to " + HostPortText(host, port) + ": " + last.message;
  return last;
}

}  // namespace isb::egress
