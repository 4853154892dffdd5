#include "egress/publish_address.h"

#include <cstring>
#include <string>

#include "egress/address.h"

namespace isb::egress {
namespace {

Result<IpAddress> ParseAddress(std::string_view text) {
  auto ip = ParseIpAddress(text);
  if (!ip.ok())
    return Error::Of(Code::kInvalidArgument, "publish address '" + std::string(text) + "' is not an IP address");
  return *ip;
}

Status Forbidden(std::string message) { return Error::Of(Code::kForbidden, std::move(message)); }

}  // namespace

Status CheckPublishApartFromIsb(std::string_view address, std::string_view isb_address) {
  ISB_ASSIGN_OR_RETURN(IpAddress ip, ParseAddress(address));
  // ::ffff:a.b.c.d listens on a.b.c.d.
  auto unmapped = [](IpAddress a) {
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!a.v6 || std::memcmp(a.bytes.data(), kMapped, sizeof kMapped) != 0) return a;
    return IpAddress::V4(uint32_t{a.bytes[12]} << 24 | uint32_t{a.bytes[13]} << 16 | uint32_t{a.bytes[14]} << 8 |
                         a.bytes[15]);
  };
  ip = unmapped(ip);
  const std::string text = ip.ToString();
  const std::string why =
      ": a browser signed in to isb there sends its session cookie to every port of that host, "
      "and the sandbox's server would receive it; publish on another address, such as " +
      std::string(kDefaultPublishAddress) + " (the default)";
  if (Classify(ip).kind == AddressKind::kUnspecified)
    return Forbidden("publishing on " + text + " listens on every address of the host, isb's own among them" + why);
  const IpAddress localhost[] = {IpAddress::V4(0x7f000001), *ParseIpAddress("::1")};
  for (const IpAddress& l : localhost)
    if (ip == l) return Forbidden("publishing on " + text + ": that is where \"localhost\" leads" + why);
  if (auto own = ParseIpAddress(isb_address); own.ok() && unmapped(*own) == ip)
    return Forbidden("publishing on " + text + ": isb listens there" + why);
  return {};
}

}  // namespace isb::egress
