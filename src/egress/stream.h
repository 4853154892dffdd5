// A connected socket as a byte stream with deadlines, plain or TLS (OpenSSL, the server verified against the system
// roots and an optional extra CA file): what the daemon's own HTTP clients talk over.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "base/fd.h"
#include "base/result.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace isb::egress {

using Deadline = std::chrono::steady_clock::time_point;

// What TLS clients verify servers against. Immutable once made; shared by any number of threads.
class TlsTrust {
 public:
  // The system's roots, plus the PEM certificates in `extra_ca_file` when it is not empty.
  // Errors (kInvalidArgument): the file cannot be read or holds no certificate.
  static Result<std::shared_ptr<const TlsTrust>> Create(const std::string& extra_ca_file);
  ~TlsTrust();
  TlsTrust(const TlsTrust&) = delete;
  TlsTrust& operator=(const TlsTrust&) = delete;
  SSL_CTX* ctx() const { return ctx_; }

 private:
  explicit TlsTrust(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// Every operation waits at most until its deadline (kTimeout after it). Move-only; closes the socket.
class Stream {
 public:
  // Takes a connected TCP socket (made non-blocking here).
  static Result<Stream> Plain(Fd fd);
  // Plain, then a TLS handshake for `host` (SNI, and the name the certificate must carry). Errors
  // (kUnavailable) say why the handshake failed, with the verification error when the certificate was refused.
  static Result<Stream> Tls(Fd fd, const TlsTrust& trust, const std::string& host, Deadline deadline);

  Stream(Stream&& o) noexcept;
  Stream& operator=(Stream&& o) noexcept;
  ~Stream();

  Status WriteAll(std::string_view bytes, Deadline deadline);
  // Up to `size` bytes into `buffer`; 0 at the end of the stream.
  Result<size_t> Read(char* buffer, size_t size, Deadline deadline);

 private:
  explicit Stream(Fd fd) : fd_(std::move(fd)) {}
  // Waits for the TLS engine's want (SSL_ERROR_WANT_READ/WRITE) or fails with what went wrong.
  Status TlsWait(int ssl_error, Deadline deadline, const char* doing);

  Fd fd_;
  SSL* ssl_ = nullptr;
};

}  // namespace isb::egress
