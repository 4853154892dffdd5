// age v1 files (https://age-encryption.org/v1), binary form, X25519 recipients: encrypt to recipients, decrypt with
// an identity. isb's own implementation over OpenSSL; the real age CLI reads what it writes and the other way round.
//
//   AgeIdentity key = AgeIdentity::Generate();
//   auto file = AgeEncrypt(value.view(), {key.Recipient(), break_glass});   // bytes for v1.age
//   auto value = AgeDecrypt(*file, key);                                      // SecretBytes, whole or an error
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "secrets/age_header.h"
#include "secrets/age_identity.h"
#include "secrets/secret_bytes.h"

namespace isb::secrets {

// A file for every recipient in `recipients` (age1..., at least one; kInvalidArgument naming a bad one). `extra`
// stanzas follow the recipients' in the header, under its MAC: age readers skip types they do not know (isb's
// store binds a file to its secret so).
Result<std::string> AgeEncrypt(std::string_view plaintext, const std::vector<std::string>& recipients,
                               const std::vector<AgeStanza>& extra = {});

// The plaintext of `file`, all of it or nothing. Errors:
//   kInvalidArgument "age file: ..."   the file is malformed, armored, corrupted, truncated or has bytes appended;
//                                      or it is for a passphrase (scrypt), which isb does not read
//   kForbidden "age file: not encrypted to this key (age1...)..."   no X25519 stanza opens with `identity`, or the
//              file has none ("encrypted only to other kinds of recipient (ssh-ed25519)...")
Result<SecretBytes> AgeDecrypt(std::string_view file, const AgeIdentity& identity);

}  // namespace isb::secrets
