// One direction of an intercepted WebSocket, bytes in and bytes out: frames a filter does not want pass as they came
// (in any split), a filtered message is defragmented, decompressed, filtered and framed again, control frames pass
// between its fragments, and each breach of RFC 6455 is refused with its close code.
#include "egress/websocket_pump.h"

#include <gtest/gtest.h>

#include "egress/uppercase_filter.h"
#include "net/byte_string.h"

#include "net/permessage_deflate.h"

namespace isb::egress {
namespace {

using testing::Bytes;

const Exchange kExchange{"sb1", "ws.test", 443};

net::WsFrameHeader Header(uint8_t opcode, bool fin, bool masked, bool rsv1 = false) {
  net::WsFrameHeader h;
  h.opcode = opcode;
  h.fin = fin;
  h.masked = masked;
  h.rsv1 = rsv1;
  if (masked) h.mask = {0x11, 0x22, 0x33, 0x44};
  return h;
}

std::string ClientFrame(uint8_t opcode, std::string_view payload, bool fin = true, bool rsv1 = false) {
  return net::EncodeFrame(Header(opcode, fin, true, rsv1), payload);
}
std::string ServerFrame(uint8_t opcode, std::string_view payload, bool fin = true, bool rsv1 = false) {
  return net::EncodeFrame(Header(opcode, fin, false, rsv1), payload);
}

struct ReadFrame {
  net::WsFrameHeader header;
  std::string payload;
};

// The frames in `bytes` as a server reads them (masked, from the proxy towards the origin).
std::vector<ReadFrame> FramesToOrigin(std::string_view bytes, bool deflate = false) {
  net::WsFrameParser parser({net::WsSender::kClient, 1 << 24, deflate});
  std::vector<ReadFrame> out;
  std::string payload;
  while (!bytes.empty()) {
    net::WsFrameParser::Step step = parser.Feed(bytes, payload);
    EXPECT_EQ(step.state, net::WsFrameParser::State::kFrame) << step.reason;
    if (step.state != net::WsFrameParser::State::kFrame) break;
    out.push_back({parser.header(), payload});
    payload.clear();
    bytes.remove_prefix(step.used);
  }
  return out;
}

std::string Feed(WebSocketPump& pump, std::string_view bytes, size_t piece = SIZE_MAX) {
  std::string out;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    net::WsRefusal r = pump.Feed(bytes.substr(at, piece), out);
    EXPECT_TRUE(r.ok()) << r.reason;
  }
  return out;
}

TEST(WebSocketPumpTest, WithoutAFilterFramesPassByteForByteInAnySplit) {
  MessageFilter none;
  const std::string in = ClientFrame(net::ws_opcode::kText, "hello", false) + ClientFrame(net::ws_opcode::kPing, "p") +
                         ClientFrame(net::ws_opcode::kContinuation, " world") +
                         ClientFrame(net::ws_opcode::kBinary, std::string(70000, 'b'));
  for (size_t piece : {size_t{1}, size_t{3}, size_t{1000}, in.size()}) {
    WebSocketPump pump(none, kExchange, true, WebSocketSession{});
    EXPECT_EQ(Feed(pump, in, piece), in) << piece;
    EXPECT_TRUE(pump.at_frame_boundary());
  }
}

TEST(WebSocketPumpTest, AFilteredMessageFromTheOriginIsDefragmentedAndFramedAgainAfterThePingBetween) {
  UppercaseText filter;
  WebSocketPump pump(filter, kExchange, false, WebSocketSession{});
  const std::string in = ServerFrame(net::ws_opcode::kText, "hel", false) + ServerFrame(net::ws_opcode::kPing, "p") +
                         ServerFrame(net::ws_opcode::kContinuation, "lo") + ServerFrame(net::ws_opcode::kBinary, "bin");
  EXPECT_EQ(Feed(pump, in, 2), Bytes({0x89, 0x01, 'p'}) + Bytes({0x81, 0x05}) + "HELLO" + Bytes({0x82, 0x03}) + "bin");
  // The ping's payload is asked about as well (a control frame's payload passes the filter), as binary.
  EXPECT_EQ(filter.asked, (std::vector<std::string>{"down text", "down binary", "down binary"}));
}

TEST(WebSocketPumpTest, AFilteredMessageToTheOriginIsMaskedWithAFreshKey) {
  UppercaseText filter;
  WebSocketPump pump(filter, kExchange, true, WebSocketSession{});
  const std::string in = ClientFrame(net::ws_opcode::kText, "hello") + ClientFrame(net::ws_opcode::kText, "again");
  std::vector<ReadFrame> frames = FramesToOrigin(Feed(pump, in));
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].payload, "HELLO");
  EXPECT_EQ(frames[1].payload, "AGAIN");
  EXPECT_TRUE(frames[0].header.fin && frames[0].header.masked);
  EXPECT_EQ(frames[0].header.opcode, net::ws_opcode::kText);
  EXPECT_NE(frames[0].header.mask, (std::array<uint8_t, 4>{0x11, 0x22, 0x33, 0x44}));
  EXPECT_NE(frames[0].header.mask, frames[1].header.mask);
}

