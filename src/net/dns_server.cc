#include "net/dns_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
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

Result<DnsUpstream> ParseDnsUpstream(std::string_view text) {
  auto bad = [&] {
    return Error::Of(Code::kInvalidArgument,
                     "DNS upstream '" + std::string(text) + "' is not IP, IP:PORT or [IPv6]:PORT");
  };
  std::string host(text);
  uint16_t port = 53;
  if (!host.empty() && host.front() == '[') {
    size_t close = host.find(']');
    if (close == std::string::npos) return bad();
    std::string rest = host.substr(close + 1);
    host = host.substr(1, close - 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad();
      rest.erase(0, 1);
      char* end = nullptr;
      long n = std::strtol(rest.c_str(), &end, 10);
      if (rest.empty() || *end != '\0' || n < 1 || n > 65535) return bad();
      port = static_cast<uint16_t>(n);
    }
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    size_t colon = host.find(':');
    std::string digits = host.substr(colon + 1);
    char* end = nullptr;
    long n = std::strtol(digits.c_str(), &end, 10);
    if (digits.empty() || *end != '\0' || n < 1 || n > 65535) return bad();
    port = static_cast<uint16_t>(n);
    host.resize(colon);
  }
  DnsUpstream u;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&u.address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&u.address);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    u.length = sizeof *v4;
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    u.length = sizeof *v6;
  } else {
    return bad();
  }
  return u;
}

std::vector<DnsUpstream> UpstreamsFromResolvConf(std::string_view text) {
  std::vector<DnsUpstream> out;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    auto word = [&line]() {
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
      size_t end = line.find_first_of(" \t");
      std::string_view w = line.substr(0, end);
      line = end == std::string_view::npos ? std::string_view() : line.substr(end);
      return w;
    };
    if (word() != "nameserver") continue;
    std::string_view address = word();
    // A bare address only (resolv.conf names no port); an IPv6 literal holds colons, so it goes in brackets.
    std::string a(address);
    if (a.find(':') != std::string::npos) a = "[" + a + "]";
    if (auto u = ParseDnsUpstream(a); u.ok()) out.push_back(*u);
  }
  return out;
}

Result<std::unique_ptr<DnsServer>> DnsServer::Start(const std::string& address, uint16_t port, DnsHooks hooks,
                                                    std::vector<DnsUpstream> upstreams) {
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
    return std::unique_ptr<DnsServer>(new DnsServer(std::move(udp), std::move(*tcp), std::move(stop),
                                                    ntohs(at.sin_port), std::move(hooks), std::move(upstreams)));
  }
}

DnsServer::DnsServer(Fd socket, Fd listener, Fd stop, uint16_t port, DnsHooks hooks, std::vector<DnsUpstream> upstreams)
    : socket_(std::move(socket)),
      listener_(std::move(listener)),
      stop_(std::move(stop)),
      port_(port),
      hooks_(std::move(hooks)),
      upstreams_(std::move(upstreams)) {
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
    if (!pending_.empty()) next = std::min(next, now + std::chrono::milliseconds(250));  // retries, give-ups
    for (const TcpClient& c : clients_) {
      p.push_back({c.fd.get(), POLLIN, 0});
      next = std::min(next, c.deadline);
    }
    // Then each forwarded query's own socket.
    const size_t first_pending = p.size();
    std::vector<std::pair<uint16_t, size_t>> asked;  // (id, which of its sockets)
    asked.reserve(pending_.size());
    for (const auto& [id, pending] : pending_) {
      for (size_t k = 0; k < pending.socks.size(); ++k) {
        p.push_back({pending.socks[k].get(), POLLIN, 0});
        asked.emplace_back(id, k);
      }
    }
    int wait = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(next - now).count());
    if (::poll(p.data(), p.size(), std::max(wait, 0)) < 0) continue;
    if (p[0].revents != 0) {
      clients_.clear();
      tcp_open_ = 0;
      return;
    }
    // Several queries per wake-up (a burst from many sandboxes), but not so many that TCP clients wait.
    if (p[1].revents != 0)
      for (int i = 0; i < 64 && ServeUdp(); ++i) {
      }
    for (size_t i = 0; i < asked.size(); ++i)
      if (p[first_pending + i].revents != 0) ReadUpstream(asked[i].first, asked[i].second);
    if (!pending_.empty() && Clock::now() >= next_retry_check_) {
      RetryPending();
      next_retry_check_ = Clock::now() + std::chrono::milliseconds(100);
    }
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
  if (!sandbox || (hooks_.forwarded && hooks_.forwarded(*sandbox))) {  // an open sandbox: UDP only
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
    std::optional<std::vector<uint8_t>> answer = Respond(
        std::span<const uint8_t>(c.buffer.data() + 2, size),
        [&](std::string_view name) { return hooks_.listed(c.sandbox, name); }, c.proxy);
    c.buffer.erase(c.buffer.begin(), c.buffer.begin() + static_cast<std::ptrdiff_t>(2 + size));
    if (!answer || answer->size() > 0xffff) {
      ++dropped_;
      return false;
    }
    std::vector<uint8_t> framed{static_cast<uint8_t>(answer->size() >> 8), static_cast<uint8_t>(answer->size())};
    framed.insert(framed.end(), answer->begin(), answer->end());
    // An answer is small and the client reads it before asking again; one that does not fit is its loss.
    if (::send(c.fd.get(), framed.data(), framed.size(), MSG_DONTWAIT | MSG_NOSIGNAL) !=
        static_cast<ssize_t>(framed.size())) {
      ++dropped_;
      return false;
    }
    ++answered_;
    c.deadline = std::chrono::steady_clock::now() + kDnsTcpTimeout;
  }
  return true;
}

