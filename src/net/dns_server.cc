#include "net/dns_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "net/dns_message.h"

namespace isb::net {

namespace {

Result<Fd> Bound(int type, const sockaddr_in& a) {
  Fd s(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  if (!s.valid()) return Error::Sys("DNS socket");
  int one = 1;
  if (type == SOCK_DGRAM) {
    // The address each query arrived at names the sandbox, and the answer leaves from it.
    if (::setsockopt(s.get(), IPPROTO_IP, IP_PKTINFO, &one, sizeof one) != 0) return Error::Sys("IP_PKTINFO");
    // Room for a burst (a thousand lookups starting at once, from all sandboxes together): a query dropped here
    // costs its resolver a retry seconds later. Past net.core.rmem_max only as root (the daemon), else the most
    // the system allows.
    int room = kDnsUdpReceiveBuffer;
    if (::setsockopt(s.get(), SOL_SOCKET, SO_RCVBUFFORCE, &room, sizeof room) != 0)
      (void)::setsockopt(s.get(), SOL_SOCKET, SO_RCVBUF, &room, sizeof room);
  } else if (::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
    return Error::Sys("SO_REUSEADDR");
  }
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
    return Error::Sys("DNS responder cannot listen on port " + std::to_string(ntohs(a.sin_port)));
  // Room in the queue for as many connections as are served at once, which wait there while every slot is taken.
  if (type == SOCK_STREAM && ::listen(s.get(), static_cast<int>(kMaxDnsTcpConnections)) != 0)
    return Error::Sys("listen");
  return s;
}

}  // namespace

Result<std::unique_ptr<DnsServer>> DnsServer::Start(const std::string& address, uint16_t port, DnsHooks hooks) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1)
    return Error::Of(Code::kInvalidArgument, "DNS listen address is not an IPv4 address: " + address);
  // UDP first (any free port when 0), then TCP on the same number; a number taken for TCP is tried again.
  for (int attempt = 0;; ++attempt) {
    sockaddr_in at = a;
    ISB_ASSIGN_OR_RETURN(Fd udp, Bound(SOCK_DGRAM, at));
    socklen_t len = sizeof at;
    ::getsockname(udp.get(), reinterpret_cast<sockaddr*>(&at), &len);
    Result<Fd> tcp = Bound(SOCK_STREAM, at);
    if (!tcp.ok()) {
      if (port == 0 && attempt < 20) continue;
      return tcp.error();
    }
    Fd stop(::eventfd(0, EFD_CLOEXEC));
    if (!stop.valid()) return Error::Sys("eventfd");
    return std::unique_ptr<DnsServer>(
        new DnsServer(std::move(udp), std::move(*tcp), std::move(stop), ntohs(at.sin_port), std::move(hooks)));
  }
}

DnsServer::DnsServer(Fd socket, Fd listener, Fd stop, uint16_t port, DnsHooks hooks)
    : socket_(std::move(socket)), listener_(std::move(listener)), stop_(std::move(stop)), port_(port),
      hooks_(std::move(hooks)) {
  thread_ = std::thread([this] { Serve(); });
}

DnsServer::~DnsServer() {
  uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  thread_.join();
}

void DnsServer::Serve() {
  using Clock = std::chrono::steady_clock;
  std::vector<pollfd> p;
  for (;;) {
    p.clear();
    p.push_back({stop_.get(), POLLIN, 0});
    p.push_back({socket_.get(), POLLIN, 0});
    // At the bound, new connections wait in the listen queue until one closes.
    p.push_back({listener_.get(), static_cast<short>(clients_.size() < kMaxDnsTcpConnections ? POLLIN : 0), 0});
    Clock::time_point now = Clock::now(), next = now + kDnsTcpTimeout;
    for (const TcpClient& c : clients_) {
      p.push_back({c.fd.get(), POLLIN, 0});
      next = std::min(next, c.deadline);
    }
    int wait = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(next - now).count());
    if (::poll(p.data(), p.size(), std::max(wait, 0)) < 0) continue;
    if (p[0].revents != 0) {
      clients_.clear();
      tcp_open_ = 0;
      return;
    }
    if (p[1].revents != 0) ServeUdp();
    // Clients first (their indices match p's), then the new ones.
    now = Clock::now();
    size_t kept = 0;
    for (size_t i = 0; i < clients_.size(); ++i) {
      TcpClient& c = clients_[i];
      bool keep = p[3 + i].revents != 0 ? ServeTcp(c) : now < c.deadline;
      if (keep) {
        if (kept != i) clients_[kept] = std::move(c);
        ++kept;
      }
    }
    clients_.resize(kept);
    if (p[2].revents != 0) AcceptTcp();
    tcp_open_ = clients_.size();
  }
}

