// Passwords: a length policy, argon2id hashes (libsodium), and a dummy verification so that a sign-in for an unknown
// user costs what a wrong password costs.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace isb::identity {

inline constexpr size_t kMinPasswordLength = 12;
inline constexpr size_t kMaxPasswordLength = 1024;

// kInvalidArgument "password: ..." naming the rule broken; never echoes the password.
Status CheckPasswordPolicy(std::string_view password);

// An argon2id string ($argon2id$v=19$m=...,t=...,p=1$salt$hash) with isb's limits. Checks the policy first.
Result<std::string> HashPassword(std::string_view password);

// Whether `password` matches `encoded`. A malformed or empty `encoded` is false, after the same work as a real check.
bool VerifyPassword(std::string_view encoded, std::string_view password);

// Verifies `password` against a hash made once per process with isb's limits: the work of a real verification, for
// the sign-in of a user who does not exist. Always false.
bool VerifyDummy(std::string_view password);

// Makes the dummy hash now (about 0.1 s) rather than at the first unknown user's sign-in, which would then be slower.
void PreparePasswords();

// Whether `encoded` was made with other limits than isb's current ones (rehash on the next good sign-in).
bool NeedsRehash(std::string_view encoded);

}  // namespace isb::identity
