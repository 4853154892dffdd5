// Owning pointers to OpenSSL objects, and the text of OpenSSL's last error.
#pragma once

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

namespace isb::egress {

template <typename T, void (*Free)(T*)>
struct OpenSslFree {
  void operator()(T* p) const { Free(p); }
};

using X509Ptr = std::unique_ptr<X509, OpenSslFree<X509, X509_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree<EVP_PKEY, EVP_PKEY_free>>;
using SslPtr = std::unique_ptr<SSL, OpenSslFree<SSL, SSL_free>>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, OpenSslFree<SSL_CTX, SSL_CTX_free>>;

// "what: <OpenSSL's reason>" from the thread's error queue, which it then clears.
inline std::string OpenSslError(const std::string& what) {
  unsigned long e = ERR_get_error();
  std::string out = what;
  if (e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += ": ";
    out += ERR_reason_error_string(e) != nullptr ? ERR_reason_error_string(e) : buf;
  }
  ERR_clear_error();
  return out;
}

}  // namespace isb::egress
