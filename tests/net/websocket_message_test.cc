// Fragment order, message bounds, text checks and close payloads.
#include "net/websocket_message.h"

#include <gtest/gtest.h>

namespace isb::net {
namespace {

WsFrameHeader Frame(uint8_t opcode, bool fin, bool rsv1 = false) {
  WsFrameHeader h;
  h.opcode = opcode;
  h.fin = fin;
  h.rsv1 = rsv1;
  return h;
}

TEST(WebSocketMessageTest, AFragmentedMessageIsFollowedToItsEnd) {
  WsMessageAssembler messages(100);
  EXPECT_TRUE(messages.Begin(Frame(ws_opcode::kText, false, true)).ok());
  EXPECT_TRUE(messages.in_message());
  EXPECT_TRUE(messages.compressed());
  EXPECT_EQ(messages.opcode(), ws_opcode::kText);
  EXPECT_TRUE(messages.Content("Hel\xCE").ok());
  EXPECT_TRUE(messages.EndFrame(false).ok());
  EXPECT_TRUE(messages.Begin(Frame(ws_opcode::kContinuation, true)).ok());
  EXPECT_TRUE(messages.Content("\xBAlo").ok());
  EXPECT_EQ(messages.size(), 7u);
  EXPECT_TRUE(messages.EndFrame(true).ok());
  EXPECT_FALSE(messages.in_message());
}

TEST(WebSocketMessageTest, FramesOutOfOrderAreRefused) {
  WsMessageAssembler messages(100);
  WsRefusal stray = messages.Begin(Frame(ws_opcode::kContinuation, true));
  EXPECT_EQ(stray.close_code, ws_close::kProtocolError);
  EXPECT_EQ(stray.reason, "a continuation frame came outside a message");
  EXPECT_TRUE(messages.Begin(Frame(ws_opcode::kBinary, false)).ok());
  WsRefusal interleaved = messages.Begin(Frame(ws_opcode::kText, true));
  EXPECT_EQ(interleaved.close_code, ws_close::kProtocolError);
  EXPECT_EQ(interleaved.reason, "a new message began before the last one ended");
}

TEST(WebSocketMessageTest, AMessageOverTheLimitIsRefusedWith1009) {
  WsMessageAssembler messages(5);
  EXPECT_TRUE(messages.Begin(Frame(ws_opcode::kBinary, false)).ok());
  EXPECT_TRUE(messages.Content("12345").ok());
  WsRefusal big = messages.Content("6");
  EXPECT_EQ(big.close_code, ws_close::kTooBig);
  EXPECT_EQ(big.reason, "a message is longer than the limit of 5 bytes");
}

TEST(WebSocketMessageTest, TextThatIsNotUtf8IsRefusedWith1007AndBinaryIsNot) {
  WsMessageAssembler text(100);
  EXPECT_TRUE(text.Begin(Frame(ws_opcode::kText, true)).ok());
  WsRefusal bad = text.Content("\xC0\x80");
  EXPECT_EQ(bad.close_code, ws_close::kInvalidData);
  EXPECT_EQ(bad.reason, "a text message is not valid UTF-8");
  WsMessageAssembler cut(100);
  EXPECT_TRUE(cut.Begin(Frame(ws_opcode::kText, true)).ok());
  EXPECT_TRUE(cut.Content("\xCE").ok());
  EXPECT_EQ(cut.EndFrame(true).close_code, ws_close::kInvalidData);
  WsMessageAssembler binary(100);
  EXPECT_TRUE(binary.Begin(Frame(ws_opcode::kBinary, true)).ok());
  EXPECT_TRUE(binary.Content("\xC0\x80").ok());
  EXPECT_TRUE(binary.EndFrame(true).ok());
}

TEST(WebSocketMessageTest, ClosePayloadsAreReadAndChecked) {
  Result<WsClose> empty = ParseClosePayload("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->code, ws_close::kNoStatus);
  Result<WsClose> bye = ParseClosePayload(std::string("\x03\xE8", 2) + "bye");
  ASSERT_TRUE(bye.ok());
  EXPECT_EQ(bye->code, 1000);
  EXPECT_EQ(bye->reason, "bye");
  EXPECT_TRUE(ParseClosePayload("\x0B\xB8").ok());  // 3000
  EXPECT_EQ(ParseClosePayload("\x03").error().message, "a close frame's payload is one byte long");
  EXPECT_EQ(ParseClosePayload("\x03\xED").error().message, "a close frame has code 1005, which no endpoint may send");
  EXPECT_EQ(ParseClosePayload("\x03\xE7").error().message, "a close frame has code 999, which no endpoint may send");
  EXPECT_EQ(ParseClosePayload("\x13\x88").error().message, "a close frame has code 5000, which no endpoint may send");
  EXPECT_EQ(ParseClosePayload(std::string("\x03\xE8\xC0\x80", 4)).error().message,
            "a close frame's reason is not valid UTF-8");
}

TEST(WebSocketMessageTest, AnEncodedCloseReasonIsCutAtACharacterBoundary) {
  EXPECT_EQ(EncodeClosePayload(1001, "away"), std::string("\x03\xE9", 2) + "away");
  std::string reason = std::string(122, 'a') + "\xCE\xBA";  // the two-byte character would end at byte 126
  std::string payload = EncodeClosePayload(1000, reason);
  EXPECT_EQ(payload.size(), 124u);
  EXPECT_TRUE(ParseClosePayload(payload).ok());
}

}  // namespace
}  // namespace isb::net