TEST(WebSocketPumpTest, ALongFilteredMessageGoesOutInFramesOfBoundedSize) {
  UppercaseText filter;
  WebSocketPump pump(filter, kExchange, false, WebSocketSession{});
  const std::string text(100000, 'x');
  std::string out = Feed(pump, ServerFrame(net::ws_opcode::kText, text), 4096);
  net::WsFrameParser parser({net::WsSender::kServer, 1 << 24, false});
  std::string all, payload;
  std::vector<uint64_t> lengths;
  for (std::string_view rest = out; !rest.empty();) {
    net::WsFrameParser::Step step = parser.Feed(rest, payload);
    ASSERT_EQ(step.state, net::WsFrameParser::State::kFrame);
    lengths.push_back(parser.header().length);
    EXPECT_EQ(parser.header().fin, rest.size() == step.used);
    EXPECT_EQ(parser.header().opcode, lengths.size() == 1 ? net::ws_opcode::kText : net::ws_opcode::kContinuation);
    rest.remove_prefix(step.used);
    all += payload;
    payload.clear();
  }
  EXPECT_EQ(all, std::string(100000, 'X'));
  for (uint64_t n : lengths) EXPECT_LE(n, kWebSocketOutFrame + 4096);
  EXPECT_GE(lengths.size(), 100000 / (kWebSocketOutFrame + 4096));
}

WebSocketSession Deflate() {
  WebSocketSession session;
  session.deflate = net::DeflateParams{};
  return session;
}

const std::string kHelloCompressed = Bytes({0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00});

TEST(WebSocketPumpTest, ACompressedMessageIsInflatedFilteredAndDeflatedAgain) {
  UppercaseText filter;
  WebSocketPump pump(filter, kExchange, false, Deflate());
  std::string out = Feed(pump, ServerFrame(net::ws_opcode::kText, kHelloCompressed, true, true), 3);
  net::WsDeflater expected(15, false);
  std::string hello;
  expected.Take("HELLO", hello);
  expected.Finish(hello);
  EXPECT_EQ(out, Bytes({0xC1, static_cast<int>(hello.size())}) + hello);
}

TEST(WebSocketPumpTest, ACompressedMessageNoFilterWantsComesOutAsItWentIn) {
  MessageFilter none;
  WebSocketPump pump(none, kExchange, false, Deflate());
  // The same bytes, from the proxy's own deflater: the second refers back to the first (context takeover).
  const std::string in = ServerFrame(net::ws_opcode::kText, kHelloCompressed, true, true) +
                         ServerFrame(net::ws_opcode::kText, Bytes({0xf2, 0x00, 0x11, 0x00, 0x00}), true, true);
  EXPECT_EQ(Feed(pump, in), in);
}

