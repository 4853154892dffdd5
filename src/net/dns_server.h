// The DNS responder sandboxes with an egress list talk to (their port 53 is redirected here by the host-side rules):
// it answers A queries for the sandbox's listed names with the proxy's address (the host end of the sandbox's veth),
// other types for listed names with no data, everything else NXDOMAIN. It asks no upstream, so nothing can be carried
// out through DNS. The same answers over TCP on the same port number (each message after its 2-byte length, several
// on one connection), for at most kMaxDnsTcpConnections at once and kMaxDnsTcpPerSandbox from one sandbox (so one
// sandbox holding connections open cannot keep the others from DNS over TCP), each closed when a query takes longer
// than kDnsTcpTimeout to arrive or is not one the responder answers.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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
};

// The UDP socket's receive buffer: room for a few thousand queries waiting at once.
inline constexpr int kDnsUdpReceiveBuffer = 4 << 20;
inline constexpr size_t kMaxDnsTcpConnections = 256;
inline constexpr size_t kMaxDnsTcpPerSandbox = 8;  // more from the same sandbox are closed at once
inline constexpr std::chrono::milliseconds kDnsTcpTimeout{5000};
inline constexpr size_t kMaxDnsTcpMessage = 4096;  // a query is far smaller; longer ones close the connection

class DnsServer {
 public:
  // Listens on UDP and TCP `address`:`port` (0: a port free for both).
  static Result<std::unique_ptr<DnsServer>> Start(const std::string& address, uint16_t port, DnsHooks hooks);
  ~DnsServer();
  uint16_t port() const { return port_; }
  uint64_t answered() const { return answered_; }
  uint64_t dropped() const { return dropped_; }
  size_t tcp_connections() const { return tcp_open_; }

 private:
  struct TcpClient {
    Fd fd;
    std::string sandbox;
    std::array<uint8_t, 4> proxy;  // the address it connected to, as on the wire
    std::vector<uint8_t> buffer;
    std::chrono::steady_clock::time_point deadline;
  };
  DnsServer(Fd socket, Fd listener, Fd stop, uint16_t port, DnsHooks hooks);
  void Serve();
  void ServeUdp();
  void AcceptTcp();
  // Reads what `client` sent and answers each whole query in it; false: close it.
  bool ServeTcp(TcpClient& client);
  Fd socket_;
  Fd listener_;  // TCP
  Fd stop_;  // an eventfd: written once to end Serve
  uint16_t port_;
  DnsHooks hooks_;
  std::atomic<uint64_t> answered_{0}, dropped_{0};
  std::atomic<size_t> tcp_open_{0};
  std::vector<TcpClient> clients_;  // the Serve thread's only
  std::thread thread_;
};

}  // namespace isb::net
