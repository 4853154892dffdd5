// The age v1 header (https://age-encryption.org/v1): its recipient stanzas and MAC, parsed from untrusted bytes and
// formatted back.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace isb::secrets {

inline constexpr std::string_view kAgeVersionLine = "age-encryption.org/v1\n";
inline constexpr size_t kAgeMaxStanzas = 256;  // a store file has a handful; each costs an X25519 to try

struct AgeStanza {
  std::vector<std::string> args;  // at least one; args[0] is the type ("X25519", "scrypt", ...)
  std::string body;               // decoded from base64
};

struct AgeHeader {
  std::vector<AgeStanza> stanzas;  // at least one
  std::string mac;                 // 32 bytes: HMAC-SHA-256 over the first mac_input_size bytes
  size_t mac_input_size = 0;       // from the version line through "---"
  size_t payload_offset = 0;       // where the payload (a 16-byte nonce, then the chunks) starts
};

// Parses the header at the start of `file`, checking its grammar only (not the MAC: that needs the file key).
// Refusals are kInvalidArgument "age file: ..." naming the header line; never quote the file's bytes.
// ASCII-armored files are refused with a message saying to give the binary form.
Result<AgeHeader> ParseAgeHeader(std::string_view file);

// The header as the stanzas format it, from the version line through "---" (what the MAC covers).
std::string FormatAgeHeaderForMac(const std::vector<AgeStanza>& stanzas);

// Unpadded, canonical base64, as age writes it everywhere.
std::string AgeBase64Encode(std::string_view bytes);
// kInvalidArgument for padding, characters outside the alphabet, or a non-canonical final character.
Result<std::string> AgeBase64Decode(std::string_view text);

}  // namespace isb::secrets