bool DnsServer::ServeUdp() {
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
    if (n <= 0) return false;
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
      return true;
    }
    if (hooks_.forwarded && hooks_.forwarded(*sandbox)) {
      Forward(std::span<const uint8_t>(packet, static_cast<size_t>(n)), from, info.ipi_addr, *sandbox);
      return true;
    }
    Ipv4 proxy;
    std::memcpy(proxy.data(), &info.ipi_addr.s_addr, 4);  // network order: the bytes as they appear on the wire
    std::optional<std::vector<uint8_t>> answer = Respond(
        std::span<const uint8_t>(packet, static_cast<size_t>(n)),
        [&](std::string_view name) { return hooks_.listed(*sandbox, name); }, proxy);
    if (!answer) {
      ++dropped_;
      return true;
    }
    if (ReplyFrom(from, info.ipi_addr, *answer))
      ++answered_;
    else
      ++dropped_;
  }
  return true;
}

bool DnsServer::ReplyFrom(const sockaddr_in& to, in_addr local, std::span<const uint8_t> packet) {
  in_pktinfo reply{};
  reply.ipi_spec_dst = local;
  alignas(cmsghdr) char reply_control[CMSG_SPACE(sizeof(in_pktinfo))] = {};
  iovec out{const_cast<uint8_t*>(packet.data()), packet.size()};
  sockaddr_in dest = to;
  msghdr r{};
  r.msg_name = &dest;
  r.msg_namelen = sizeof dest;
  r.msg_iov = &out;
  r.msg_iovlen = 1;
  r.msg_control = reply_control;
  r.msg_controllen = sizeof reply_control;
  cmsghdr* c = CMSG_FIRSTHDR(&r);
  c->cmsg_level = IPPROTO_IP;
  c->cmsg_type = IP_PKTINFO;
  c->cmsg_len = CMSG_LEN(sizeof reply);
  std::memcpy(CMSG_DATA(c), &reply, sizeof reply);
  return ::sendmsg(socket_.get(), &r, MSG_DONTWAIT) > 0;
}

// A query of an open sandbox: one the responder can read goes to the first upstream under an id of its own; one it
// cannot is refused as any sandbox's is.
void DnsServer::Forward(std::span<const uint8_t> packet, const sockaddr_in& from, in_addr local,
                        const std::string& sandbox) {
  DnsParse parsed = ParseDnsQuery(packet);
  if (parsed.kind == DnsParse::kDrop) {
    ++dropped_;
    return;
  }
  std::optional<std::vector<uint8_t>> refusal;
  if (parsed.kind == DnsParse::kRefuse)
    refusal = BuildHeaderOnly(parsed.query.id, parsed.query.flags, parsed.rcode);
  else if (upstreams_.empty())
    refusal = BuildEmpty(parsed.query, DnsRcode::kServFail);
  if (refusal) {
    if (ReplyFrom(from, local, *refusal))
      ++answered_;
    else
      ++dropped_;
    return;
  }
  // Its resolver asks again. One sandbox's share is bounded, so that its flood leaves room for the others'.
  const auto share = pending_per_sandbox_.find(sandbox);
  if (pending_.size() >= kMaxDnsPending ||
      (share != pending_per_sandbox_.end() && share->second >= kMaxDnsPendingPerSandbox)) {
    ++dropped_;
    return;
  }
  // An id no pending query has, that an address which can see none of this traffic cannot guess.
  uint16_t id = 0;
  for (int attempt = 0;; ++attempt) {
    if (attempt == 16 || ::getrandom(&id, sizeof id, 0) != static_cast<ssize_t>(sizeof id)) {
      ++dropped_;
      return;
    }
    if (pending_.count(id) == 0) break;
  }
  Pending p;
  p.client = from;
  p.local = local;
  p.client_id = parsed.query.id;
  p.sandbox = sandbox;
  p.question = parsed.query.question;
  p.query.assign(packet.begin(), packet.end());
  p.query[0] = static_cast<uint8_t>(id >> 8);
  p.query[1] = static_cast<uint8_t>(id);
  p.first = p.asked = std::chrono::steady_clock::now();
  if (!Ask(p)) {
    ++dropped_;
    return;
  }
  pending_.emplace(id, std::move(p));
  ++pending_per_sandbox_[sandbox];
}

