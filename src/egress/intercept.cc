// The intercepted connection runs as one coroutine: the sandbox's TLS, then the origin's, then requests one after
// another (HTTP/1.1 has one request in flight per connection), each checked, then relayed with its body by the
// message relay (message_relay.h) before its response is read and relayed the same way. A WebSocket handshake the
// origin accepts hands the connection to the WebSocket relay (websocket_relay.h) for good.
#include "egress/intercept.h"

#include <openssl/x509v3.h>

#include <cstring>

#include "egress/cert_minter.h"
#include "egress/http_body.h"
#include "egress/message_relay.h"
#include "egress/tls_channel.h"
#include "egress/websocket_relay.h"
#include "net/websocket_handshake.h"

namespace isb::egress {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// ALPN towards the sandbox: http/1.1 when offered; otherwise none, and the client speaks HTTP/1.1 anyway.
int SelectHttp11(SSL*, const unsigned char** out, unsigned char* out_size, const unsigned char* in,
                 unsigned int in_size, void*) {
  for (unsigned int i = 0; i < in_size;) {
    unsigned int n = in[i];
    if (i + 1 + n > in_size) break;
    if (n == 8 && std::memcmp(in + i + 1, "http/1.1", 8) == 0) {
      *out = in + i + 1;
      *out_size = 8;
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + n;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

// Why the origin's TLS failed: its certificate (the verifier's reason) or the handshake itself.
std::string UpstreamHandshakeFailure(SSL* ssl, const std::string& target, const Error& error) {
  long verified = SSL_get_verify_result(ssl);
  if (verified != X509_V_OK)
    return "cannot verify the TLS certificate of " + target + ": " + X509_verify_cert_error_string(verified);
  return "TLS with " + target + " failed: " + error.message;
}

// A TLS channel as the message relay reads and writes it; what is written is added to `written`, and to the
// sandbox's counter as it goes when there is one (a long download shows in the sandbox's usage before it ends).
class ChannelStream : public MessageStream {
 public:
  ChannelStream(TlsChannel& channel, uint64_t& written, std::atomic<uint64_t>* sandbox)
      : channel_(channel), written_(written), sandbox_(sandbox) {}

  asio::awaitable<Result<size_t>> ReadInto(std::string& buffer, size_t max) override {
    co_return co_await channel_.Read(buffer, max);
  }

  asio::awaitable<Status> Write(std::string_view bytes) override {
    Status sent = co_await channel_.Write(bytes);
    if (sent.ok()) {
      written_ += bytes.size();
      if (sandbox_ != nullptr) sandbox_->fetch_add(bytes.size(), std::memory_order_relaxed);
    }
    co_return sent;
  }

 private:
  TlsChannel& channel_;
  uint64_t& written_;
  std::atomic<uint64_t>* sandbox_;
};

// Both sides of one intercepted connection, and what each has sent past the message being relayed.
struct Session {
  TlsChannel& down;  // the sandbox
  TlsChannel& up;    // the origin
  const Exchange& exchange;
  MessageFilter& filter;
  Interceptor::Outcome& outcome;
  const RequestJudge& judge;  // empty: requests are not judged one by one
  std::string target;         // host:port, for messages
  std::chrono::milliseconds idle;
  SandboxBytes* traffic;  // null: the sandbox's bytes are not counted
  ChannelStream client{down, outcome.bytes_down, traffic ? &traffic->down : nullptr};  // written: towards the sandbox
  ChannelStream origin{up, outcome.bytes_up, traffic ? &traffic->up : nullptr};
  std::string from_client{};
  std::string from_origin{};
};

asio::awaitable<void> Answer(TlsChannel& down, int status, const std::string& reason) {
  std::string response = HttpDenyResponse(status, reason);
  (void)co_await down.Write(response);  // a client gone before its answer is closed all the same
  co_await down.Close();
}

asio::awaitable<Result<ResponseHead>> ReadResponseHead(Session& s) {
  for (int reads = 0;; ++reads) {
    ResponseHeadResult r = ParseResponseHead(s.from_origin);
    if (r.kind == ResponseHeadResult::kParsed) co_return r.head;
    if (r.kind == ResponseHeadResult::kMalformed)
      co_return Error::Of(Code::kUnavailable, "the response from " + s.target + " is refused: " + r.reason);
    if (reads == kMaxHeadReads)
      co_return Error::Of(Code::kUnavailable, "the response from " + s.target +
                                                  " is refused: its head came in "
                                                  "too many pieces");
    Result<size_t> more = co_await s.origin.ReadInto(s.from_origin, kRelayPiece);
    if (!more.ok())
      co_return Error::Of(more.error().code, "reading the response from " + s.target + ": " + more.error().message);
    if (*more == 0)
      co_return Error::Of(Code::kUnavailable, s.target + " closed the connection without a whole response head");
  }
}

// The response head at the start of from_origin (`head`, parsed), through the filter, then its body if it has one.
// `went`: how its body went out.
asio::awaitable<Status> RelayResponse(Session& s, const HttpHead& request, const ResponseHead& head, Reframe& went) {
  std::string bytes = s.from_origin.substr(0, head.size);
  s.from_origin.erase(0, head.size);
  PreparedMessage message = PrepareResponse(s.filter, s.exchange, request, std::move(bytes), head);
  went = message.out;
  co_return co_await RelayMessage(s.origin, s.client, s.from_origin, message);
}

// The origin's 101 to a WebSocket handshake `request`: checked against what was offered, relayed, then the
// connection's frames both ways until either side ends it.
asio::awaitable<void> RelayUpgraded(Session& s, const HttpHead& request, const ResponseHead& response) {
  Result<WebSocketSession> session = AcceptedWebSocket(request, response);
  if (!session.ok()) {
    s.outcome.failure = "the WebSocket answer from " + s.target + " is refused: " + session.error().message;
    co_await Answer(s.down, 502, s.outcome.failure);
    co_return;
  }
  Reframe went = Reframe::kAsSent;
  if (!(co_await RelayResponse(s, request, response, went)).ok()) co_return;
  s.outcome.failure = co_await RelayWebSocket(s.client, s.origin, std::move(s.from_client), std::move(s.from_origin),
                                              s.filter, s.exchange, *session, s.idle);
  co_await s.down.Close();
}

// Relays requests and their responses until either side ends the connection or a request is refused.
asio::awaitable<void> Relay(Session& s) {
  for (;;) {
    HeadResult request = ParseHttpHead(s.from_client);
    for (int reads = 0; request.kind == HeadResult::kNeedMore; ++reads) {
      if (reads == kMaxHeadReads) {
        request.kind = HeadResult::kMalformed;
        request.status = 400;
        request.reason = kTooManyPieces;
        break;
      }
      Result<size_t> more = co_await s.client.ReadInto(s.from_client, kRelayPiece);
      if (!more.ok() || *more == 0) co_return;  // the client has finished (or is gone) between requests
      request = ParseHttpHead(s.from_client);
    }
    if (request.kind != HeadResult::kParsed) {
      co_await Answer(s.down, request.status != 0 ? request.status : 400, request.reason);
      co_return;
    }
    const HttpHead& head = request.head;
    if (head.connect) {
      co_await Answer(s.down, 400, "CONNECT inside an intercepted TLS connection");
      co_return;
    }
    std::string misdirected = MisdirectedReason(head, s.exchange.host, s.exchange.port);
    if (!misdirected.empty()) {
      s.outcome.refusal = misdirected;
      co_await Answer(s.down, 421, misdirected);
      co_return;
    }
    if (std::string refusal = BodylessMethodRefusal(head); !refusal.empty()) {
      s.outcome.refusal = refusal;
      co_await Answer(s.down, 400, refusal);
      co_return;
    }
    if (s.judge) {
      std::string refusal = co_await s.judge(head);
      if (!refusal.empty()) {
        s.outcome.refusal = refusal;
        co_await Answer(s.down, 403, refusal);
        co_return;
      }
    }
    std::string head_bytes = s.from_client.substr(0, head.size);
    s.from_client.erase(0, head.size);
    // A WebSocket handshake goes on offering only the extensions whose frames the relay reads.
    const bool websocket = net::AsksForWebSocket(head);
    if (websocket) {
      head_bytes = ReadableWebSocketOffer(head_bytes, head);
      request = ParseHttpHead(head_bytes);
      if (request.kind != HeadResult::kParsed) {
        co_await Answer(s.down, 400, request.reason);
        co_return;
      }
    }
    PreparedMessage message = PrepareRequest(s.filter, s.exchange, std::move(head_bytes), head);
    if (!message.refusal.empty()) {
      s.outcome.refusal = message.refusal;
      co_await Answer(s.down, 403, message.refusal);
      co_return;
    }
    // The body follows at once, whatever Expect says: the client sends it after the origin's 100 or after its own
    // wait for one, and the origin's 100 reaches it as an interim response.
    const uint64_t before = s.outcome.bytes_up;
    Status sent = co_await RelayMessage(s.client, s.origin, s.from_client, message);
    if (!sent.ok() && sent.error().code == Code::kTooLarge) {
      s.outcome.failure = sent.error().message;
      co_await Answer(s.down, 413, s.outcome.failure);
      co_return;
    }
    if (!sent.ok() && sent.error().code == Code::kForbidden) {  // the filter refused the body: nothing more goes
      s.outcome.refusal = sent.error().message;
      co_await Answer(s.down, 403, s.outcome.refusal);
      co_return;
    }
    if (!sent.ok() && sent.error().code == Code::kInvalidArgument) {  // the body is malformed: the client's fault
      s.outcome.failure = sent.error().message;
      co_await Answer(s.down, 400, s.outcome.failure);
      co_return;
    }
    if (!sent.ok() && s.outcome.bytes_up == before) {
      s.outcome.failure = "sending the request to " + s.target + ": " + sent.error().message;
      co_await Answer(s.down, 502, s.outcome.failure);
      co_return;
    }
    if (!sent.ok()) co_return;
    ResponseHead response;
    for (;;) {
      Result<ResponseHead> next = co_await ReadResponseHead(s);
      if (!next.ok()) {
        s.outcome.failure = next.error().message;
        co_await Answer(s.down, 502, s.outcome.failure);
        co_return;
      }
      if (next->status >= 200 || next->status == 101) {
        response = std::move(*next);
        break;
      }
      Reframe none;
      Status interim = co_await RelayResponse(s, head, *next, none);
      if (!interim.ok()) co_return;
    }
    if (response.status == 101 && websocket) {
      co_await RelayUpgraded(s, head, response);
      co_return;
    }
    // Other upgrades (101) are not relayed by interception: the connection ends after the origin's answer.
    const BodyFraming response_body = ResponseBody(head.method, response);
    Reframe went = Reframe::kAsSent;
    const uint64_t answered = s.outcome.bytes_down;
    Status forwarded = co_await RelayResponse(s, head, response, went);
    // A response that failed before any of it went (its head waits for the body's first bytes) is answered with
    // why, as one whose head failed; one refused later is cut, and counted as refused all the same.
    if (!forwarded.ok() && s.outcome.bytes_down == answered) {
      s.outcome.failure = forwarded.error().code == Code::kForbidden
                              ? forwarded.error().message
                              : "the response from " + s.target + " failed: " + forwarded.error().message;
      co_await Answer(s.down, 502, s.outcome.failure);
      co_return;
    }
    if (!forwarded.ok() && forwarded.error().code == Code::kForbidden) s.outcome.failure = forwarded.error().message;
    if (!forwarded.ok() || response.status == 101) co_return;
    // A body that went without framing (one that came so, or a filtered one to an HTTP/1.0 client) ends with the
    // connection.
    if (response_body.kind == BodyFraming::kUntilClose || went == Reframe::kUntilClose ||
        !Persists(head.minor_version, head.headers) || !Persists(response.minor_version, response.headers)) {
      // A body that ended with the origin's connection is whole only if the origin said so with close_notify; a
      // bare end of the connection (which anyone on the path could cause) is passed on as one, never made whole.
      co_await s.down.Close(response_body.kind != BodyFraming::kUntilClose || s.up.ended_with_close_notify());
      co_return;
    }
  }
}

}  // namespace

std::string MisdirectedReason(const HttpHead& request, const std::string& server_name, uint16_t port) {
  if (request.host != server_name)
    return "the Host header (" + request.host + ") differs from the TLS server name (" + server_name + ")";
  if (request.port_explicit && request.port != port)
    return "the Host header's port (" + std::to_string(request.port) + ") differs from the connection's (" +
           std::to_string(port) + ")";
  return "";
}

Result<std::unique_ptr<Interceptor>> Interceptor::Create(InterceptOptions options) {
  if (!options.minter) return Error::Of(Code::kInvalidArgument, "interception needs a certificate minter");
  std::unique_ptr<Interceptor> self(new Interceptor(std::move(options)));
  self->server_ctx_.reset(SSL_CTX_new(TLS_server_method()));
  self->client_ctx_.reset(SSL_CTX_new(TLS_client_method()));
  SSL_CTX* server = self->server_ctx_.get();
  SSL_CTX* client = self->client_ctx_.get();
  if (server == nullptr || client == nullptr) return Error::Msg(OpenSslError("making the TLS contexts"));
  for (SSL_CTX* ctx : {server, client}) {
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  }
  SSL_CTX_set_alpn_select_cb(server, SelectHttp11, nullptr);
  static const unsigned char kAlpn[] = "\x08http/1.1";
  if (SSL_CTX_set_alpn_protos(client, kAlpn, sizeof kAlpn - 1) != 0)
    return Error::Msg(OpenSslError("setting ALPN for origins"));
  if (SSL_CTX_set_default_verify_paths(client) != 1) return Error::Msg(OpenSslError("loading the system's CA roots"));
  const std::string& file = self->options_.upstream_ca_file;
  if (!file.empty() && SSL_CTX_load_verify_locations(client, file.c_str(), nullptr) != 1)
    return Error::Of(Code::kInvalidArgument,
                     OpenSslError("--egress-ca " + file + ": cannot load it as PEM certificates"));
  SSL_CTX_set_verify(client, SSL_VERIFY_PEER, nullptr);
  return self;
}

asio::awaitable<Interceptor::Outcome> Interceptor::Run(tcp::socket& client, const std::string& hello,
                                                       const Exchange& exchange, Result<Fd>& upstream,
                                                       MessageFilter& filter, RequestJudge judge,
                                                       SandboxBytes* traffic) {
  Outcome out;
  const std::chrono::milliseconds idle(options_.idle_timeout_ms);
  Result<std::shared_ptr<const TlsIdentity>> leaf = options_.minter->Leaf(exchange.sandbox, exchange.host);
  if (!leaf.ok()) {
    out.failure = "minting a certificate for " + exchange.host + ": " + leaf.error().message;
    co_return out;
  }
  SslPtr down_ssl(SSL_new(server_ctx_.get()));
  if (!down_ssl || SSL_use_certificate(down_ssl.get(), (*leaf)->cert.get()) != 1 ||
      SSL_use_PrivateKey(down_ssl.get(), (*leaf)->key.get()) != 1) {
    out.failure = OpenSslError("setting up TLS towards the sandbox");
    co_return out;
  }
  SSL_set_accept_state(down_ssl.get());
  TlsChannel down(client, std::move(down_ssl), idle);
  down.Preload(hello);
  Status handshake = co_await down.Handshake();
  if (!handshake.ok()) co_return out;  // the client left, or does not trust the sandbox's CA: nothing to tell it
  co_await ToOrigin(down, exchange, upstream, filter, out, judge, traffic);
  co_return out;
}

asio::awaitable<void> Interceptor::ToOrigin(TlsChannel& down, const Exchange& exchange, Result<Fd>& upstream,
                                            MessageFilter& filter, Outcome& out, const RequestJudge& judge,
                                            SandboxBytes* traffic) {
  std::string target = exchange.host + ":" + std::to_string(exchange.port);
  if (!upstream.ok()) {
    out.failure = "cannot reach " + target + ": " + upstream.error().message;
    co_await Answer(down, 502, out.failure);
    co_return;
  }
  tcp::socket origin(down.socket().get_executor());
  boost::system::error_code ec;
  origin.assign(tcp::v4(), upstream->Release(), ec);
  if (ec) co_return;
  SslPtr up_ssl(SSL_new(client_ctx_.get()));
  if (!up_ssl || SSL_set_tlsext_host_name(up_ssl.get(), exchange.host.c_str()) != 1 ||
      SSL_set1_host(up_ssl.get(), exchange.host.c_str()) != 1) {
    out.failure = OpenSslError("setting up TLS towards " + target);
    co_await Answer(down, 502, out.failure);
    co_return;
  }
  SSL_set_hostflags(up_ssl.get(), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  SSL_set_connect_state(up_ssl.get());
  TlsChannel up(origin, std::move(up_ssl), std::chrono::milliseconds(options_.idle_timeout_ms));
  Status handshake = co_await up.Handshake();
  if (!handshake.ok()) {
    out.failure = UpstreamHandshakeFailure(up.ssl(), target, handshake.error());
    co_await Answer(down, 502, out.failure);
    co_return;
  }
  Session session{down,   up, exchange, filter, out, judge, target, std::chrono::milliseconds(options_.idle_timeout_ms),
                  traffic};
  co_await Relay(session);
}

}  // namespace isb::egress