TEST(WebSocketPumpTest, AFragmentedCompressedMessageFromTheSandboxIsReadWhole) {
  UppercaseText filter;
  WebSocketPump pump(filter, kExchange, true, Deflate());
  const std::string in = ClientFrame(net::ws_opcode::kText, kHelloCompressed.substr(0, 4), false, true) +
                         ClientFrame(net::ws_opcode::kPong, "") +
                         ClientFrame(net::ws_opcode::kContinuation, kHelloCompressed.substr(4));
  std::vector<ReadFrame> frames = FramesToOrigin(Feed(pump, in), true);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].header.opcode, net::ws_opcode::kPong);
  EXPECT_TRUE(frames[1].header.rsv1);
  net::WsInflater inflater(false, 100);
  std::string text;
  ASSERT_TRUE(inflater.Take(frames[1].payload, text, 100).ok());
  ASSERT_TRUE(inflater.Finish(text, 100).value());
  EXPECT_EQ(text, "HELLO");
}

void ExpectRefused(WebSocketPump& pump, const std::string& in, uint16_t code, const std::string& reason,
                   const std::string& passed = "") {
  std::string out;
  net::WsRefusal r = pump.Feed(in, out);
  EXPECT_EQ(r.close_code, code);
  EXPECT_EQ(r.reason, reason);
  EXPECT_EQ(out, passed);
  std::string more;
  EXPECT_EQ(pump.Feed(ClientFrame(net::ws_opcode::kPing, ""), more).reason, reason);
  EXPECT_EQ(more, "");
}

TEST(WebSocketPumpTest, BreachesOfTheProtocolAreRefusedWithTheirCloseCodes) {
  MessageFilter none;
  UppercaseText filter;
  WebSocketPump unmasked(none, kExchange, true, WebSocketSession{});
  ExpectRefused(unmasked, ServerFrame(net::ws_opcode::kText, "x"), net::ws_close::kProtocolError,
                "a frame from the client is not masked");
  WebSocketPump stray(none, kExchange, true, WebSocketSession{});
  ExpectRefused(stray, ClientFrame(net::ws_opcode::kContinuation, "x"), net::ws_close::kProtocolError,
                "a continuation frame came outside a message");
  WebSocketPump bad_close(none, kExchange, true, WebSocketSession{});
  ExpectRefused(bad_close, ClientFrame(net::ws_opcode::kClose, "\x03\xED"), net::ws_close::kProtocolError,
                "a close frame has code 1005, which no endpoint may send");
  WebSocketPump after_close(none, kExchange, true, WebSocketSession{});
  const std::string close = ClientFrame(net::ws_opcode::kClose, "\x03\xE8");
  ExpectRefused(after_close, close + ClientFrame(net::ws_opcode::kText, "late"), net::ws_close::kProtocolError,
                "a frame came after the close frame", close);
  EXPECT_TRUE(after_close.closed());
  WebSocketPump not_utf8(filter, kExchange, true, WebSocketSession{});
  ExpectRefused(not_utf8, ClientFrame(net::ws_opcode::kText, "\xC0\x80"), net::ws_close::kInvalidData,
                "a text message is not valid UTF-8");
  WebSocketPump rsv1(none, kExchange, true, WebSocketSession{});
  ExpectRefused(rsv1, ClientFrame(net::ws_opcode::kText, "x", true, true), net::ws_close::kProtocolError,
                "a frame has RSV1 set but no extension was negotiated");
  WebSocketPump garbage(none, kExchange, false, Deflate());
  ExpectRefused(garbage, ServerFrame(net::ws_opcode::kBinary, "\xff\xff\xff", true, true), net::ws_close::kInvalidData,
                "a compressed message is not valid DEFLATE data");
}

TEST(WebSocketPumpTest, ARawFrameCutShortIsNotAFrameBoundary) {
  MessageFilter none;
  WebSocketPump pump(none, kExchange, false, WebSocketSession{});
  const std::string frame = ServerFrame(net::ws_opcode::kBinary, "0123456789");
  EXPECT_EQ(Feed(pump, frame.substr(0, 5)), frame.substr(0, 5));
  EXPECT_FALSE(pump.at_frame_boundary());
  EXPECT_EQ(Feed(pump, frame.substr(5)), frame.substr(5));
  EXPECT_TRUE(pump.at_frame_boundary());
  EXPECT_EQ(pump.CloseFrame(1002, "no"), Bytes({0x88, 0x04, 0x03, 0xEA, 'n', 'o'}));
}

}  // namespace
}  // namespace isb::egress
