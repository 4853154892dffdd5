// Fuzzes what a browser sends on a terminal WebSocket once it is upgraded: any bytes, read by WebSocketSession until
// it ends (a refusal, a close, or the end of the bytes), with every message it returns checked against the bound.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/websocket_session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr uint64_t kMaxMessage = 4096;
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) != 0) abort();
  // The first bytes come as "pending" (read with the request), the rest over the socket, then its end.
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string_view pending = bytes.substr(0, bytes.size() / 3);
  std::string_view sent = bytes.substr(pending.size());
  while (!sent.empty()) {
    ssize_t n = ::send(fds[1], sent.data(), sent.size(), MSG_NOSIGNAL);
    if (n <= 0) break;  // a full buffer: the rest is dropped, as a client that went away
    sent.remove_prefix(static_cast<size_t>(n));
  }
  ::shutdown(fds[1], SHUT_WR);
  {
    isb::api::WebSocketSession session(fds[0], pending, nullptr, {.max_message = kMaxMessage});
    while (auto message = session.Read()) {
      if (message->data.size() > kMaxMessage) abort();
      if (message->opcode != isb::net::ws_opcode::kText && message->opcode != isb::net::ws_opcode::kBinary) abort();
    }
  }
  ::close(fds[0]);
  ::close(fds[1]);
  return 0;
}
