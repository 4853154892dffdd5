// A sandbox's network: a veth whose host end carries the gateway (where the proxy and DNS answer) and whose other end
// is the sandbox's eth0, with the sandbox's address and its only route. IPv6 is off on both ends.
#pragma once

#include <string>

#include "base/result.h"
#include "net/address_pool.h"

namespace isb::net {

struct SandboxLink {
  std::string host_ifname;  // e.g. isb12, the prefix the firewall matches plus the slot index
  Slot slot;
};

std::string HostIfname(const std::string& prefix, uint32_t slot_index);

// Creates and configures the veth for `slot` between the caller's namespace and `netns_fd` (the sandbox's).
// `default_route`: a route to everywhere through the host end (open egress); without it the sandbox can address
// only the host end (a list: everything else is unreachable at once). On failure nothing is left behind.
Result<SandboxLink> AttachSandbox(int netns_fd, const Slot& slot, const std::string& ifname_prefix,
                                  bool default_route = true);

// Deletes the veth (both ends). A link that is already gone is not an error.
Status DetachSandbox(const std::string& host_ifname);

}  // namespace isb::net
