#include "tls_origin.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cctype>
#include <cstdlib>

namespace isb::egress {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The length of the first whole request in `bytes`, or 0 while it is incomplete.
size_t WholeRequest(const std::string& bytes) {
  size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string::npos) return 0;
  std::string head = Lower(bytes.substr(0, head_end + 4));
  if (head.find("\r\ntransfer-encoding: chunked\r\n") != std::string::npos) {
    size_t end = bytes.find("\r\n0\r\n\r\n", head_end + 2);
    return end == std::string::npos ? 0 : end + 7;
  }
  size_t length = head.find("\r\ncontent-length: ");
  size_t body = 0;
  if (length != std::string::npos) body = std::strtoull(head.c_str() + length + 18, nullptr, 10);
  return bytes.size() >= head_end + 4 + body ? head_end + 4 + body : 0;
}

}  // namespace

TlsOrigin::TlsOrigin(const TlsIdentity& identity, Responder respond) : respond_(std::move(respond)) {
  // OpenSSL writes with write(2): a client that left must not kill the test.
  ::signal(SIGPIPE, SIG_IGN);
  ctx_.reset(SSL_CTX_new(TLS_server_method()));
  SSL_CTX_use_certificate(ctx_.get(), identity.cert.get());
  SSL_CTX_use_PrivateKey(ctx_.get(), identity.key.get());
  listener_ = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::listen(listener_.get(), 16);
  socklen_t len = sizeof a;
  ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  stop_ = Fd(::eventfd(0, EFD_CLOEXEC));
  thread_ = std::thread([this] { Serve(); });
}

TlsOrigin::~TlsOrigin() {
  uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  thread_.join();
}

std::vector<std::vector<std::string>> TlsOrigin::Connections() {
  std::lock_guard lock(mu_);
  return connections_;
}

std::vector<std::string> TlsOrigin::ServerNames() {
  std::lock_guard lock(mu_);
  return server_names_;
}

void TlsOrigin::Serve() {
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    Fd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) continue;
    timeval tv{5, 0};
    ::setsockopt(conn.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    {
      std::lock_guard lock(mu_);
      connections_.emplace_back();
    }
    Handle(conn.get());
  }
}

void TlsOrigin::Handle(int fd) {
  SslPtr ssl(SSL_new(ctx_.get()));
  SSL_set_fd(ssl.get(), fd);
  if (SSL_accept(ssl.get()) != 1) return;
  {
    std::lock_guard lock(mu_);
    const char* name = SSL_get_servername(ssl.get(), TLSEXT_NAMETYPE_host_name);
    server_names_.push_back(name != nullptr ? name : "");
  }
  std::string in;
  char buf[16384];
  for (;;) {
    size_t whole = WholeRequest(in);
    if (whole == 0) {
      int n = SSL_read(ssl.get(), buf, sizeof buf);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
      continue;
    }
    std::string request = in.substr(0, whole);
    in.erase(0, whole);
    {
      std::lock_guard lock(mu_);
      connections_.back().push_back(request);
    }
    OriginReply reply = respond_(request);
    SSL_write(ssl.get(), reply.bytes.data(), static_cast<int>(reply.bytes.size()));
    if (reply.close && reply.abrupt) return;  // the caller closes the socket: no close_notify went out
    if (reply.close) break;
  }
  SSL_shutdown(ssl.get());
}

}  // namespace isb::egress
