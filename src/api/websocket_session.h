// A server's end of a WebSocket on a socket the HTTP server handed over after its 101: messages in (pings answered,
// a close answered and ended), text and binary messages out from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "net/websocket_frame.h"
#include "net/websocket_message.h"

namespace isb::api {

struct WebSocketOptions {
  uint64_t max_message = 1 << 20;  // longer messages are refused with 1009
  // A peer heard nothing from for `ping_after` is pinged; one that then sends nothing (no pong, no message) for
  // `pong_wait` is dead: the connection is over. A peer that vanished without a FIN otherwise holds it forever.
  std::chrono::milliseconds ping_after{20'000};
  std::chrono::milliseconds pong_wait{20'000};
  // A frame the peer does not take within this long ends the connection (part of it may have gone out).
  std::chrono::milliseconds write_wait{10'000};
};

class WebSocketSession {
 public:
  struct Message {
    uint8_t opcode = net::ws_opcode::kText;  // kText or kBinary
    std::string data;
  };
  using Options = WebSocketOptions;
  // `fd` stays the caller's (not closed here); `pending` is what the client sent past its request; `stopping` says
  // when the server stops (every wait ends then).
  WebSocketSession(int fd, std::string_view pending, std::function<bool()> stopping, WebSocketOptions options = {});

  // The next text or binary message; nullopt once the connection is over: the peer closed it or broke the protocol
  // (answered with the close code that says why), the socket failed, the peer went quiet past a ping (see Options),
  // the server is stopping, or Close was called and the peer's answer came or did not come within a second.
  std::optional<Message> Read();
  // Sends one message in one frame; false once the connection is over or the peer does not take the frame within
  // write_wait (the connection is then over: a frame cut short leaves nothing a peer could read on from).
  bool Send(uint8_t opcode, std::string_view payload);
  // Whether the connection is over for a failure of the socket or the peer (not a close handshake).
  bool broken() const { return broken_; }
  // The code of the close the peer started (not its answer to ours), once Read has ended for it; kNoStatus for a
  // close without one, 0 when the peer started none.
  uint16_t peer_close_code() const { return peer_close_code_; }
  // Sends a close frame (once); Read then ends.
  void Close(uint16_t code, std::string_view reason);

 private:
  bool Write(std::string_view bytes);
  // Reads what the socket has into in_, waiting for it; false once nothing more can come.
  bool Fill();

  // Pings a peer quiet for ping_after; false once it stayed quiet past pong_wait after the ping.
  bool PeerAlive();

  const int fd_;
  const Options options_;
  std::chrono::steady_clock::time_point heard_at_, pinged_at_{};
  bool ping_out_ = false;
  uint16_t peer_close_code_ = 0;
  std::string in_;
  std::function<bool()> stopping_;
  net::WsFrameParser parser_;
  net::WsMessageAssembler assembler_;
  std::string frame_, message_;
  Mutex write_mu_;
  std::atomic<bool> broken_{false}, close_sent_{false};
  std::atomic<int64_t> close_sent_at_ns_{0};  // steady clock; set before close_sent_
};

}  // namespace isb::api
