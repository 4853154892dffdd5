#include "net/sandbox_network.h"

#include "base/file.h"
#include "net/netlink.h"

namespace isb::net {
namespace {

constexpr int kPrefixLen = 30;

// IPv6 off for one interface, or for every interface ("all" and "default") of the calling thread's namespace.
Status DisableIpv6(const std::string& ifname) {
  return WriteKernelFile("/proc/sys/net/ipv6/conf/" + ifname + "/disable_ipv6", "1");
}

Status ConfigureSandboxEnd(int netns_fd, const Slot& slot, bool default_route) {
  return InNetns(netns_fd, [&]() -> Status {
    // /proc/sys/net shows the namespace of the thread that opens it: this one's.
    ISB_TRY(DisableIpv6("all"));
    ISB_TRY(DisableIpv6("default"));
    ISB_ASSIGN_OR_RETURN(Netlink nl, Netlink::Open());
    ISB_ASSIGN_OR_RETURN(int eth0, nl.IfIndex("eth0"));
    ISB_TRY(DisableIpv6("eth0"));
    ISB_TRY(nl.AddAddress(eth0, ToInAddr(slot.sandbox), kPrefixLen));
    ISB_TRY(nl.SetUp(eth0));
    if (!default_route) return {};
    return nl.AddDefaultRoute(ToInAddr(slot.host), eth0);
  });
}

}  // namespace

std::string HostIfname(const std::string& prefix, uint32_t slot_index) { return prefix + std::to_string(slot_index); }

Result<SandboxLink> AttachSandbox(int netns_fd, const Slot& slot, const std::string& ifname_prefix,
                                  bool default_route) {
  SandboxLink link{HostIfname(ifname_prefix, slot.index), slot};
  ISB_ASSIGN_OR_RETURN(Netlink nl, Netlink::Open());
  // A veth left by a crashed daemon for this slot would make the create fail; the slot is free, so is the name.
  if (Result<int> stale = nl.IfIndex(link.host_ifname); stale.ok()) ISB_TRY(nl.DeleteLink(*stale));
  ISB_TRY(nl.CreateVeth(link.host_ifname, "eth0", netns_fd));
  Status configured = [&]() -> Status {
    ISB_ASSIGN_OR_RETURN(int host, nl.IfIndex(link.host_ifname));
    ISB_TRY(DisableIpv6(link.host_ifname));
    ISB_TRY(nl.AddAddress(host, ToInAddr(slot.host), kPrefixLen));
    ISB_TRY(nl.SetUp(host));
    return ConfigureSandboxEnd(netns_fd, slot, default_route);
  }();
  if (!configured.ok()) {
    (void)DetachSandbox(link.host_ifname);
    return configured.error();
  }
  return link;
}

Status DetachSandbox(const std::string& host_ifname) {
  ISB_ASSIGN_OR_RETURN(Netlink nl, Netlink::Open());
  Result<int> index = nl.IfIndex(host_ifname);
  if (!index.ok()) return index.error().code == Code::kNotFound ? Status() : Status(index.error());
  Status s = nl.DeleteLink(*index);
  if (!s.ok() && s.error().code == Code::kNotFound) return {};
  return s;
}

}  // namespace isb::net
