// The WebSocket relay over real sockets on an event loop of its own: frames both ways through a filter, exact bytes
// out, the close handshake, a breach answered with close frames on both sides, and the idle rule; and the
// handshake's offer and answer checks.
#include "egress/websocket_relay.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "egress/uppercase_filter.h"
#include "net/byte_string.h"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <future>
#include <thread>

#include "base/fd.h"
#include "net/websocket_frame.h"

namespace isb::egress {
namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using Local = asio::local::stream_protocol::socket;

using testing::Bytes;

// A socket as the relay reads and writes it, silent past `idle` with kTimeout as the TLS channel is.
class LocalStream : public MessageStream {
 public:
  LocalStream(Local& socket, std::chrono::milliseconds idle)
      : socket_(socket), timer_(socket.get_executor()), idle_(idle) {}
  asio::awaitable<Result<size_t>> ReadInto(std::string& buffer, size_t max) override {
    const size_t had = buffer.size();
    buffer.resize(had + max);
    timer_.expires_after(idle_);
    constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);
    auto result =
        co_await (socket_.async_read_some(asio::buffer(buffer.data() + had, max), kAwait) || timer_.async_wait(kAwait));
    if (result.index() == 1) {
      buffer.resize(had);
      co_return Error::Of(Code::kTimeout, "nothing for too long");
    }
    auto [ec, n] = std::get<0>(result);
    buffer.resize(had + (ec ? 0 : n));
    if (ec == asio::error::eof) co_return size_t{0};
    if (ec) co_return Error::Of(Code::kUnavailable, ec.message());
    co_return n;
  }
  asio::awaitable<Status> Write(std::string_view bytes) override {
    auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(bytes.data(), bytes.size()),
                                              asio::as_tuple(asio::use_awaitable));
    if (ec) co_return Error::Of(Code::kUnavailable, ec.message());
    co_return Status();
  }

 private:
  Local& socket_;
  asio::steady_timer timer_;
  std::chrono::milliseconds idle_;
};

const Exchange kExchange{"sb1", "ws.test", 443};

