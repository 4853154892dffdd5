// The DNS responder sandboxes with a network talk to (their port 53 is redirected here by the host-side rules). For a
// sandbox with an egress list it answers A queries for the sandbox's listed names with the proxy's address (the host
// end of the sandbox's veth), other types for listed names with no data, everything else NXDOMAIN, and asks no
// upstream, so nothing can be carried out through DNS. An open sandbox's queries (DnsHooks::forwarded) are relayed
// over UDP to the host's resolvers, each under an id of the responder's own (random) and from a port of its own, and
// an answer echoing the question relayed back:
// such a sandbox reaches any public address anyway, but not the host's resolver, which is often on loopback or the
// LAN. Over TCP an open sandbox is not served (a resolver asks over TCP only after a truncated answer). The same
// answers over TCP on the same port number (each message after its 2-byte length, several on one connection), for at
// most kMaxDnsTcpConnections at once and kMaxDnsTcpPerSandbox from one sandbox (so one sandbox holding connections open
// cannot keep the others from DNS over TCP), each closed when a query takes longer than kDnsTcpTimeout to arrive or is
// not one the responder answers.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <sys/socket.h>
#include <netinet/in.h>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "base/result.h"

namespace isb::net {

struct DnsHooks {
  // The sandbox whose veth ends at `host_end` (host byte order), the address the query arrived at.
  std::function<std::optional<std::string>(uint32_t host_end)> sandbox;
  // Whether `sandbox` may reach `name` (lowercased, no trailing dot) on some port.
  std::function<bool(const std::string& sandbox, std::string_view name)> listed;
  // Whether `sandbox`'s queries go to the upstream resolvers (open egress). Unset: none do.
  std::function<bool(const std::string& sandbox)> forwarded;
};

// A resolver forwarded queries go to.
struct DnsUpstream {
  sockaddr_storage address{};
  socklen_t length = 0;
};
// "IP", "IP:PORT" or "[IPv6]:PORT" (port 53 when none); kInvalidArgument naming the text otherwise.
Result<DnsUpstream> ParseDnsUpstream(std::string_view text);
// The nameserver lines of a resolv.conf, in order, on port 53 (an address that does not parse, as one with an IPv6
// zone, is left out).
std::vector<DnsUpstream> UpstreamsFromResolvConf(std::string_view text);

// Forwarded queries awaiting an answer, each holding a socket per upstream asked; more are dropped.
inline constexpr size_t kMaxDnsPending = 1024;
inline constexpr int kMaxDnsPendingPerSandbox = 128;                  // of them, one sandbox's
inline constexpr std::chrono::milliseconds kDnsUpstreamRetry{1000};   // then the next upstream is asked
inline constexpr std::chrono::milliseconds kDnsUpstreamGiveUp{4000};  // then the query is forgotten

// The UDP socket's receive buffer: room for a few thousand queries waiting at once.
inline constexpr int kDnsUdpReceiveBuffer = 4 << 20;
inline constexpr size_t kMaxDnsTcpConnections = 256;
inline constexpr size_t kMaxDnsTcpPerSandbox = 8;  // more from the same sandbox are closed at once
inline constexpr std::chrono::milliseconds kDnsTcpTimeout{5000};
inline constexpr size_t kMaxDnsTcpMessage = 4096;  // a query is far smaller; longer ones close the connection

class DnsServer {
 public:
  // Listens on UDP and TCP `address`:`port` (0: a port free for both). Forwarded queries go to `upstreams` (none:
  // they are answered SERVFAIL).
  static Result<std::unique_ptr<DnsServer>> Start(const std::string& address, uint16_t port, DnsHooks hooks,
                                                  std::vector<DnsUpstream> upstreams = {});
  ~DnsServer();
  uint16_t port() const { return port_; }
  uint64_t answered() const { return answered_; }
  uint64_t dropped() const { return dropped_; }
  uint64_t forwarded() const { return forwarded_; }  // answers relayed from an upstream
  size_t tcp_connections() const { return tcp_open_; }

 private:
  struct TcpClient {
    Fd fd;
    std::string sandbox;
    std::array<uint8_t, 4> proxy;  // the address it connected to, as on the wire
    std::vector<uint8_t> buffer;
    std::chrono::steady_clock::time_point deadline;
  };
  struct Pending {
    sockaddr_in client{};
    in_addr local{};  // where the query arrived: the answer leaves from it
    uint16_t client_id = 0;
    std::vector<uint8_t> query;     // as sent upstream, under the responder's id
    std::vector<uint8_t> question;  // its question section, which an answer must echo
    std::string sandbox;
    std::vector<Fd> socks;  // one per upstream asked, each connected to it: a late answer still counts
    size_t upstream = 0;    // the upstream asked last
    std::chrono::steady_clock::time_point first, asked;
  };
  DnsServer(Fd socket, Fd listener, Fd stop, uint16_t port, DnsHooks hooks, std::vector<DnsUpstream> upstreams);
  void Serve();
  // Reads and answers one UDP query; false when none was waiting.
  bool ServeUdp();
  // Sends `packet` to `to` from `local` (the address the query arrived at, so the sandbox's resolver takes it).
  bool ReplyFrom(const sockaddr_in& to, in_addr local, std::span<const uint8_t> packet);
  void Forward(std::span<const uint8_t> packet, const sockaddr_in& from, in_addr local, const std::string& sandbox);
  // Sends the query to upstreams_[p.upstream] on a new socket; on failure to the next ones, in turn. False: none took
  // it.
  bool Ask(Pending& p);
  void ReadUpstream(uint16_t id, size_t sock);
  void RetryPending();
  void Forget(std::unordered_map<uint16_t, struct Pending>::iterator it);
  void AcceptTcp();
  // Reads what `client` sent and answers each whole query in it; false: close it.
  bool ServeTcp(TcpClient& client);
  Fd socket_;
  Fd listener_;  // TCP
  Fd stop_;      // an eventfd: written once to end Serve
  uint16_t port_;
  DnsHooks hooks_;
  std::atomic<uint64_t> answered_{0}, dropped_{0}, forwarded_{0};
  std::vector<DnsUpstream> upstreams_;
  std::unordered_map<uint16_t, Pending> pending_;  // by the responder's id; the Serve thread's only
  std::unordered_map<std::string, int> pending_per_sandbox_;
  std::vector<uint8_t> upstream_buffer_;  // where an upstream's answer is read
  std::chrono::steady_clock::time_point next_retry_check_{};
  std::atomic<size_t> tcp_open_{0};
  std::vector<TcpClient> clients_;  // the Serve thread's only
  std::thread thread_;
};

}  // namespace isb::net
