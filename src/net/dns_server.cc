#include "net/dns_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "net/dns_message.h"

namespace isb::net {

Result<std::unique_ptr<DnsServer>> DnsServer::Start(const std::string& address, uint16_t port, DnsHooks hooks) {
  Fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return Error::Sys("DNS socket");
  int one = 1;
  // The address each query arrived at names the sandbox, and the answer leaves from it.
  if (::setsockopt(s.get(), IPPROTO_IP, IP_PKTINFO, &one, sizeof one) != 0) return Error::Sys("IP_PKTINFO");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1)
    return Error::Of(Code::kInvalidArgument, "DNS listen address is not an IPv4 address: " + address);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return Error::Sys("DNS responder cannot listen on port " + std::to_string(port));
  socklen_t len = sizeof a;
  ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len);
  Fd stop(::eventfd(0, EFD_CLOEXEC));
  if (!stop.valid()) return Error::Sys("eventfd");
  return std::unique_ptr<DnsServer>(new DnsServer(std::move(s), std::move(stop), ntohs(a.sin_port), std::move(hooks)));
}

DnsServer::DnsServer(Fd socket, Fd stop, uint16_t port, DnsHooks hooks)
    : socket_(std::move(socket)), stop_(std::move(stop)), port_(port), hooks_(std::move(hooks)) {
  thread_ = std::thread([this] { Serve(); });
}

DnsServer::~DnsServer() {
  uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  thread_.join();
}

void DnsServer::Serve() {
  uint8_t packet[1500];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(in_pktinfo))];
  for (;;) {
    pollfd p[2] = {{socket_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) continue;
    if (p[1].revents != 0) return;
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
    if (n <= 0) continue;
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
      continue;
    }
    Ipv4 proxy;
    std::memcpy(proxy.data(), &info.ipi_addr.s_addr, 4);  // network order: the bytes as they appear on the wire
    std::optional<std::vector<uint8_t>> answer =
        Respond(std::span<const uint8_t>(packet, static_cast<size_t>(n)),
                [&](std::string_view name) { return hooks_.listed(*sandbox, name); }, proxy);
    if (!answer) {
      ++dropped_;
      continue;
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
