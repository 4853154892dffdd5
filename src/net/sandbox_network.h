// A sandbox's network: a veth whose host end carries the gateway (where the proxy and DNS answer) and whose other end
// is the sandbox's eth0, with the sandbox's address and its only route. IPv6 is off on both ends.
#pragma once

#include <string>

#include "base/result.h"
#include "net/address_pool.h"

namespace isb::net {

// A host end is named <prefix>-<slot>. A prefix has no '-' (CheckIfnamePrefix), so no name of one prefix is
// another's: "isb-12" is slot 12 of "isb" and nothing of "isb1", and the firewall's "isb-*" matches none of "isbe2e".
inline constexpr char kSlotSeparator = '-';

// The interface group of every isb's host ends, whatever its prefix: a daemon whose forwarding rules drop what is
// not its sandboxes' (FirewallConfig::forward_only_sandboxes) lets another daemon's sandboxes through to their own
// daemon's rules by it, as it knows only its own prefix.
inline constexpr uint32_t kSandboxVethGroup = 0x69736200;  // "isb\0"

struct SandboxLink {
  std::string host_ifname;  // e.g. isb-12, the prefix the firewall matches, the separator and the slot index
  Slot slot;
};

std::string HostIfname(const std::string& prefix, uint32_t slot_index);

// Refuses a prefix that is not a letter followed by letters, digits or '_' (the nftables table of the daemon bears
// the same name), or too long for the name of the last slot of `subnet` to fit an interface name (15 characters).
Status CheckIfnamePrefix(const std::string& prefix, const Subnet& subnet);

// Turns IPv6 off for `ifname` (or "all", or "default") in the sysctl tree at `proc_sys` of the calling thread's
// namespace. A kernel without IPv6 (booted with ipv6.disable=1) has no net/ipv6 there: it is off already.
Status DisableIpv6(const std::string& ifname, const std::string& proc_sys = "/proc/sys");

// IPv4 forwarding (net.ipv4.ip_forward) in the sysctl tree at `proc_sys` of the calling thread's namespace: whether
// it is on, and turning it on. Each error names the sysctl.
Result<bool> Ipv4ForwardingOn(const std::string& proc_sys = "/proc/sys");
Status TurnOnIpv4Forwarding(const std::string& proc_sys = "/proc/sys");

// Puts the host end `host_ifname`, if there is one, in kSandboxVethGroup (a veth of an isb from before groups).
Status GroupHostEnd(const std::string& host_ifname);

// Creates and configures the veth for `slot` between the caller's namespace and `netns_fd` (the sandbox's), its host
// end in kSandboxVethGroup.
// `default_route`: a route to everywhere through the host end (open egress); without it the sandbox can address
// only the host end (a list: everything else is unreachable at once). On failure nothing is left behind.
Result<SandboxLink> AttachSandbox(int netns_fd, const Slot& slot, const std::string& ifname_prefix,
                                  bool default_route = true);

// Deletes the veth (both ends). A link that is already gone is not an error.
Status DetachSandbox(const std::string& host_ifname);

// Deletes the veth that an isb from before the separator named <prefix><slot> for `slot_index`, which no rule of this
// one matches; true when there was one.
Result<bool> DetachUnseparatedVeth(const std::string& prefix, uint32_t slot_index);

}  // namespace isb::net
