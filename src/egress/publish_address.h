// Where a sandbox's port may be published: never where a browser reaches isb.
#pragma once

#include <string_view>

#include "base/result.h"

namespace isb::egress {

// The address a port is published on when its spec names none: a loopback address of its own. A browser keeps
// cookies by host, not by port, so a port published where browsers reach isb would receive the session cookie of
// everyone signed in to isb's web sign-in there, and the sandbox's server could replay it (CheckPublishApartFromIsb).
inline constexpr char kDefaultPublishAddress[] = "127.0.0.2";

// OK when a port may be published on `address` beside a daemon that listens on `isb_address` (empty: none known),
// for every caller: never on isb_address, on 127.0.0.1 or ::1 (where "localhost" leads a browser), on an
// IPv4-mapped spelling of any of these, or on the unspecified address (every address, isb's among them), for the
// reason kDefaultPublishAddress gives. Otherwise kForbidden saying so; kInvalidArgument when it is not an address.
Status CheckPublishApartFromIsb(std::string_view address, std::string_view isb_address);

}  // namespace isb::egress