void DnsServer::Forget(std::unordered_map<uint16_t, Pending>::iterator it) {
  auto count = pending_per_sandbox_.find(it->second.sandbox);
  if (count != pending_per_sandbox_.end() && --count->second <= 0) pending_per_sandbox_.erase(count);
  pending_.erase(it);
}

// Each query, and each retry of it, goes out on a socket of its own, connected to the upstream asked: from a port the
// kernel picks at random, and taking datagrams from that upstream's address and port only (RFC 5452).
bool DnsServer::Ask(Pending& p) {
  for (; p.upstream < upstreams_.size(); ++p.upstream) {
    const DnsUpstream& u = upstreams_[p.upstream];
    Fd s(::socket(u.address.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (s.valid() && ::connect(s.get(), reinterpret_cast<const sockaddr*>(&u.address), u.length) == 0 &&
        ::send(s.get(), p.query.data(), p.query.size(), MSG_DONTWAIT | MSG_NOSIGNAL) ==
            static_cast<ssize_t>(p.query.size())) {
      p.socks.push_back(std::move(s));
      return true;
    }
  }
  p.upstream = upstreams_.size() - 1;
  return false;
}

namespace {

// Whether `answer` (a response) is to `question` (as asked): the same question, the name in any case (a resolver
// may echo it normalised), or none at all in an error (FORMERR, REFUSED) that names none.
bool AnswersQuestion(std::span<const uint8_t> answer, std::span<const uint8_t> question) {
  const uint16_t questions = static_cast<uint16_t>(answer[4] << 8 | answer[5]);
  if (questions == 0) return (answer[3] & 0x0f) != 0;
  if (questions != 1 || answer.size() < 12 + question.size()) return false;
  for (size_t i = 0; i < question.size(); ++i) {
    auto lower = [](uint8_t c) { return c >= 'A' && c <= 'Z' ? static_cast<uint8_t>(c + 32) : c; };
    if (lower(answer[12 + i]) != lower(question[i])) return false;
  }
  return true;
}

}  // namespace

// An answer on the query's own socket: taken when it is a response under the responder's id to the question asked
// (case as sent), then passed on under the sandbox's own id. Anything else on that socket is dropped.
void DnsServer::ReadUpstream(uint16_t id, size_t sock) {
  auto it = pending_.find(id);
  if (it == pending_.end() || sock >= it->second.socks.size()) return;
  Pending& p = it->second;
  for (int reads = 0; reads < 4; ++reads) {
    upstream_buffer_.resize(65535);
    ssize_t n = ::recv(p.socks[sock].get(), upstream_buffer_.data(), upstream_buffer_.size(), MSG_DONTWAIT);
    if (n < 0) return;
    std::vector<uint8_t>& packet = upstream_buffer_;
    packet.resize(static_cast<size_t>(n));
    if (packet.size() < 12 || (packet[2] & 0x80) == 0) continue;  // not a response
    if (packet[0] != p.query[0] || packet[1] != p.query[1]) continue;
    if (!AnswersQuestion(packet, p.question)) continue;
    packet[0] = static_cast<uint8_t>(p.client_id >> 8);
    packet[1] = static_cast<uint8_t>(p.client_id);
    if (ReplyFrom(p.client, p.local, packet))
      ++forwarded_;
    else
      ++dropped_;
    Forget(it);
    return;
  }
}

// A query unanswered for kDnsUpstreamRetry goes to the next upstream (once each); after kDnsUpstreamGiveUp it is
// forgotten, and the sandbox's resolver asks again or gives up.
void DnsServer::RetryPending() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending& p = it->second;
    if (now - p.first >= kDnsUpstreamGiveUp) {
      ++dropped_;
      auto next = std::next(it);
      Forget(it);
      it = next;
      continue;
    }
    if (now - p.asked >= kDnsUpstreamRetry && p.upstream + 1 < upstreams_.size()) {
      ++p.upstream;
      p.asked = now;
      (void)Ask(p);
    }
    ++it;
  }
}

}  // namespace isb::net
