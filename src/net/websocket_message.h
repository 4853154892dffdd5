// RFC 6455 messages over frames: the order fragments must come in (control frames may come between them), a
// message's size bound and its text checked as UTF-8, and the close frame's payload (code and reason).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "net/utf8_stream.h"
#include "net/websocket_frame.h"

namespace isb::net {

// Why a peer's frames are refused: the close code to answer with and one sentence.
struct WsRefusal {
  uint16_t close_code = 0;  // 0: not refused
  std::string reason;
  bool ok() const { return close_code == 0; }
};

// Follows the data frames of one direction of a connection, message by message.
class WsMessageAssembler {
 public:
  // `max_message`: the longest message content taken (after decompression when the caller decompresses).
  explicit WsMessageAssembler(uint64_t max_message) : max_message_(max_message) {}

  // A data frame's header (control frames are not given here): a continuation only inside a message, a text or
  // binary frame only outside one. Starts a message on its first frame.
  WsRefusal Begin(const WsFrameHeader& header);
  // The current message's next content bytes: counted against the bound, and checked as UTF-8 in a text message.
  WsRefusal Content(std::string_view bytes);
  // The current data frame has ended (`fin` as its header said): with fin, the message ends, its text whole.
  WsRefusal EndFrame(bool fin);

  bool in_message() const { return in_message_; }
  uint8_t opcode() const { return opcode_; }       // the current message's: text or binary
  bool compressed() const { return compressed_; }  // its first frame had RSV1
  uint64_t size() const { return size_; }          // its content so far

 private:
  uint64_t max_message_;
  bool in_message_ = false;
  uint8_t opcode_ = 0;
  bool compressed_ = false;
  uint64_t size_ = 0;
  Utf8Stream text_;
};

struct WsClose {
  uint16_t code = ws_close::kNoStatus;  // kNoStatus: the payload was empty
  std::string reason;
};
// A close frame's payload: empty, or a code an endpoint may send (1000-1003, 1007-1014, 3000-4999) and a UTF-8
// reason. Refusals are kInvalidArgument naming what was wrong.
Result<WsClose> ParseClosePayload(std::string_view payload);
// The payload of a close frame with `code` and `reason` (cut to fit 125 bytes at a character boundary).
std::string EncodeClosePayload(uint16_t code, std::string_view reason);

}  // namespace isb::net
