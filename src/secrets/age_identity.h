// age X25519 keys: an identity (AGE-SECRET-KEY-1...) and the recipients (age1...) files are encrypted to.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "secrets/age_crypto.h"
#include "secrets/secret_bytes.h"

namespace isb::secrets {

inline constexpr std::string_view kAgeRecipientHrp = "age";
inline constexpr std::string_view kAgeIdentityHrp = "age-secret-key-";

// An X25519 identity. Copyable; its private key is wiped wherever a copy goes.
class AgeIdentity {
 public:
  // A new identity from the OS's random source.
  static AgeIdentity Generate();
  // The one AGE-SECRET-KEY-1... line of `text`; blank lines, surrounding whitespace and '#' comment lines (as
  // age-keygen writes them) are skipped. kInvalidArgument "identity: ..." otherwise, never quoting the key.
  static Result<AgeIdentity> Parse(std::string_view text);

  // The public key, age1... (lower-case Bech32).
  std::string Recipient() const;
  // AGE-SECRET-KEY-1... (upper-case Bech32), as age-keygen writes it.
  SecretBytes Encode() const;

  const Key32& private_key() const { return private_; }
  const Key32& public_key() const { return public_; }

 private:
  explicit AgeIdentity(const Key32& private_key);

  Key32 private_;
  Key32 public_;
};

struct KeyLine {
  int number;             // from 1
  std::string_view text;  // without surrounding whitespace
};
// The lines of a key or recipients file that hold a key: blank lines and '#' comment lines skipped.
std::vector<KeyLine> KeyLines(std::string_view text);

// The 32-byte X25519 key of an age1... recipient; kInvalidArgument "recipient 'X': ..." naming what is wrong.
Result<Key32> DecodeRecipient(std::string_view recipient);
// OK when `recipient` is an age1... X25519 recipient.
Status CheckRecipient(std::string_view recipient);

}  // namespace isb::secrets
