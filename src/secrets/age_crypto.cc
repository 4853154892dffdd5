// OpenSSL calls behind age's primitives; every failure of the library itself is kInternal.
#include "secrets/age_crypto.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <memory>

namespace isb::secrets {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};
struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* p) const { EVP_CIPHER_CTX_free(p); }
};
struct KdfFree {
  void operator()(EVP_KDF* p) const { EVP_KDF_free(p); }
};
struct KdfCtxFree {
  void operator()(EVP_KDF_CTX* p) const { EVP_KDF_CTX_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

Error OpenSslError(std::string_view what) { return Error::Msg("openssl: " + std::string(what) + " failed"); }

const unsigned char* Bytes(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

}  // namespace

Status FillRandom(unsigned char* out, size_t size) {
  if (RAND_priv_bytes(out, static_cast<int>(size)) != 1) return OpenSslError("random bytes");
  return {};
}

Result<Key32> X25519Public(const Key32& private_key) {
  Pkey key(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, private_key.data(), Key32::size()));
  if (!key) return OpenSslError("X25519 private key");
  Key32 out;
  size_t len = Key32::size();
  if (EVP_PKEY_get_raw_public_key(key.get(), out.data(), &len) != 1 || len != Key32::size()) {
    return OpenSslError("X25519 public key");
  }
  return out;
}

Result<Key32> X25519Shared(const Key32& private_key, std::string_view peer) {
  if (peer.size() != Key32::size()) return Error::Of(Code::kInvalidArgument, "X25519 share is not 32 bytes");
  Pkey mine(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, private_key.data(), Key32::size()));
  Pkey theirs(EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, Bytes(peer), peer.size()));
  if (!mine || !theirs) return OpenSslError("X25519 keys");
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(EVP_PKEY_CTX_new(mine.get(), nullptr));
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1) return OpenSslError("X25519 derive");
  Key32 out;
  size_t len = Key32::size();
  // OpenSSL refuses a peer whose product is the all-zero point, as age requires.
  if (EVP_PKEY_derive_set_peer(ctx.get(), theirs.get()) != 1 || EVP_PKEY_derive(ctx.get(), out.data(), &len) != 1) {
    return Error::Of(Code::kInvalidArgument, "X25519 share is a low-order point");
  }
  static const Key32 kZero;
  if (len != Key32::size() || CRYPTO_memcmp(out.data(), kZero.data(), Key32::size()) == 0) {
    return Error::Of(Code::kInvalidArgument, "X25519 share is a low-order point");
  }
  return out;
}

Result<Key32> HkdfSha256(std::string_view ikm, std::string_view salt, std::string_view info) {
  std::unique_ptr<EVP_KDF, KdfFree> kdf(EVP_KDF_fetch(nullptr, "HKDF", nullptr));
  if (!kdf) return OpenSslError("HKDF fetch");
  std::unique_ptr<EVP_KDF_CTX, KdfCtxFree> ctx(EVP_KDF_CTX_new(kdf.get()));
  if (!ctx) return OpenSslError("HKDF context");
  char digest[] = "SHA256";
  OSSL_PARAM params[5];
  size_t n = 0;
  params[n++] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0);
  params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<char*>(ikm.data()), ikm.size());
  // An empty salt is HMAC's zero-length key, which RFC 5869 makes equal to HashLen zero bytes.
  if (!salt.empty()) {
    params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, const_cast<char*>(salt.data()), salt.size());
  }
  params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<char*>(info.data()), info.size());
  params[n] = OSSL_PARAM_construct_end();
  Key32 out;
  if (EVP_KDF_derive(ctx.get(), out.data(), Key32::size(), params) != 1) return OpenSslError("HKDF derive");
  return out;
}

Result<Key32> HmacSha256(std::string_view key, std::string_view data) {
  Key32 out;
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), Bytes(data), data.size(), out.data(), &len) ==
          nullptr ||
      len != Key32::size()) {
    return OpenSslError("HMAC-SHA-256");
  }
  return out;
}

Status AeadSeal(const Key32& key, std::string_view nonce, std::string_view plaintext, char* out) {
  std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree> ctx(EVP_CIPHER_CTX_new());
  auto* dst = reinterpret_cast<unsigned char*>(out);
  int len = 0, tail = 0;
  if (!ctx || nonce.size() != kAeadNonceSize ||
      EVP_EncryptInit_ex(ctx.get(), EVP_chacha20_poly1305(), nullptr, key.data(), Bytes(nonce)) != 1 ||
      EVP_EncryptUpdate(ctx.get(), dst, &len, Bytes(plaintext), static_cast<int>(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), dst + len, &tail) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, kAeadTagSize, dst + plaintext.size()) != 1) {
    return OpenSslError("ChaCha20-Poly1305 seal");
  }
  return {};
}

bool AeadOpen(const Key32& key, std::string_view nonce, std::string_view ciphertext, char* out) {
  if (ciphertext.size() < kAeadTagSize || nonce.size() != kAeadNonceSize) return false;
  const size_t size = ciphertext.size() - kAeadTagSize;
  std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree> ctx(EVP_CIPHER_CTX_new());
  auto* dst = reinterpret_cast<unsigned char*>(out);
  int len = 0, tail = 0;
  const bool ok = ctx &&
                  EVP_DecryptInit_ex(ctx.get(), EVP_chacha20_poly1305(), nullptr, key.data(), Bytes(nonce)) == 1 &&
                  EVP_DecryptUpdate(ctx.get(), dst, &len, Bytes(ciphertext), static_cast<int>(size)) == 1 &&
                  EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_TAG, kAeadTagSize,
                                      const_cast<char*>(ciphertext.data() + size)) == 1 &&
                  EVP_DecryptFinal_ex(ctx.get(), dst + len, &tail) == 1;
  if (!ok) OPENSSL_cleanse(out, size);
  return ok;
}

}  // namespace isb::secrets
