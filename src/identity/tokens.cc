// Minting, parsing and hashing bearer secrets.
#include "identity/tokens.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "base/random.h"

namespace isb::identity {
namespace {

constexpr std::array<std::string_view, 8> kPrefixes = {"isb_tok_", "isb_sa_",    "isb_sess_", "isb_inv_",
                                                       "isb_rst_", "isb_setup_", "isb_code_", "isb_rt_"};
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int Sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

std::string Base64Url(const unsigned char* data, size_t size) {
  std::string out;
  out.reserve((size * 4 + 2) / 3);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < size; ++i) {
    acc = (acc << 8) | data[i];
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  return out;
}

Error Malformed() { return Error::Of(Code::kUnauthenticated, "malformed token"); }

}  // namespace

std::string_view SecretPrefix(SecretKind kind) { return kPrefixes[static_cast<size_t>(kind)]; }

Result<std::string> NewSecret(SecretKind kind) {
  std::array<unsigned char, kSecretBytes> raw{};
  ISB_TRY(RandomBytes(raw.data(), raw.size()));
  std::string secret = std::string(SecretPrefix(kind)) + Base64Url(raw.data(), raw.size());
  OPENSSL_cleanse(raw.data(), raw.size());
  return secret;
}

Result<SecretKind> ParseSecret(std::string_view presented) {
  for (size_t k = 0; k < kPrefixes.size(); ++k) {
    if (!presented.starts_with(kPrefixes[k])) continue;
    std::string_view body = presented.substr(kPrefixes[k].size());
    if (body.size() != kSecretBodyChars) return Malformed();
    for (char c : body)
      if (Sextet(c) < 0) return Malformed();
    // 43 characters carry 258 bits: the last one's two low bits must be zero, so each secret has one spelling.
    if ((Sextet(body.back()) & 3) != 0) return Malformed();
    return static_cast<SecretKind>(k);
  }
  return Malformed();
}

std::string SecretHash(std::string_view secret) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), digest);
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof digest);
  for (unsigned char c : digest) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string PkceS256(std::string_view verifier) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(verifier.data()), verifier.size(), digest);
  return Base64Url(digest, sizeof digest);
}

bool HashesEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace isb::identity
