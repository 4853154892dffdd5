// Punycode (RFC 3492): the ASCII form of an international domain label, to compare Unicode rules with xn-- names.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace isb::egress {

// "bücher" → "xn--bcher-kva"; a label that is all ASCII comes back unchanged. No case mapping or normalization
// (the input is taken as already in its canonical form). Errors (kInvalidArgument): invalid UTF-8.
Result<std::string> ToPunycodeLabel(std::string_view utf8_label);

}  // namespace isb::egress
