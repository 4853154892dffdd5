// Interception of a TLS connection to a name marked for it: the proxy ends the sandbox's TLS with a certificate
// minted from the sandbox's own CA (ALPN http/1.1 only), opens a verified TLS connection to the origin (system roots
// plus the daemon's --egress-ca bundle, the name checked, SNI set), and relays HTTP/1.1 request by request, each
// request's Host checked against the TLS server name, every message through the one message relay and its
// MessageFilter.
#pragma once

#include <boost/asio.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/fd.h"
#include "base/result.h"
#include "egress/message_filter.h"
#include "egress/openssl_ptr.h"
#include "egress/proxy.h"
#include "egress/sandbox_traffic.h"

namespace isb::egress {

class TlsChannel;

// Asked about each request on an intercepted connection to a judged name, before it goes on: the refusal (the
// client gets 403 with it), or "" to let it through.
using RequestJudge = std::function<boost::asio::awaitable<std::string>(const HttpHead&)>;

class Interceptor {
 public:
  // Errors: kInvalidArgument without a minter or when the upstream CA file cannot be loaded.
  static Result<std::unique_ptr<Interceptor>> Create(InterceptOptions options);

  struct Outcome {
    std::string refusal;  // non-empty: a request was refused by the rules (421), why in one line
    std::string failure;  // non-empty: the origin could not be reached or spoke wrongly (502), why in one line
    uint64_t bytes_up = 0, bytes_down = 0;  // application bytes forwarded each way
  };

  // Takes over `client` after its ClientHello (`hello`, the bytes already read) asked for `exchange.host`.
  // `upstream` is the TCP connection dialled to the origin, or why there is none (the client then gets a 502 once
  // its TLS is up). Returns when the connection is done; the caller closes the sockets.
  // With `judge`, each request is asked about before it goes on (a judged name: the judge sees every method and
  // path); without it, each is checked only for naming the connection's host.
  // Every message passes `filter`, which must outlive the call. What is forwarded each way is added to `traffic`
  // (the sandbox's counters) as it goes, when given, besides the Outcome's totals.
  boost::asio::awaitable<Outcome> Run(boost::asio::ip::tcp::socket& client, const std::string& hello,
                                      const Exchange& exchange, Result<Fd>& upstream, MessageFilter& filter,
                                      RequestJudge judge = {}, SandboxBytes* traffic = nullptr);

 private:
  explicit Interceptor(InterceptOptions options) : options_(std::move(options)) {}
  // After the sandbox's handshake: the origin's TLS, then the requests.
  boost::asio::awaitable<void> ToOrigin(TlsChannel& down, const Exchange& exchange, Result<Fd>& upstream,
                                        MessageFilter& filter, Outcome& out, const RequestJudge& judge,
                                        SandboxBytes* traffic);

  InterceptOptions options_;
  SslCtxPtr server_ctx_;  // towards the sandbox: our minted certificates
  SslCtxPtr client_ctx_;  // towards the origin: verified
};

// The 421 reason when a request's Host header names another origin than the TLS server name; empty when it agrees
// (same name, ASCII case-insensitive; a port, when written, equal to the connection's).
std::string MisdirectedReason(const HttpHead& request, const std::string& server_name, uint16_t port);

}  // namespace isb::egress
