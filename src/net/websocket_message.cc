// Fragment order and close payloads per RFC 6455 sections 5.4, 5.5.1 and 7.4.
#include "net/websocket_message.h"

namespace isb::net {

WsRefusal WsMessageAssembler::Begin(const WsFrameHeader& header) {
  if (header.opcode == ws_opcode::kContinuation) {
    if (!in_message_) return {ws_close::kProtocolError, "a continuation frame came outside a message"};
    return {};
  }
  if (in_message_) return {ws_close::kProtocolError, "a new message began before the last one ended"};
  in_message_ = true;
  opcode_ = header.opcode;
  compressed_ = header.rsv1;
  size_ = 0;
  text_ = Utf8Stream();
  return {};
}

WsRefusal WsMessageAssembler::Content(std::string_view bytes) {
  size_ += bytes.size();
  if (size_ > max_message_)
    return {ws_close::kTooBig, "a message is longer than the limit of " + std::to_string(max_message_) + " bytes"};
  if (opcode_ == ws_opcode::kText && !text_.Take(bytes))
    return {ws_close::kInvalidData, "a text message is not valid UTF-8"};
  return {};
}

WsRefusal WsMessageAssembler::EndFrame(bool fin) {
  if (!fin) return {};
  in_message_ = false;
  if (opcode_ == ws_opcode::kText && !text_.Finish())
    return {ws_close::kInvalidData, "a text message is not valid UTF-8"};
  return {};
}

namespace {

bool SendableCloseCode(uint16_t code) {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

}  // namespace

Result<WsClose> ParseClosePayload(std::string_view payload) {
  WsClose close;
  if (payload.empty()) return close;
  if (payload.size() == 1) return Error::Of(Code::kInvalidArgument, "a close frame's payload is one byte long");
  close.code = static_cast<uint16_t>((static_cast<uint8_t>(payload[0]) << 8) | static_cast<uint8_t>(payload[1]));
  if (!SendableCloseCode(close.code))
    return Error::Of(Code::kInvalidArgument,
                     "a close frame has code " + std::to_string(close.code) + ", which no endpoint may send");
  close.reason = payload.substr(2);
  if (!IsUtf8(close.reason)) return Error::Of(Code::kInvalidArgument, "a close frame's reason is not valid UTF-8");
  return close;
}

std::string EncodeClosePayload(uint16_t code, std::string_view reason) {
  std::string out{static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)};
  size_t keep = std::min(reason.size(), kMaxControlPayload - 2);
  // Never cut inside a character: back up over continuation bytes.
  while (keep < reason.size() && keep > 0 && (static_cast<uint8_t>(reason[keep]) & 0xC0) == 0x80) --keep;
  out.append(reason.substr(0, keep));
  return out;
}

}  // namespace isb::net
