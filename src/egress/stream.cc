#include "egress/stream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace isb::egress {
namespace {

Error TimedOut(const char* doing) { return Error::Of(Code::kTimeout, std::string(doing) + " timed out"); }

// Waits until `fd` is ready for `events` or the deadline passes (then false).
Result<bool> WaitFd(int fd, short events, Deadline deadline) {
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::Sys("poll");
    if (n > 0) return true;
  }
}

// The oldest error OpenSSL queued on this thread, as text; the queue is emptied.
std::string OpensslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "the connection ended";
  char text[256];
  ERR_error_string_n(e, text, sizeof text);
  return text;
}

bool IsAddressLiteral(const std::string& host) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

Result<std::shared_ptr<const TlsTrust>> TlsTrust::Create(const std::string& extra_ca_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return Error::Of(Code::kInternal, "TLS: " + OpensslError());
  std::shared_ptr<const TlsTrust> trust(new TlsTrust(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  // A server that closes without close_notify ends the stream; the HTTP framing says whether the body was whole.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  // Without system roots only the extra file can vouch for a server: that is for the caller's configuration to say.
  (void)SSL_CTX_set_default_verify_paths(ctx);
  ERR_clear_error();
  if (!extra_ca_file.empty() && SSL_CTX_load_verify_locations(ctx, extra_ca_file.c_str(), nullptr) != 1) {
    return Error::Of(Code::kInvalidArgument,
                     "TLS: cannot load CA certificates from " + extra_ca_file + ": " + OpensslError());
  }
  return trust;
}

TlsTrust::~TlsTrust() { SSL_CTX_free(ctx_); }

Result<Stream> Stream::Plain(Fd fd) {
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) return Error::Sys("fcntl");
  return Stream(std::move(fd));
}

Result<Stream> Stream::Tls(Fd fd, const TlsTrust& trust, const std::string& host, Deadline deadline) {
  ISB_ASSIGN_OR_RETURN(Stream s, Plain(std::move(fd)));
  ERR_clear_error();
  s.ssl_ = SSL_new(trust.ctx());
  if (s.ssl_ == nullptr || SSL_set_fd(s.ssl_, s.fd_.get()) != 1)
    return Error::Of(Code::kInternal, "TLS: " + OpensslError());
  X509_VERIFY_PARAM* param = SSL_get0_param(s.ssl_);
  bool named = IsAddressLiteral(host)
                   ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1
                   : SSL_set_tlsext_host_name(s.ssl_, host.c_str()) == 1 && SSL_set1_host(s.ssl_, host.c_str()) == 1;
  if (!named) return Error::Of(Code::kInvalidArgument, "TLS: cannot verify a server named '" + host + "'");
  for (;;) {
    ERR_clear_error();
    int rc = SSL_connect(s.ssl_);
    if (rc == 1) return s;
    int err = SSL_get_error(s.ssl_, rc);
    long verify = SSL_get_verify_result(s.ssl_);
    if (verify != X509_V_OK) {
      ERR_clear_error();
      return Error::Of(Code::kUnavailable,
                       "TLS: the certificate of " + host + " was refused: " + X509_verify_cert_error_string(verify));
    }
    ISB_TRY(s.TlsWait(err, deadline, "the TLS handshake"));
  }
}

Stream::Stream(Stream&& o) noexcept : fd_(std::move(o.fd_)), ssl_(std::exchange(o.ssl_, nullptr)) {}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (ssl_ != nullptr) SSL_free(ssl_);
    ssl_ = std::exchange(o.ssl_, nullptr);
    fd_ = std::move(o.fd_);
  }
  return *this;
}

Stream::~Stream() {
  if (ssl_ != nullptr) SSL_free(ssl_);
}

Status Stream::TlsWait(int ssl_error, Deadline deadline, const char* doing) {
  short events = 0;
  if (ssl_error == SSL_ERROR_WANT_READ) events = POLLIN;
  if (ssl_error == SSL_ERROR_WANT_WRITE) events = POLLOUT;
  if (events == 0) {
    int saved = errno;
    std::string why = ssl_error == SSL_ERROR_SYSCALL && saved != 0 ? std::strerror(saved) : OpensslError();
    return Error::Of(Code::kUnavailable, std::string("TLS: ") + doing + " failed: " + why);
  }
  ISB_ASSIGN_OR_RETURN(bool ready, WaitFd(fd_.get(), events, deadline));
  if (!ready) return TimedOut(doing);
  return {};
}

Status Stream::WriteAll(std::string_view bytes, Deadline deadline) {
  while (!bytes.empty()) {
    if (ssl_ != nullptr) {
      ERR_clear_error();
      size_t n = 0;
      int rc = SSL_write_ex(ssl_, bytes.data(), bytes.size(), &n);
      if (rc == 1) {
        bytes.remove_prefix(n);
        continue;
      }
      ISB_TRY(TlsWait(SSL_get_error(ssl_, rc), deadline, "sending"));
      continue;
    }
    ssize_t n = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n >= 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return Error{std::string("sending: ") + std::strerror(errno), errno, Code::kUnavailable};
    ISB_ASSIGN_OR_RETURN(bool ready, WaitFd(fd_.get(), POLLOUT, deadline));
    if (!ready) return TimedOut("sending");
  }
  return {};
}

Result<size_t> Stream::Read(char* buffer, size_t size, Deadline deadline) {
  for (;;) {
    if (ssl_ != nullptr) {
      ERR_clear_error();
      size_t n = 0;
      int rc = SSL_read_ex(ssl_, buffer, size, &n);
      if (rc == 1) return n;
      int err = SSL_get_error(ssl_, rc);
      if (err == SSL_ERROR_ZERO_RETURN) return size_t{0};
      // With SSL_OP_IGNORE_UNEXPECTED_EOF a close without close_notify reads as SSL_ERROR_ZERO_RETURN too.
      ISB_TRY(TlsWait(err, deadline, "receiving"));
      continue;
    }
    ssize_t n = ::recv(fd_.get(), buffer, size, 0);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return Error{std::string("receiving: ") + std::strerror(errno), errno, Code::kUnavailable};
    ISB_ASSIGN_OR_RETURN(bool ready, WaitFd(fd_.get(), POLLIN, deadline));
    if (!ready) return TimedOut("receiving");
  }
}

}  // namespace isb::egress