void DnsServer::AcceptTcp() {
  sockaddr_in local{};
  socklen_t len = sizeof local;
  Fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (!fd.valid() || ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) return;
  std::optional<std::string> sandbox = hooks_.sandbox(ntohl(local.sin_addr.s_addr));
  if (!sandbox) {
    ++dropped_;
    return;
  }
  size_t same = 0;
  for (const TcpClient& other : clients_) same += other.sandbox == *sandbox ? 1 : 0;
  if (same >= kMaxDnsTcpPerSandbox) {
    ++dropped_;
    return;
  }
  TcpClient c{std::move(fd), std::move(*sandbox), {}, {}, std::chrono::steady_clock::now() + kDnsTcpTimeout};
  std::memcpy(c.proxy.data(), &local.sin_addr.s_addr, 4);
  clients_.push_back(std::move(c));
}

bool DnsServer::ServeTcp(TcpClient& c) {
  uint8_t buf[2048];
  ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  if (n == 0) return false;
  c.buffer.insert(c.buffer.end(), buf, buf + n);
  while (c.buffer.size() >= 2) {
    size_t size = static_cast<size_t>(c.buffer[0]) << 8 | c.buffer[1];
    if (size == 0 || size > kMaxDnsTcpMessage) {
      ++dropped_;
      return false;
    }
    if (c.buffer.size() < 2 + size) break;
    std::optional<std::vector<uint8_t>> answer =
        Respond(std::span<const uint8_t>(c.buffer.data() + 2, size),
                [&](std::string_view name) { return hooks_.listed(c.sandbox, name); }, c.proxy);
    c.buffer.erase(c.buffer.begin(), c.buffer.begin() + static_cast<std::ptrdiff_t>(2 + size));
    if (!answer || answer->size() > 0xffff) {
      ++dropped_;
      return false;
    }
    std::vector<uint8_t> framed{static_cast<uint8_t>(answer->size() >> 8), static_cast<uint8_t>(answer->size())};
    framed.insert(framed.end(), answer->begin(), answer->end());
    // An answer is small and the client reads it before asking again; one that does not fit is its loss.
    if (::send(c.fd.get(), framed.data(), framed.size(), MSG_DONTWAIT | MSG_NOSIGNAL) != static_cast<ssize_t>(framed.size())) {
      ++dropped_;
      return false;
    }
    ++answered_;
    c.deadline = std::chrono::steady_clock::now() + kDnsTcpTimeout;
  }
  return true;
}

void DnsServer::ServeUdp() {
  uint8_t packet[1500];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(in_pktinfo))];
  {
    sockaddr_in from{};
    iovec iov{packet, sizeof packet};
    msghdr m{};
    m.msg_name = &from;
    m.msg_namelen = sizeof from;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(socket_.get(), &m, MSG_DONTWAIT);
    if (n <= 0) return;
    in_pktinfo info{};
    bool have_info = false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
        std::memcpy(&info, CMSG_DATA(c), sizeof info);
        have_info = true;
      }
    }
    std::optional<std::string> sandbox;
    if (have_info) sandbox = hooks_.sandbox(ntohl(info.ipi_addr.s_addr));
    if (!sandbox) {
      ++dropped_;
      return;
    }
    Ipv4 proxy;
    std::memcpy(proxy.data(), &info.ipi_addr.s_addr, 4);  // network order: the bytes as they appear on the wire
    std::optional<std::vector<uint8_t>> answer =
        Respond(std::span<const uint8_t>(packet, static_cast<size_t>(n)),
                [&](std::string_view name) { return hooks_.listed(*sandbox, name); }, proxy);
    if (!answer) {
      ++dropped_;
      return;
    }
    // From the address the query was sent to, so the sandbox's resolver accepts the answer.
    in_pktinfo reply{};
    reply.ipi_spec_dst = info.ipi_addr;
    alignas(cmsghdr) char reply_control[CMSG_SPACE(sizeof(in_pktinfo))] = {};
    iovec out{answer->data(), answer->size()};
    msghdr r{};
    r.msg_name = &from;
    r.msg_namelen = sizeof from;
    r.msg_iov = &out;
    r.msg_iovlen = 1;
    r.msg_control = reply_control;
    r.msg_controllen = sizeof reply_control;
    cmsghdr* c = CMSG_FIRSTHDR(&r);
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_PKTINFO;
    c->cmsg_len = CMSG_LEN(sizeof reply);
    std::memcpy(CMSG_DATA(c), &reply, sizeof reply);
    if (::sendmsg(socket_.get(), &r, MSG_DONTWAIT) > 0) ++answered_;
    else ++dropped_;
  }
}

}  // namespace isb::net
