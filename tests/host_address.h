// This host's own IPv4 address on an interface that is up and not loopback, for tests that need an address beyond
// loopback that is still no other machine's: a packet sent to it never leaves the host, whatever goes wrong.
#pragma once

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <string>
#include <string_view>

namespace isb::testing {

// "" when the host has none.
inline std::string HostOwnIpv4() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string out;
  for (ifaddrs* i = list; i != nullptr && out.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    // Not a sandbox's host end (isb's veths, this suite's or another daemon's): the host's own network only.
    if (std::string_view(i->ifa_name).starts_with("isb")) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text) != nullptr) out = text;
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace isb::testing
