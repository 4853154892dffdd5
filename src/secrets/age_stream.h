// The age v1 payload: a 16-byte nonce, then the plaintext in 64 KiB ChaCha20-Poly1305 chunks (STREAM), the last one
// flagged.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.h"
#include "secrets/age_crypto.h"
#include "secrets/secret_bytes.h"

namespace isb::secrets {

inline constexpr size_t kAgeChunkSize = 64 * 1024;
inline constexpr size_t kAgePayloadNonceSize = 16;

// Appends the payload that encrypts `plaintext` under `file_key` to `out`.
Status SealAgePayload(const FileKey& file_key, std::string_view plaintext, std::string& out);
// The plaintext of `payload` (everything after the header), whole or not at all: a chunk that does not
// authenticate, a missing final chunk, an empty final chunk after full ones, or bytes after the final chunk are
// kInvalidArgument "age file: ...", and no byte of the plaintext is returned.
Result<SecretBytes> OpenAgePayload(const FileKey& file_key, std::string_view payload);

}  // namespace isb::secrets
