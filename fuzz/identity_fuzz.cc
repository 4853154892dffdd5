// Fuzzes what callers hand the identity layer: bearer secrets, roles, scopes and tool globs.
// The first byte picks the parser; the rest is its input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "identity/roles.h"
#include "identity/tokens.h"

using namespace isb::identity;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      auto kind = ParseSecret(in);
      // Accepted secrets are exactly prefix + 43 characters.
      if (kind.ok() && in.size() != SecretPrefix(*kind).size() + kSecretBodyChars) abort();
      if (!kind.ok() && kind.error().message != "malformed token") abort();
      break;
    }
    case 1: {
      auto scopes = ParseScopes(in);
      // What parses formats back to something that parses to the same scopes.
      if (scopes.ok()) {
        auto again = ParseScopes(FormatScopes(*scopes));
        if (!again.ok() || *again != *scopes) abort();
      }
      break;
    }
    case 2:
      (void)ParseRole(in);
      break;
    case 3: {
      size_t cut = in.find('\n');
      if (cut == std::string_view::npos) break;
      (void)GlobMatch(in.substr(0, cut), in.substr(cut + 1));
      break;
    }
  }
  return 0;
}
