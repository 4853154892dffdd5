// The sandbox subnet: one /30 per sandbox (network, host end, sandbox end, broadcast), handed out by index.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"

namespace isb::net {

struct Subnet {
  uint32_t base = 0;  // host byte order
  int prefix_len = 0;
  bool Contains(uint32_t addr) const;
  bool Overlaps(const Subnet& o) const;
  std::string ToString() const;
};

// "a.b.c.d/n", with the address the network itself (no host bits set).
Result<Subnet> ParseSubnet(const std::string& text);
std::string FormatIpv4(uint32_t host_order);
in_addr ToInAddr(uint32_t host_order);

// Benchmarking range (RFC 2544): not used on LANs, never routed on the internet, 32768 sandboxes.
inline constexpr const char* kDefaultSandboxSubnet = "198.18.0.0/15";

// The host's IPv4 routes other than the default one, from the routing table of the calling thread's namespace (or a
// file in that format, for tests).
Result<std::vector<Subnet>> HostRoutes(const std::string& route_table_path = "/proc/thread-self/net/route");
// Refuses a sandbox subnet that overlaps any of `routes`, naming the route.
Status CheckNoOverlap(const Subnet& subnet, const std::vector<Subnet>& routes);

struct Slot {
  uint32_t index = 0;
  uint32_t host = 0;     // the host end of the veth: gateway, proxy and DNS address for the sandbox
  uint32_t sandbox = 0;  // the sandbox's own address
};

class AddressPool {
 public:
  explicit AddressPool(Subnet subnet);
  uint32_t capacity() const { return capacity_; }
  // The lowest free slot, or kUnavailable when all are taken.
  Result<Slot> Allocate();
  // Marks a slot taken (adoption of a running sandbox at start-up); kConflict if it already is.
  Status Reserve(uint32_t index);
  void Free(uint32_t index);
  Slot SlotAt(uint32_t index) const;

 private:
  Subnet subnet_;
  uint32_t capacity_;
  Mutex mu_;
  std::vector<bool> used_ ISB_GUARDED_BY(mu_);
  uint32_t next_ ISB_GUARDED_BY(mu_) = 0;  // where the search for a free slot starts
};

}  // namespace isb::net
