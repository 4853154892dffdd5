// Fuzzes one direction of the proxy's WebSocket relay: the first byte picks the direction, permessage-deflate and
// an uppercasing filter for text messages, the second the size of the reads; the rest is what the sender sends.
// Without filter or compression the output is the input, to where it was refused. Whatever the pump writes is read
// back by a parser in the receiver's role: valid frames only.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "egress/uppercase_filter.h"
#include "egress/websocket_pump.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const bool to_origin = (data[0] & 1) != 0;
  const bool deflate = (data[0] & 2) != 0;
  const bool filtered = (data[0] & 4) != 0;
  const size_t piece = 1 + data[1] % 64;
  std::string_view in(reinterpret_cast<const char*>(data) + 2, size - 2);

  isb::egress::MessageFilter none;
  isb::egress::UppercaseText uppercase;
  isb::egress::Exchange exchange{"sb", "ws.test", 443};
  isb::egress::WebSocketSession session;
  if (deflate) session.deflate = isb::net::DeflateParams{};
  isb::egress::WebSocketPump pump(filtered ? static_cast<isb::egress::MessageFilter&>(uppercase) : none, exchange,
                                  to_origin, session);
  std::string out;
  size_t taken = 0;
  for (; taken < in.size(); taken += piece) {
    if (!pump.Feed(in.substr(taken, piece), out).ok()) break;
  }
  if (!filtered && !deflate && in.substr(0, out.size()) != out) std::abort();

  isb::net::WsFrameParser reader({to_origin ? isb::net::WsSender::kClient : isb::net::WsSender::kServer,
                                  isb::egress::kMaxWebSocketFrame, deflate});
  std::string payload;
  for (std::string_view rest = out; !rest.empty();) {
    isb::net::WsFrameParser::Step step = reader.Feed(rest, payload);
    if (step.state == isb::net::WsFrameParser::State::kError) std::abort();
    rest.remove_prefix(step.used);
    payload.clear();
  }
  return 0;
}
