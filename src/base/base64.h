// Base64 (RFC 4648, the standard alphabet): one codec for the API's byte fields, the spec and the CLI.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace isb {

std::string Base64Encode(std::string_view data);

enum class Base64Padding { kOptional, kRequired };
// The standard alphabet; no whitespace. kOptional: any number of trailing '=' (or none). kRequired: the length is
// a multiple of 4, with at most two '=' ending the last group.
// Refusals are kInvalidArgument "invalid base64: ...".
Result<std::string> Base64Decode(std::string_view text, Base64Padding padding = Base64Padding::kOptional);

}  // namespace isb