// A relay between two socket pairs on its own thread: the test holds the sandbox's end and the origin's.
class Relay {
 public:
  explicit Relay(MessageFilter& filter, std::chrono::milliseconds idle = std::chrono::seconds(30))
      : client_(ctx_), origin_(ctx_) {
    int a[2], b[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
    sandbox = Fd(a[0]);
    origin = Fd(b[0]);
    client_.assign(asio::local::stream_protocol(), a[1]);
    origin_.assign(asio::local::stream_protocol(), b[1]);
    asio::co_spawn(ctx_, Run(filter, idle),
                   [this](std::exception_ptr, std::string failure) { ended_.set_value(std::move(failure)); });
    thread_ = std::thread([this] { ctx_.run(); });
  }
  ~Relay() {
    sandbox = Fd();
    origin = Fd();
    thread_.join();
  }
  // Why the relay stopped ("" for an end), once it has.
  std::string Ended() {
    if (ended_future_.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return "still running";
    return ended_future_.get();
  }

  Fd sandbox, origin;

 private:
  asio::awaitable<std::string> Run(MessageFilter& filter, std::chrono::milliseconds idle) {
    LocalStream to_client(client_, idle), to_origin(origin_, idle);
    std::string failure =
        co_await RelayWebSocket(to_client, to_origin, "", "", filter, kExchange, WebSocketSession{}, idle);
    client_.close();
    origin_.close();
    co_return failure;
  }

  asio::io_context ctx_;
  Local client_, origin_;
  std::promise<std::string> ended_;
  std::future<std::string> ended_future_ = ended_.get_future();
  std::thread thread_;
};

void Send(const Fd& fd, const std::string& bytes) {
  ASSERT_EQ(::write(fd.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
}

// Exactly `n` bytes (fewer when the peer closed or 5 s passed).
std::string Receive(const Fd& fd, size_t n) {
  std::string out;
  while (out.size() < n) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) break;
    char buffer[4096];
    ssize_t got = ::read(fd.get(), buffer, std::min(sizeof buffer, n - out.size()));
    if (got <= 0) break;
    out.append(buffer, static_cast<size_t>(got));
  }
  return out;
}

// One frame sent masked from the proxy to the origin: its payload unmasked, and whether it was masked.
struct ToOrigin {
  uint8_t opcode = 0;
  bool masked = false;
  std::string payload;
};
ToOrigin ReceiveAtOrigin(const Fd& fd) {
  ToOrigin out;
  std::string head = Receive(fd, 2);
  if (head.size() < 2) return out;
  const size_t length = static_cast<uint8_t>(head[1]) & 0x7F;  // the tests' frames are short
  std::string rest = Receive(fd, 4 + length);
  net::WsFrameParser parser({net::WsSender::kClient, 1 << 20, false});
  std::string payload;
  if (parser.Feed(head + rest, payload).state != net::WsFrameParser::State::kFrame) return out;
  return {parser.header().opcode, parser.header().masked, payload};
}

std::string ClientFrame(uint8_t opcode, std::string_view payload) {
  net::WsFrameHeader h;
  h.opcode = opcode;
  h.masked = true;
  h.mask = {9, 8, 7, 6};
  return net::EncodeFrame(h, payload);
}

TEST(WebSocketRelayTest, TextIsFilteredBothWaysAndTheCloseHandshakePasses) {
  UppercaseText filter;
  Relay relay(filter);
  Send(relay.sandbox, ClientFrame(net::ws_opcode::kText, "hello"));
  ToOrigin up = ReceiveAtOrigin(relay.origin);
  EXPECT_EQ(up.opcode, net::ws_opcode::kText);
  EXPECT_TRUE(up.masked);
  EXPECT_EQ(up.payload, "HELLO");
  Send(relay.origin, Bytes({0x81, 0x05}) + "world" + Bytes({0x82, 0x02, 0x00, 0xFF}));
  EXPECT_EQ(Receive(relay.sandbox, 11), Bytes({0x81, 0x05}) + "WORLD" + Bytes({0x82, 0x02, 0x00, 0xFF}));
  // The origin closes; the sandbox answers; the origin ends the connection.
  Send(relay.origin, Bytes({0x88, 0x05, 0x03, 0xE8}) + "bye");
  EXPECT_EQ(Receive(relay.sandbox, 7), Bytes({0x88, 0x05, 0x03, 0xE8}) + "bye");
  const std::string answer = ClientFrame(net::ws_opcode::kClose, "\x03\xE8");
  Send(relay.sandbox, answer);
  EXPECT_EQ(Receive(relay.origin, answer.size()), answer) << "a close frame passes as it came";
  ::shutdown(relay.origin.get(), SHUT_WR);
  EXPECT_EQ(relay.Ended(), "");
  EXPECT_EQ(Receive(relay.sandbox, 1), "") << "the sandbox's connection ends with the origin's";
}

TEST(WebSocketRelayTest, ABreachIsAnsweredWithACloseFrameOnBothSides) {
  UppercaseText filter;
  Relay relay(filter);
  Send(relay.sandbox, Bytes({0x81, 0x01, 'x'}));  // not masked
  const std::string reason = "a frame from the client is not masked";
  EXPECT_EQ(Receive(relay.sandbox, 4 + reason.size()),
            Bytes({0x88, static_cast<int>(2 + reason.size()), 0x03, 0xEA}) + reason);
  ToOrigin told = ReceiveAtOrigin(relay.origin);
  EXPECT_EQ(told.opcode, net::ws_opcode::kClose);
  EXPECT_TRUE(told.masked);
  EXPECT_EQ(told.payload, Bytes({0x03, 0xEA}) + reason);
  EXPECT_EQ(relay.Ended(), "WebSocket frames from the sandbox refused: " + reason);
}

TEST(WebSocketRelayTest, ASilentSandboxIsNotCutOffWhileTheOriginTalks) {
  MessageFilter none;
  Relay relay(none, std::chrono::milliseconds(300));
  for (int i = 0; i < 8; ++i) {
    Send(relay.origin, Bytes({0x81, 0x01, '0' + i}));
    EXPECT_EQ(Receive(relay.sandbox, 3), Bytes({0x81, 0x01, '0' + i}));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(relay.Ended(), "nothing for too long") << "both silent past the idle time";
}

egress::HttpHead Head(const std::string& text) {
  HeadResult r = ParseHttpHead(text);
  EXPECT_EQ(r.kind, HeadResult::kParsed) << r.reason;
  return r.head;
}

const std::string kHandshake =
    "GET /chat HTTP/1.1\r\nHost: ws.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";

TEST(WebSocketRelayTest, TheOfferKeepsOnlyThePermessageDeflateOffersTheRelayReads) {
  const std::string offered = kHandshake +
                              "Sec-WebSocket-Extensions: x-webkit-deflate-frame, permessage-deflate; "
                              "client_max_window_bits\r\nX-After: 1\r\n"
                              "sec-websocket-extensions: permessage-deflate; bogus, permessage-deflate\r\n\r\n";
  EXPECT_EQ(ReadableWebSocketOffer(offered, Head(offered)),
            kHandshake +
                "X-After: 1\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits, "
                "permessage-deflate\r\n\r\n");
  const std::string none = kHandshake + "Sec-WebSocket-Extensions: x-webkit-deflate-frame\r\n\r\n";
  EXPECT_EQ(ReadableWebSocketOffer(none, Head(none)), kHandshake + "\r\n");
  const std::string plain = kHandshake + "\r\n";
  EXPECT_EQ(ReadableWebSocketOffer(plain, Head(plain)), plain);
}

ResponseHead Answer(const std::string& fields) {
  ResponseHeadResult r = ParseResponseHead(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n" +
      fields + "\r\n");
  EXPECT_EQ(r.kind, ResponseHeadResult::kParsed) << r.reason;
  return r.head;
}

TEST(WebSocketRelayTest, TheOriginsAnswerSettlesPermessageDeflateWithinTheOffers) {
  const HttpHead offered =
      Head(kHandshake + "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n");
  Result<WebSocketSession> plain = AcceptedWebSocket(offered, Answer(""));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->deflate.has_value());
  Result<WebSocketSession> deflate =
      AcceptedWebSocket(offered, Answer("Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
                                        "client_max_window_bits=10\r\n"));
  ASSERT_TRUE(deflate.ok()) << deflate.error().message;
  ASSERT_TRUE(deflate->deflate.has_value());
  EXPECT_TRUE(deflate->deflate->server_no_context_takeover);
  EXPECT_EQ(deflate->deflate->client_window(), 10);
  EXPECT_EQ(AcceptedWebSocket(offered, Answer("Sec-WebSocket-Extensions: x-webkit-deflate-frame\r\n")).error().message,
            "the origin accepted extensions (x-webkit-deflate-frame) the proxy cannot relay: only "
            "permessage-deflate was offered");
  EXPECT_EQ(AcceptedWebSocket(Head(kHandshake + "\r\n"), Answer("Sec-WebSocket-Extensions: permessage-deflate\r\n"))
                .error()
                .message,
            "the origin accepted extensions (permessage-deflate) the proxy cannot relay: no offer was made");
  ResponseHeadResult wrong =
      ParseResponseHead("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
  EXPECT_EQ(AcceptedWebSocket(offered, wrong.head).error().message, "the Sec-WebSocket-Accept header is missing");
}

}  // namespace
}  // namespace isb::egress
