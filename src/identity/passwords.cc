// argon2id through libsodium's crypto_pwhash_str.
#include "identity/passwords.h"

#include <sodium.h>

#include <mutex>

namespace isb::identity {
namespace {

// Above libsodium's interactive level (2 passes, 64 MiB): 3 passes over 64 MiB, about 0.1 s on one core.
constexpr unsigned long long kOpsLimit = 3;
constexpr size_t kMemLimit = 64u << 20;

void InitSodium() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Fails only when the OS has no randomness for libsodium, and then nothing can be hashed safely.
    if (sodium_init() < 0) abort();
  });
}

const std::string& DummyHash() {
  static const std::string* hash = [] {
    InitSodium();
    unsigned char pw[32];
    randombytes_buf(pw, sizeof pw);
    char out[crypto_pwhash_STRBYTES];
    if (crypto_pwhash_str(out, reinterpret_cast<const char*>(pw), sizeof pw, kOpsLimit, kMemLimit) != 0) abort();
    sodium_memzero(pw, sizeof pw);
    return new std::string(out);
  }();
  return *hash;
}

}  // namespace

Status CheckPasswordPolicy(std::string_view password) {
  if (password.size() < kMinPasswordLength)
    return Error::Of(Code::kInvalidArgument,
                     "password: at least " + std::to_string(kMinPasswordLength) + " characters are needed");
  if (password.size() > kMaxPasswordLength)
    return Error::Of(Code::kInvalidArgument,
                     "password: at most " + std::to_string(kMaxPasswordLength) + " bytes are allowed");
  if (password.find('\0') != std::string_view::npos)
    return Error::Of(Code::kInvalidArgument, "password: NUL bytes are not allowed");
  return {};
}

Result<std::string> HashPassword(std::string_view password) {
  ISB_TRY(CheckPasswordPolicy(password));
  InitSodium();
  char out[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str(out, password.data(), password.size(), kOpsLimit, kMemLimit) != 0)
    return Error::Of(Code::kUnavailable, "password hashing ran out of memory; try again");
  return std::string(out);
}

bool VerifyPassword(std::string_view encoded, std::string_view password) {
  InitSodium();
  // crypto_pwhash_str_verify reads a NUL-terminated string; a hash that is not one of ours still costs a verification.
  std::string hash(encoded.substr(0, crypto_pwhash_STRBYTES));
  bool ours = !encoded.empty() && encoded.size() < crypto_pwhash_STRBYTES &&
              encoded.find('\0') == std::string_view::npos &&
              crypto_pwhash_str_needs_rehash(hash.c_str(), kOpsLimit, kMemLimit) != -1;
  if (!ours) hash = DummyHash();
  bool match = crypto_pwhash_str_verify(hash.c_str(), password.data(), password.size()) == 0;
  return ours && match;
}

bool VerifyDummy(std::string_view password) {
  (void)VerifyPassword("", password);
  return false;
}

void PreparePasswords() { (void)DummyHash(); }

bool NeedsRehash(std::string_view encoded) {
  InitSodium();
  std::string hash(encoded.substr(0, crypto_pwhash_STRBYTES));
  return crypto_pwhash_str_needs_rehash(hash.c_str(), kOpsLimit, kMemLimit) != 0;
}

}  // namespace isb::identity
