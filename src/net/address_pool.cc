#include "net/address_pool.h"

#include <arpa/inet.h>

#include <charconv>
#include <sstream>

#include "base/file.h"

namespace isb::net {
namespace {

uint32_t Mask(int prefix_len) { return prefix_len == 0 ? 0 : ~uint32_t{0} << (32 - prefix_len); }

}  // namespace

bool Subnet::Contains(uint32_t addr) const { return (addr & Mask(prefix_len)) == base; }

bool Subnet::Overlaps(const Subnet& o) const {
  int shorter = std::min(prefix_len, o.prefix_len);
  return (base & Mask(shorter)) == (o.base & Mask(shorter));
}

std::string Subnet::ToString() const { return FormatIpv4(base) + "/" + std::to_string(prefix_len); }

std::string FormatIpv4(uint32_t host_order) {
  in_addr a = ToInAddr(host_order);
  char buf[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

in_addr ToInAddr(uint32_t host_order) { return in_addr{htonl(host_order)}; }

Result<Subnet> ParseSubnet(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return Error::Of(Code::kInvalidArgument, "subnet \"" + text + "\": " + why + " (expected a.b.c.d/n)");
  };
  size_t slash = text.find('/');
  if (slash == std::string::npos) return bad("no prefix length");
  in_addr a{};
  // inet_pton takes only the dotted-quad spelling: no octal, hex or short forms.
  if (::inet_pton(AF_INET, text.substr(0, slash).c_str(), &a) != 1) return bad("not an IPv4 address");
  int len = -1;
  const char* first = text.data() + slash + 1;
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(first, last, len);
  if (ec != std::errc() || end != last || first == last || len < 8 || len > 30)
    return bad("prefix length must be 8 to 30");
  Subnet s{ntohl(a.s_addr), len};
  if ((s.base & Mask(len)) != s.base) return bad("host bits are set");
  return s;
}

Result<std::vector<Subnet>> HostRoutes(const std::string& route_table_path) {
  ISB_ASSIGN_OR_RETURN(std::string table, ReadFile(route_table_path));
  std::vector<Subnet> routes;
  std::istringstream in(table);
  std::string line;
  std::getline(in, line);  // the column titles
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string iface, dest, gateway, flags, refcnt, use, metric, mask;
    if (!(f >> iface >> dest >> gateway >> flags >> refcnt >> use >> metric >> mask)) continue;
    // The kernel prints addresses as the hex of the 32-bit value in network order, as read on this (little-endian)
    // host: ntohl of that value gives the host-order address.
    uint32_t d = ntohl(static_cast<uint32_t>(std::stoul(dest, nullptr, 16)));
    uint32_t m = ntohl(static_cast<uint32_t>(std::stoul(mask, nullptr, 16)));
    if (m == 0) continue;  // the default route overlaps everything by definition
    routes.push_back(Subnet{d & m, __builtin_popcount(m)});
  }
  return routes;
}

Status CheckNoOverlap(const Subnet& subnet, const std::vector<Subnet>& routes) {
  for (const Subnet& r : routes) {
    if (subnet.Overlaps(r))
      return Error::Of(Code::kInvalidArgument, "sandbox subnet " + subnet.ToString() + " overlaps the host route " +
                                                   r.ToString() + "; choose another with --sandbox-subnet");
  }
  return {};
}

AddressPool::AddressPool(Subnet subnet)
    : subnet_(subnet), capacity_(uint32_t{1} << (30 - subnet.prefix_len)), used_(capacity_, false) {}

Slot AddressPool::SlotAt(uint32_t index) const {
  uint32_t network = subnet_.base + index * 4;
  return Slot{index, network + 1, network + 2};
}

Result<Slot> AddressPool::Allocate() {
  MutexLock lock(mu_);
  for (uint32_t i = 0; i < capacity_; ++i) {
    uint32_t index = (next_ + i) % capacity_;
    if (used_[index]) continue;
    used_[index] = true;
    next_ = index + 1;
    return SlotAt(index);
  }
  return Error::Of(Code::kUnavailable, "every address of the sandbox subnet " + subnet_.ToString() + " is in use");
}

Status AddressPool::Reserve(uint32_t index) {
  MutexLock lock(mu_);
  if (index >= capacity_) return Error::Of(Code::kInvalidArgument, "address slot out of range");
  if (used_[index]) return Error::Of(Code::kConflict, "address slot already in use");
  used_[index] = true;
  return {};
}

void AddressPool::Free(uint32_t index) {
  MutexLock lock(mu_);
  if (index < capacity_) used_[index] = false;
}

}  // namespace isb::net
