// The primitives age v1 is built from, over OpenSSL: X25519, HKDF-SHA-256, HMAC-SHA-256, ChaCha20-Poly1305.
#pragma once

#include <openssl/crypto.h>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.h"

namespace isb::secrets {

// N bytes of key material, wiped when it goes.
template <size_t N>
class KeyBytes {
 public:
  KeyBytes() = default;
  KeyBytes(const KeyBytes&) = default;
  KeyBytes& operator=(const KeyBytes&) = default;
  ~KeyBytes() { OPENSSL_cleanse(bytes_.data(), N); }

  unsigned char* data() { return bytes_.data(); }
  const unsigned char* data() const { return bytes_.data(); }
  std::string_view view() const { return {reinterpret_cast<const char*>(bytes_.data()), N}; }
  static constexpr size_t size() { return N; }

 private:
  std::array<unsigned char, N> bytes_{};
};

using Key32 = KeyBytes<32>;
using FileKey = KeyBytes<16>;

constexpr size_t kAeadTagSize = 16;
constexpr size_t kAeadNonceSize = 12;

// `out` filled from the OS's random source.
Status FillRandom(unsigned char* out, size_t size);

// The X25519 public key (RFC 7748 scalar multiplication by the base point) of `private_key`.
Result<Key32> X25519Public(const Key32& private_key);
// X25519(private_key, peer): kInvalidArgument when `peer` is a low-order point (the shared secret would be zero).
Result<Key32> X25519Shared(const Key32& private_key, std::string_view peer);

// HKDF-SHA-256 (RFC 5869) with 32 bytes of output.
Result<Key32> HkdfSha256(std::string_view ikm, std::string_view salt, std::string_view info);
Result<Key32> HmacSha256(std::string_view key, std::string_view data);

// ChaCha20-Poly1305 (RFC 7539), no associated data. Seal writes plaintext.size() + 16 bytes to `out`; Open writes
// ciphertext.size() - 16 bytes to `out` and returns false when the tag does not verify (`out` is then wiped).
Status AeadSeal(const Key32& key, std::string_view nonce, std::string_view plaintext, char* out);
bool AeadOpen(const Key32& key, std::string_view nonce, std::string_view ciphertext, char* out);

}  // namespace isb::secrets
