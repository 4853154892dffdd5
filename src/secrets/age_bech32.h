// Bech32 (BIP 173, without its length limit) as age uses it for recipients (age1...) and identities
// (AGE-SECRET-KEY-1...).
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace isb::secrets {

struct Bech32Data {
  std::string hrp;    // lower-case
  std::string bytes;  // the data part, as 8-bit bytes
};

// Lower-case Bech32 of `bytes` under `hrp` (which must be lower-case).
std::string Bech32Encode(std::string_view hrp, std::string_view bytes);
// Either all upper- or all lower-case; the checksum is verified over the lower-case form. Errors are
// kInvalidArgument and never quote `text` (an identity is secret).
Result<Bech32Data> Bech32Decode(std::string_view text);

}  // namespace isb::secrets
