#include "net/sandbox_network.h"

#include <net/if.h>
#include <unistd.h>

#include <cerrno>

#include "base/file.h"
#include "net/netlink.h"

namespace isb::net {
namespace {

constexpr int kPrefixLen = 30;

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

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

std::string HostIfname(const std::string& prefix, uint32_t slot_index) {
  return prefix + kSlotSeparator + std::to_string(slot_index);
}

Status CheckIfnamePrefix(const std::string& prefix, const Subnet& subnet) {
  bool valid = !prefix.empty() && IsLetter(prefix[0]);
  for (char c : prefix) valid = valid && (IsLetter(c) || IsDigit(c) || c == '_');
  if (!valid)
    return Error::Of(Code::kInvalidArgument, "\"" + prefix +
                                                 "\" must be a letter followed by letters, digits or _ "
                                                 "(the sandboxes' veths are named <prefix>-<slot>)");
  const uint32_t slots = uint32_t{1} << (30 - subnet.prefix_len);  // a /30 each
  const std::string last = HostIfname(prefix, slots - 1);
  if (last.size() >= IFNAMSIZ)
    return Error::Of(Code::kInvalidArgument, "\"" + prefix + "\" is too long for the sandbox subnet " +
                                                 subnet.ToString() + ": the veth of its last slot, " + last + ", has " +
                                                 std::to_string(last.size()) + " characters, over the " +
                                                 std::to_string(IFNAMSIZ - 1) + " of an interface name");
  return {};
}

Status DisableIpv6(const std::string& ifname, const std::string& proc_sys) {
  Status s = WriteKernelFile(proc_sys + "/net/ipv6/conf/" + ifname + "/disable_ipv6", "1");
  // Only the whole tree missing says IPv6 is off: an interface missing from a tree that is there is an error.
  if (!s.ok() && s.error().err == ENOENT && ::access((proc_sys + "/net/ipv6").c_str(), F_OK) != 0 && errno == ENOENT)
    return {};
  return s;
}

Result<bool> Ipv4ForwardingOn(const std::string& proc_sys) {
  Result<std::string> value = ReadFile(proc_sys + "/net/ipv4/ip_forward");
  if (!value.ok()) return Error{"reading net.ipv4.ip_forward: " + value.error().message, value.error().err};
  return value->substr(0, value->find('\n')) != "0";
}

Status TurnOnIpv4Forwarding(const std::string& proc_sys) {
  Status s = WriteKernelFile(proc_sys + "/net/ipv4/ip_forward", "1");
  if (!s.ok()) return Error{"turning on IPv4 forwarding (net.ipv4.ip_forward): " + s.error().message, s.error().err};
  return {};
}

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
    ISB_TRY(nl.SetGroup(host, kSandboxVethGroup));
    ISB_TRY(nl.SetUp(host));
    return ConfigureSandboxEnd(netns_fd, slot, default_route);
  }();
  if (!configured.ok()) {
    (void)DetachSandbox(link.host_ifname);
    return configured.error();
  }
  return link;
}

Status GroupHostEnd(const std::string& host_ifname) {
  ISB_ASSIGN_OR_RETURN(Netlink nl, Netlink::Open());
  Result<int> index = nl.IfIndex(host_ifname);
  if (!index.ok()) return index.error().code == Code::kNotFound ? Status() : Status(index.error());
  return nl.SetGroup(*index, kSandboxVethGroup);
}

Status DetachSandbox(const std::string& host_ifname) {
  ISB_ASSIGN_OR_RETURN(Netlink nl, Netlink::Open());
  Result<int> index = nl.IfIndex(host_ifname);
  if (!index.ok()) return index.error().code == Code::kNotFound ? Status() : Status(index.error());
  Status s = nl.DeleteLink(*index);
  if (!s.ok() && s.error().code == Code::kNotFound) return {};
  return s;
}

Result<bool> DetachUnseparatedVeth(const std::string& prefix, uint32_t slot_index) {
  const std::string name = prefix + std::to_string(slot_index);
  ISB_ASSIGN_OR_RETURN(Netlink nl, Netlink::Open());
  Result<int> index = nl.IfIndex(name);
  if (!index.ok()) return index.error().code == Code::kNotFound ? Result<bool>(false) : Result<bool>(index.error());
  ISB_TRY(DetachSandbox(name));
  return true;
}

}  // namespace isb::net
