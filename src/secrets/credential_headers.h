// The request header fields a secret's placeholder is swapped in: the one list of credential headers, and a secret's
// own additions (SecretMeta::headers). A placeholder in any other field goes on as it is, so an origin that reflects
// or stores an arbitrary header (X-Debug, Referer, a cookie it echoes) cannot be made to hand the value back: the
// same reason query and body substitution are an admin's opt-in.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "base/ascii.h"

namespace isb::secrets {

// Where an API credential travels: HTTP authentication (Basic credentials inside are swapped too, secret_forms.h),
// and the API-key headers of the common services (OpenAI-style X-Api-Key, which Anthropic's is; Azure's Api-Key;
// OpenStack's X-Auth-Token; Google's X-Goog-Api-Key). Compared case-insensitively.
inline constexpr std::array<std::string_view, 6> kCredentialHeaders = {
    "Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "X-Auth-Token", "X-Goog-Api-Key"};

// At most this many names a secret adds to kCredentialHeaders.
inline constexpr size_t kMaxExtraSwapHeaders = 16;

// Whether the placeholder is swapped in field `name`: a credential header, or one of the secret's `extra`.
inline bool SwapsInHeader(std::string_view name, const std::vector<std::string>& extra) {
  auto same = [name](std::string_view other) { return EqualsIgnoreCase(name, other); };
  return std::any_of(kCredentialHeaders.begin(), kCredentialHeaders.end(), same) ||
         std::any_of(extra.begin(), extra.end(), same);
}

}  // namespace isb::secrets
