// Canonical encoding and SHA-256 link hash (OpenSSL EVP).
#include "audit/chain_encoding.h"

#include <openssl/evp.h>

#include <array>
#include <cstdlib>
#include <initializer_list>

namespace isb::audit {
namespace {

void PutU64(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void PutBytes(std::string& out, std::string_view s) {
  PutU64(out, s.size());
  out.append(s);
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is not canonical: a stored hash is always lower case
}

std::string ToHex(const unsigned char* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[p[i] >> 4]);
    out.push_back(kDigits[p[i] & 15]);
  }
  return out;
}

// SHA-256 over the concatenation of `parts`; aborts only if OpenSSL itself is broken.
std::string Sha256Of(std::initializer_list<std::string_view> parts) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1;
  for (std::string_view p : parts) ok = ok && EVP_DigestUpdate(ctx, p.data(), p.size()) == 1;
  ok = ok && EVP_DigestFinal_ex(ctx, md.data(), &len) == 1;
  EVP_MD_CTX_free(ctx);
  // Without SHA-256 no record can be written or checked; carrying on would write an unverifiable chain.
  if (!ok) std::abort();
  return ToHex(md.data(), len);
}

}  // namespace

std::string CanonicalEncoding(std::string_view domain, int64_t id, int64_t time_ms,
                              const std::vector<std::string>& fields) {
  size_t size = 24 + domain.size();
  for (const auto& f : fields) size += 8 + f.size();
  std::string out;
  out.reserve(size);
  PutBytes(out, domain);
  PutU64(out, static_cast<uint64_t>(id));
  PutU64(out, static_cast<uint64_t>(time_ms));
  for (const auto& f : fields) PutBytes(out, f);
  return out;
}

std::string LinkHash(std::string_view prev_hash_hex, std::string_view encoding) {
  if (prev_hash_hex.size() != 64) return "";
  std::string prev(32, '\0');
  for (size_t i = 0; i < 32; ++i) {
    int hi = HexDigit(prev_hash_hex[2 * i]), lo = HexDigit(prev_hash_hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return "";
    prev[i] = static_cast<char>(hi << 4 | lo);
  }
  return Sha256Of({prev, encoding});
}

std::string Sha256Hex(std::string_view data) { return Sha256Of({data}); }

}  // namespace isb::audit
