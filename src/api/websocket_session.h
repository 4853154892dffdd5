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

class WebSocketSession {
 public:
  struct Message {
    uint8_t opcode = net::ws_opcode::kText;  // kText or kBinary
    std::string data;
  };
  // `fd` stays the caller's (not closed here); `pending` is what the client sent past its request; `stopping` says
  // when the server stops (every wait ends then). Messages longer than `max_message` are refused with 1009.
  WebSocketSession(int fd, std::string_view pending, std::function<bool()> stopping, uint64_t max_message = 1 << 20);

  // The next text or binary message; nullopt once the connection is over: the peer closed it or broke the protocol
  // (answered with the close code that says why), the socket failed, the server is stopping, or Close was called
  // and the peer's answer came or did not come within a second.
  std::optional<Message> Read();
  // Sends one message in one frame; false once the connection is over or the peer does not take it within 10 s.
  bool Send(uint8_t opcode, std::string_view payload);
  // Sends a close frame (once); Read then ends.
  void Close(uint16_t code, std::string_view reason);

 private:
  bool Write(std::string_view bytes);
  // Reads what the socket has into in_, waiting for it; false once nothing more can come.
  bool Fill();

  const int fd_;
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
