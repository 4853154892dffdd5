// One direction of a WebSocket on an intercepted connection, as bytes in and bytes out: the sender's frames parsed
// (net/websocket_frame.h) and passed on as they came, or, for a message the MessageFilter wants to see, its payload
// defragmented and decompressed, streamed through the filter's BodyFilter and framed again (compressed again when
// permessage-deflate is in use, masked with fresh keys towards the origin). Control frames pass as they came.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "egress/message_filter.h"
#include "net/permessage_deflate.h"
#include "net/websocket_frame.h"
#include "net/websocket_message.h"

namespace isb::egress {

// What the opening handshake settled: permessage-deflate and its parameters, when the origin accepted it.
struct WebSocketSession {
  std::optional<net::DeflateParams> deflate;
};

// Bounds of one direction: a frame's payload, and a message's content as the filter sees it (after inflating). A
// message passed as it came is bounded only by its frames; it is never held.
inline constexpr uint64_t kMaxWebSocketFrame = 16ull << 20;
inline constexpr uint64_t kMaxWebSocketMessage = 64ull << 20;
// A rewritten message goes out in frames of about this much (its last frame when it ends).
inline constexpr size_t kWebSocketOutFrame = 16 * 1024;

class WebSocketPump {
 public:
  // `to_origin`: the sender is the sandbox (its frames are masked, and frames the pump writes are masked too).
  WebSocketPump(MessageFilter& filter, const Exchange& exchange, bool to_origin, const WebSocketSession& session);

  // Takes all of `bytes`, the sender's next bytes, and appends to `out` what goes on to the receiver. A refusal (the
  // sender broke RFC 6455, or a message is too long or not UTF-8 where the pump read it) ends the direction: what
  // was taken before it is in `out`, and every later call returns the same refusal.
  net::WsRefusal Feed(std::string_view bytes, std::string& out);

  // Whether what the pump wrote so far ends at a frame boundary, where a close frame of the proxy's own may follow.
  bool at_frame_boundary() const { return !raw_frame_open_; }
  // Whether the sender's close frame has passed.
  bool closed() const { return closed_; }
  // A close frame from the proxy as this direction's receiver reads it (masked towards the origin).
  std::string CloseFrame(uint16_t code, std::string_view reason);

 private:
  enum class Mode { kRaw, kRewrite };
  net::WsRefusal Fail(net::WsRefusal refusal);
  // A whole control frame in held_, through the filter, to `out`.
  net::WsRefusal FilterControl(const net::WsFrameHeader& h, std::string& out);
  net::WsRefusal StartFrame();
  net::WsRefusal Rewrite(std::string_view payload, std::string& out);
  net::WsRefusal Decoded(std::string_view content, std::string& out);
  net::WsRefusal EndMessage(std::string& out);
  void Encode(std::string_view filtered, std::string& out);
  void Emit(bool fin, std::string& out);
  net::WsFrameHeader OutHeader(uint8_t opcode, bool fin, bool rsv1);

  MessageFilter& filter_;
  const Exchange& exchange_;
  const bool to_origin_;
  net::WsFrameParser parser_;
  net::WsMessageAssembler messages_;
  std::unique_ptr<net::WsInflater> inflater_;  // with permessage-deflate: the sender's context
  std::unique_ptr<net::WsDeflater> deflater_;  // and the receiver's

  bool frame_started_ = false;        // the current frame's header was read and its way chosen
  bool raw_frame_open_ = false;       // a frame passed as it came is partly written
  std::string held_;                  // the current frame's bytes while its header arrives, or a control frame's
  Mode mode_ = Mode::kRaw;            // the current message's way
  std::unique_ptr<BodyFilter> body_;  // null in kRewrite: the content unchanged (a compressed message)
  bool message_compressed_ = false;
  bool first_out_ = true;  // the rewritten message's next frame is its first
  std::string payload_;    // unmasked payload of the current read
  std::string decoded_;    // inflated content
  std::string filtered_;   // the filter's output
  std::string pending_;    // the rewritten message's payload not yet framed
  bool closed_ = false;
  bool failed_ = false;
  net::WsRefusal failure_;
  std::string mask_pool_;  // random bytes for mask keys, drawn in batches
};

}  // namespace isb::egress
