// Content digests ("sha256:<hex>"): parsing, and hashing bytes as they stream by (OpenSSL EVP).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"

typedef struct evp_md_ctx_st EVP_MD_CTX;

namespace isb::image {

struct Digest {
  std::string algorithm;  // "sha256" or "sha512"
  std::string hex;        // lower-case, 64 or 128 digits
  std::string str() const { return algorithm + ":" + hex; }
  // "sha256:0123456789ab…": short enough for a message, long enough to tell blobs apart.
  std::string Short() const;
  bool operator==(const Digest&) const = default;
};

// "sha256:<64 lower-case hex>" or "sha512:<128 lower-case hex>". Errors (kInvalidArgument) quote the text (cut to
// a printable 80 characters) and say what is wrong.
Result<Digest> ParseDigest(std::string_view text);

// Hashes bytes as they arrive. Move-only.
class DigestHasher {
 public:
  // "sha256" or "sha512" (what ParseDigest accepts); anything else hashes with sha256.
  explicit DigestHasher(std::string algorithm = "sha256");
  ~DigestHasher();
  DigestHasher(DigestHasher&&) noexcept;
  DigestHasher& operator=(DigestHasher&&) noexcept;

  void Update(std::span<const uint8_t> bytes);
  void Update(std::string_view bytes);
  // The digest of everything given so far; the hasher starts over after it.
  Digest Finish();

 private:
  std::string algorithm_;
  EVP_MD_CTX* ctx_ = nullptr;
};

// Checks bytes as they stream in against a descriptor's digest and size; the errors (kInvalidArgument) name the
// blob: "layer sha256:0123456789ab…: digest mismatch (got sha256:<hex>)".
class DigestVerifier {
 public:
  // `what` says which blob this is ("layer", "config", "manifest", "blob").
  DigestVerifier(Digest expected, uint64_t size, std::string what);
  // Fails once more bytes came than the size declared.
  Status Update(std::string_view bytes);
  // Fails when fewer bytes came than declared, or their digest is another.
  Status Finish();
  uint64_t received() const { return received_; }
  // "layer sha256:0123456789ab…", as the errors begin.
  std::string Name() const;

 private:
  Digest expected_;
  uint64_t size_;
  std::string what_;
  DigestHasher hasher_;
  uint64_t received_ = 0;
};

// The digest of `bytes` at once.
Digest DigestOf(std::string_view bytes, std::string algorithm = "sha256");

}  // namespace isb::image
