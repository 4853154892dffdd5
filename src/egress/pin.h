// Egress pins (`--egress-pin NAME=IP[:PORT]`): the one way, set by a platform admin, to a non-public address.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "egress/address.h"

namespace isb::egress {

struct Pin {
  std::string name;              // normalized (see NormalizeHostName); the pin holds for exactly this name
  IpAddress address;             // dialled instead of resolving the name, whatever its range
  std::optional<uint16_t> port;  // dialled instead of the requested port when set
};

// "api.test=10.0.0.5", "api.test=10.0.0.5:8443", "api.test=[fd00::5]:8443", "api.test=fd00::5". The address takes
// any spelling ParseIpAddress does, but not one that cannot be connected to (unspecified, multicast, broadcast).
// Errors (kInvalidArgument) quote the pin and say what is wrong.
Result<Pin> ParsePin(std::string_view text);

}  // namespace isb::egress
