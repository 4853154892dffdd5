// Bearer secrets: `isb_<kind>_` and 32 random bytes from the OS in unpadded base64url. Only their SHA-256 is stored.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "base/result.h"

namespace isb::identity {

enum class SecretKind {
  kToken,       // isb_tok_   API token
  kSuperadmin,  // isb_sa_    superadmin token, minted only on the host
  kSession,     // isb_sess_  browser session
  kInvitation,  // isb_inv_   invitation into an org
  kReset,       // isb_rst_   password reset
  kSetup,       // isb_setup_ one-time creation of the first admin
  kAuthCode,    // isb_code_  OAuth authorization code (api/oauth_server.h)
  kRefresh,     // isb_rt_    OAuth refresh token
};

inline constexpr size_t kSecretBytes = 32;
inline constexpr size_t kSecretBodyChars = 43;  // base64url of 32 bytes, unpadded

std::string_view SecretPrefix(SecretKind kind);

// A fresh secret of `kind`. The caller shows it exactly once and stores only SecretHash of it.
Result<std::string> NewSecret(SecretKind kind);

// The kind of a presented secret: a known prefix followed by exactly 43 base64url characters that decode to 32 bytes
// (the last one canonical). Anything else is kUnauthenticated "malformed token"; the error never echoes the input.
Result<SecretKind> ParseSecret(std::string_view presented);

// Lower-case hex SHA-256 of the whole secret, prefix included: what the database keeps.
std::string SecretHash(std::string_view secret);

// The PKCE S256 challenge of a code verifier (RFC 7636): unpadded base64url of its SHA-256.
std::string PkceS256(std::string_view verifier);

// Constant-time equality of two hashes of the same length (false on a length mismatch).
bool HashesEqual(std::string_view a, std::string_view b);

}  // namespace isb::identity
