// Parsing of NAME=IP[:PORT] pins.
#include "egress/pin.h"

#include "egress/host_port.h"

namespace isb::egress {
namespace {

Error BadPin(std::string_view text, const std::string& why) {
  return Error::Of(Code::kInvalidArgument, "egress pin '" + Printable(text) + "': " + why +
                                               " (expected NAME=IP[:PORT], e.g. api.test=10.0.0.5:8443)");
}

}  // namespace

Result<Pin> ParsePin(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos) return BadPin(text, "no '='");
  Pin pin;
  auto name = NormalizeHostName(text.substr(0, eq));
  if (!name.ok()) return BadPin(text, "the name " + name.error().message);
  pin.name = std::move(*name);
  auto hp = SplitHostPort(text.substr(eq + 1));
  if (!hp) return BadPin(text, "unbalanced brackets around the address");
  auto address = ParseIpAddress(hp->bracketed ? "[" + std::string(hp->host) + "]" : std::string(hp->host));
  if (!address.ok()) return BadPin(text, address.error().message);
  pin.address = *address;
  if (hp->port) {
    pin.port = ParsePort(*hp->port);
    if (!pin.port) return BadPin(text, "the port must be a number from 1 to 65535");
  }
  AddressClass c = Classify(pin.address);
  if (c.kind == AddressKind::kUnspecified || c.kind == AddressKind::kMulticast || c.kind == AddressKind::kBroadcast) {
    return BadPin(text, "an address in " + c.reason + " cannot be dialled");
  }
  return pin;
}

}  // namespace isb::egress
