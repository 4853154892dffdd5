// The frame parser and encoder against RFC 6455's own examples (section 5.7), every split of the input, and each
// refusal with its close code and sentence.
#include "net/websocket_frame.h"

#include <gtest/gtest.h>

#include "net/byte_string.h"

namespace isb::net {
namespace {

using testing::Bytes;

// A masked "Hello" from a client (RFC 6455 section 5.7).
const std::string kMaskedHello = Bytes({0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58});
const std::string kHello = Bytes({0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f});

struct Parsed {
  WsFrameParser::Step step;
  std::string payload;
  WsFrameHeader header;
};

Parsed ParseAll(WsFrameParser::Options options, std::string_view bytes) {
  WsFrameParser parser(options);
  Parsed out;
  out.step = parser.Feed(bytes, out.payload);
  out.header = parser.header();
  return out;
}

WsFrameParser::Options From(WsSender sender, uint64_t max_frame = 1 << 20, bool rsv1 = false) {
  return WsFrameParser::Options{sender, max_frame, rsv1};
}

TEST(WebSocketFrameTest, AMaskedTextFrameFromAClientIsUnmasked) {
  Parsed p = ParseAll(From(WsSender::kClient), kMaskedHello + "next");
  EXPECT_EQ(p.step.state, WsFrameParser::State::kFrame);
  EXPECT_EQ(p.step.used, kMaskedHello.size());
  EXPECT_EQ(p.payload, "Hello");
  EXPECT_TRUE(p.header.fin);
  EXPECT_TRUE(p.header.masked);
  EXPECT_EQ(p.header.opcode, ws_opcode::kText);
  EXPECT_EQ(p.header.mask, (std::array<uint8_t, 4>{0x37, 0xfa, 0x21, 0x3d}));
}

TEST(WebSocketFrameTest, EverySplitOfAFrameGivesTheSamePayload) {
  for (size_t cut = 0; cut <= kMaskedHello.size(); ++cut) {
    WsFrameParser parser(From(WsSender::kClient));
    std::string payload;
    WsFrameParser::Step first = parser.Feed(std::string_view(kMaskedHello).substr(0, cut), payload);
    EXPECT_EQ(first.used, cut);
    if (cut < kMaskedHello.size()) {
      EXPECT_EQ(first.state, WsFrameParser::State::kMore);
      WsFrameParser::Step second = parser.Feed(std::string_view(kMaskedHello).substr(cut), payload);
      EXPECT_EQ(second.state, WsFrameParser::State::kFrame) << cut;
      EXPECT_EQ(second.used, kMaskedHello.size() - cut);
    }
    EXPECT_EQ(payload, "Hello") << cut;
  }
}

TEST(WebSocketFrameTest, ByteByByteTheHeaderIsKnownBeforeThePayload) {
  WsFrameParser parser(From(WsSender::kServer));
  std::string payload;
  for (size_t i = 0; i < kHello.size(); ++i) {
    WsFrameParser::Step step = parser.Feed(std::string_view(kHello).substr(i, 1), payload);
    EXPECT_EQ(step.used, 1u);
    EXPECT_EQ(step.state, i + 1 == kHello.size() ? WsFrameParser::State::kFrame : WsFrameParser::State::kMore);
    if (i == 1) {
      EXPECT_TRUE(parser.has_header());
      EXPECT_EQ(parser.payload_remaining(), 5u);
    }
  }
  EXPECT_EQ(payload, "Hello");
}

TEST(WebSocketFrameTest, FragmentsAndPingFromTheRfcParseAsTheyAre) {
  WsFrameParser parser(From(WsSender::kServer));
  std::string payload;
  const std::string bytes = Bytes({0x01, 0x03, 0x48, 0x65, 0x6c, 0x89, 0x00, 0x80, 0x02, 0x6c, 0x6f});
  WsFrameParser::Step a = parser.Feed(bytes, payload);
  EXPECT_EQ(a.used, 5u);
  EXPECT_FALSE(parser.header().fin);
  EXPECT_EQ(parser.header().opcode, ws_opcode::kText);
  WsFrameParser::Step b = parser.Feed(std::string_view(bytes).substr(5), payload);
  EXPECT_EQ(b.used, 2u);
  EXPECT_EQ(parser.header().opcode, ws_opcode::kPing);
  WsFrameParser::Step c = parser.Feed(std::string_view(bytes).substr(7), payload);
  EXPECT_EQ(c.state, WsFrameParser::State::kFrame);
  EXPECT_EQ(parser.header().opcode, ws_opcode::kContinuation);
  EXPECT_EQ(payload, "Hello");
}

TEST(WebSocketFrameTest, SixteenAndSixtyFourBitLengthsAreRead) {
  Parsed p16 = ParseAll(From(WsSender::kServer), Bytes({0x82, 0x7E, 0x01, 0x00}) + std::string(256, 'x'));
  EXPECT_EQ(p16.step.state, WsFrameParser::State::kFrame);
  EXPECT_EQ(p16.header.length, 256u);
  Parsed p64 = ParseAll(From(WsSender::kServer), Bytes({0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0}) + std::string(65536, 'y'));
  EXPECT_EQ(p64.step.state, WsFrameParser::State::kFrame);
  EXPECT_EQ(p64.payload, std::string(65536, 'y'));
}

TEST(WebSocketFrameTest, ALengthLongerThanItNeedsBeIsAllowed) {
  Parsed p = ParseAll(From(WsSender::kServer), Bytes({0x81, 0x7E, 0x00, 0x05}) + "Hello");
  EXPECT_EQ(p.step.state, WsFrameParser::State::kFrame);
  EXPECT_EQ(p.payload, "Hello");
  Parsed p64 = ParseAll(From(WsSender::kServer), Bytes({0x81, 0x7F, 0, 0, 0, 0, 0, 0, 0, 5}) + "Hello");
  EXPECT_EQ(p64.payload, "Hello");
}

void ExpectRefused(WsFrameParser::Options options, const std::string& bytes, uint16_t code, const std::string& reason) {
  WsFrameParser parser(options);
  std::string payload;
  WsFrameParser::Step step = parser.Feed(bytes, payload);
  EXPECT_EQ(step.state, WsFrameParser::State::kError);
  EXPECT_EQ(step.close_code, code);
  EXPECT_EQ(step.reason, reason);
  EXPECT_EQ(payload, "");
  WsFrameParser::Step again = parser.Feed("more", payload);
  EXPECT_EQ(again.state, WsFrameParser::State::kError);
  EXPECT_EQ(again.used, 0u);
  EXPECT_EQ(again.reason, reason);
}

TEST(WebSocketFrameTest, AnUnmaskedFrameFromAClientIsRefused) {
  ExpectRefused(From(WsSender::kClient), kHello, ws_close::kProtocolError, "a frame from the client is not masked");
}

TEST(WebSocketFrameTest, AMaskedFrameFromAServerIsRefused) {
  ExpectRefused(From(WsSender::kServer), kMaskedHello, ws_close::kProtocolError, "a frame from the server is masked");
}

TEST(WebSocketFrameTest, ReservedBitsWithoutAnExtensionAreRefused) {
  ExpectRefused(From(WsSender::kServer), Bytes({0xC1, 0x00}), ws_close::kProtocolError,
                "a frame has RSV1 set but no extension was negotiated");
  ExpectRefused(From(WsSender::kServer, 1 << 20, true), Bytes({0xA1, 0x00}), ws_close::kProtocolError,
                "a frame has RSV2 or RSV3 set");
  ExpectRefused(From(WsSender::kServer, 1 << 20, true), Bytes({0x91, 0x00}), ws_close::kProtocolError,
                "a frame has RSV2 or RSV3 set");
  ExpectRefused(From(WsSender::kServer, 1 << 20, true), Bytes({0xC0, 0x00}), ws_close::kProtocolError,
                "RSV1 is set on a control or continuation frame");
  Parsed allowed = ParseAll(From(WsSender::kServer, 1 << 20, true), Bytes({0xC1, 0x01, 0x00}));
  EXPECT_EQ(allowed.step.state, WsFrameParser::State::kFrame);
  EXPECT_TRUE(allowed.header.rsv1);
}

TEST(WebSocketFrameTest, UnknownOpcodesAreRefused) {
  ExpectRefused(From(WsSender::kServer), Bytes({0x83, 0x00}), ws_close::kProtocolError,
                "a frame has an unknown opcode (3)");
  ExpectRefused(From(WsSender::kServer), Bytes({0x8B, 0x00}), ws_close::kProtocolError,
                "a frame has an unknown opcode (11)");
}

TEST(WebSocketFrameTest, LongOrFragmentedControlFramesAreRefused) {
  ExpectRefused(From(WsSender::kServer), Bytes({0x89, 0x7E, 0x00, 0x7E}), ws_close::kProtocolError,
                "a control frame's payload is longer than 125 bytes");
  ExpectRefused(From(WsSender::kServer), Bytes({0x09, 0x00}), ws_close::kProtocolError,
                "a control frame is fragmented");
  Parsed longest = ParseAll(From(WsSender::kServer), Bytes({0x89, 0x7D}) + std::string(125, 'p'));
  EXPECT_EQ(longest.step.state, WsFrameParser::State::kFrame);
}

TEST(WebSocketFrameTest, ASixtyFourBitLengthWithItsHighBitIsRefused) {
  ExpectRefused(From(WsSender::kServer, UINT64_MAX), Bytes({0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 1}),
                ws_close::kProtocolError, "a frame's 64-bit length has its most significant bit set");
}

TEST(WebSocketFrameTest, AFrameOverTheLimitIsRefusedBeforeItsPayload) {
  ExpectRefused(From(WsSender::kServer, 255), Bytes({0x82, 0x7E, 0x01, 0x00}), ws_close::kTooBig,
                "a frame's payload (256 bytes) is longer than the limit of 255");
}

TEST(WebSocketFrameTest, TheEncoderWritesTheRfcExamples) {
  EXPECT_EQ(EncodeFrame(WsFrameHeader{}, "Hello"), kHello);
  WsFrameHeader masked{true, false, ws_opcode::kText, true, {0x37, 0xfa, 0x21, 0x3d}, 0};
  EXPECT_EQ(EncodeFrame(masked, "Hello"), kMaskedHello);
  WsFrameHeader first{false, false, ws_opcode::kText, false, {}, 0};
  EXPECT_EQ(EncodeFrame(first, "Hel"), Bytes({0x01, 0x03, 0x48, 0x65, 0x6c}));
}

TEST(WebSocketFrameTest, TheEncoderUsesTheShortestLength) {
  WsFrameHeader binary{true, false, ws_opcode::kBinary, false, {}, 125};
  EXPECT_EQ(EncodeFrameHeader(binary), Bytes({0x82, 0x7D}));
  binary.length = 126;
  EXPECT_EQ(EncodeFrameHeader(binary), Bytes({0x82, 0x7E, 0x00, 0x7E}));
  binary.length = 65535;
  EXPECT_EQ(EncodeFrameHeader(binary), Bytes({0x82, 0x7E, 0xFF, 0xFF}));
  binary.length = 65536;
  EXPECT_EQ(EncodeFrameHeader(binary), Bytes({0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0}));
  WsFrameHeader compressed{true, true, ws_opcode::kText, false, {}, 0};
  EXPECT_EQ(EncodeFrameHeader(compressed), Bytes({0xC1, 0x00}));
}

TEST(WebSocketFrameTest, MaskingAtAnOffsetContinuesTheKey) {
  std::string whole = "Hello, world";
  std::string split = whole;
  const std::array<uint8_t, 4> key{1, 2, 3, 4};
  MaskPayload(key, 0, whole.data(), whole.size());
  MaskPayload(key, 0, split.data(), 5);
  MaskPayload(key, 5, split.data() + 5, split.size() - 5);
  EXPECT_EQ(split, whole);
  MaskPayload(key, 0, whole.data(), whole.size());
  EXPECT_EQ(whole, "Hello, world");
}

}  // namespace
}  // namespace isb::net
