// The DNS responder sandboxes with an egress list talk to (their port 53 is redirected here by the host-side rules):
// it answers A queries for the sandbox's listed names with the proxy's address (the host end of the sandbox's veth),
// other types for listed names with no data, everything else NXDOMAIN. It asks no upstream, so nothing can be carried
// out through DNS.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "base/fd.h"
#include "base/result.h"

namespace isb::net {

struct DnsHooks {
  // The sandbox whose veth ends at `host_end` (host byte order), the address the query arrived at.
  std::function<std::optional<std::string>(uint32_t host_end)> sandbox;
  // Whether `sandbox` may reach `name` (lowercased, no trailing dot) on some port.
  std::function<bool(const std::string& sandbox, std::string_view name)> listed;
};

class DnsServer {
 public:
  // Listens on UDP `address`:`port` (0: any free port).
  static Result<std::unique_ptr<DnsServer>> Start(const std::string& address, uint16_t port, DnsHooks hooks);
  ~DnsServer();
  uint16_t port() const { return port_; }
  uint64_t answered() const { return answered_; }
  uint64_t dropped() const { return dropped_; }

 private:
  DnsServer(Fd socket, Fd stop, uint16_t port, DnsHooks hooks);
  void Serve();
  Fd socket_;
  Fd stop_;  // an eventfd: written once to end Serve
  uint16_t port_;
  DnsHooks hooks_;
  std::atomic<uint64_t> answered_{0}, dropped_{0};
  std::thread thread_;
};

}  // namespace isb::net
