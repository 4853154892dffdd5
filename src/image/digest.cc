// sha256/sha512 through OpenSSL's EVP interface; the text form checked strictly (lower-case hex, exact length).
#include "image/digest.h"

#include <openssl/evp.h>

#include <utility>

#include "egress/host_port.h"

namespace isb::image {
namespace {

const EVP_MD* Md(const std::string& algorithm) { return algorithm == "sha512" ? EVP_sha512() : EVP_sha256(); }

Error BadDigest(std::string_view text, const std::string& why) {
  std::string shown = egress::Printable(text.substr(0, 80));
  return Error::Of(Code::kInvalidArgument, "digest '" + shown + "' " + why);
}

}  // namespace

std::string Digest::Short() const { return algorithm + ":" + hex.substr(0, 12); }

Result<Digest> ParseDigest(std::string_view text) {
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) return BadDigest(text, "has no algorithm (expected sha256:<64 hex digits>)");
  std::string_view algorithm = text.substr(0, colon);
  std::string_view hex = text.substr(colon + 1);
  size_t want = 0;
  if (algorithm == "sha256")
    want = 64;
  else if (algorithm == "sha512")
    want = 128;
  else
    return BadDigest(text, "has an unsupported algorithm (sha256 and sha512 are supported)");
  if (hex.size() != want)
    return BadDigest(text, "must have " + std::to_string(want) + " hex digits after '" + std::string(algorithm) + ":'");
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return BadDigest(text, "must be lower-case hexadecimal after '" + std::string(algorithm) + ":'");
  }
  return Digest{std::string(algorithm), std::string(hex)};
}

DigestHasher::DigestHasher(std::string algorithm)
    : algorithm_(algorithm == "sha512" ? "sha512" : "sha256"), ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(ctx_, Md(algorithm_), nullptr);
}

DigestHasher::~DigestHasher() { EVP_MD_CTX_free(ctx_); }

DigestHasher::DigestHasher(DigestHasher&& o) noexcept
    : algorithm_(std::move(o.algorithm_)), ctx_(std::exchange(o.ctx_, nullptr)) {}

DigestHasher& DigestHasher::operator=(DigestHasher&& o) noexcept {
  if (this != &o) {
    EVP_MD_CTX_free(ctx_);
    algorithm_ = std::move(o.algorithm_);
    ctx_ = std::exchange(o.ctx_, nullptr);
  }
  return *this;
}

void DigestHasher::Update(std::span<const uint8_t> bytes) { EVP_DigestUpdate(ctx_, bytes.data(), bytes.size()); }

void DigestHasher::Update(std::string_view bytes) { EVP_DigestUpdate(ctx_, bytes.data(), bytes.size()); }

Digest DigestHasher::Finish() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_, md, &n);
  EVP_DigestInit_ex(ctx_, Md(algorithm_), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) {
    hex += kHex[md[i] >> 4];
    hex += kHex[md[i] & 15];
  }
  return Digest{algorithm_, std::move(hex)};
}

DigestVerifier::DigestVerifier(Digest expected, uint64_t size, std::string what)
    : expected_(std::move(expected)), size_(size), what_(std::move(what)), hasher_(expected_.algorithm) {}

std::string DigestVerifier::Name() const { return what_ + " " + expected_.Short() + "\u2026"; }

Status DigestVerifier::Update(std::string_view bytes) {
  received_ += bytes.size();
  if (received_ > size_)
    return Error::Of(Code::kInvalidArgument,
                     Name() + ": more bytes than its declared size of " + std::to_string(size_));
  hasher_.Update(bytes);
  return {};
}

Status DigestVerifier::Finish() {
  if (received_ != size_)
    return Error::Of(Code::kInvalidArgument, Name() + ": ended after " + std::to_string(received_) + " of its " +
                                                 std::to_string(size_) + " bytes");
  Digest got = hasher_.Finish();
  if (got != expected_) return Error::Of(Code::kInvalidArgument, Name() + ": digest mismatch (got " + got.str() + ")");
  return {};
}

Digest DigestOf(std::string_view bytes, std::string algorithm) {
  DigestHasher h(std::move(algorithm));
  h.Update(bytes);
  return h.Finish();
}

}  // namespace isb::image
