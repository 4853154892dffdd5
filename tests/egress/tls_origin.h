// A TLS origin on loopback for the interception tests: one certificate, one connection at a time on a thread of its
// own, each request read whole (head, then a Content-Length or chunked body, found without the proxy's parsers) and
// answered with what the test's responder says; it records the bytes of every request, per connection.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "egress/openssl_ptr.h"
#include "egress/sandbox_ca.h"

namespace isb::egress {

struct OriginReply {
  std::string bytes;
  bool close = false;   // close the connection after sending
  bool abrupt = false;  // with close: end the TCP connection without close_notify
};

class TlsOrigin {
 public:
  using Responder = std::function<OriginReply(const std::string& request)>;
  TlsOrigin(const TlsIdentity& identity, Responder respond);
  ~TlsOrigin();
  uint16_t port() const { return port_; }

  // One entry per accepted TCP connection: the requests it carried (none when TLS failed or nothing was asked).
  std::vector<std::vector<std::string>> Connections();
  // The server name each completed handshake asked for.
  std::vector<std::string> ServerNames();

 private:
  void Serve();
  void Handle(int fd);

  Responder respond_;
  SslCtxPtr ctx_;
  Fd listener_;
  Fd stop_;  // an eventfd
  uint16_t port_ = 0;
  std::mutex mu_;
  std::vector<std::vector<std::string>> connections_;
  std::vector<std::string> server_names_;
  std::thread thread_;
};

}  // namespace isb::egress
