// An intercepted connection that upgrades to a WebSocket: the client's extension offers cut to what the proxy reads
// (permessage-deflate), the origin's 101 checked against them, then frames relayed both ways by two WebSocketPumps
// (websocket_pump.h) until either side ends the connection.
#pragma once

#include <boost/asio.hpp>
#include <chrono>
#include <string>
#include <string_view>

#include "base/result.h"
#include "egress/http_head.h"
#include "egress/http_response.h"
#include "egress/message_filter.h"
#include "egress/message_relay.h"
#include "egress/websocket_pump.h"

namespace isb::egress {

// The bytes of a request head that asks for a WebSocket (`as_sent`, parsed as `head`) with Sec-WebSocket-Extensions
// holding only the permessage-deflate offers the relay reads: other extensions, offers with unknown or malformed
// parameters, and a list that does not parse are dropped (the field too when nothing is left). `as_sent` itself
// when there is nothing to drop.
std::string ReadableWebSocketOffer(std::string_view as_sent, const HttpHead& head);

// What the origin's 101 to `request` (as it was sent to the origin) settled: a WebSocket accepted for the request's
// key, with permessage-deflate when the origin took one of the request's offers. Errors (kUnavailable): the 101
// does not accept the handshake, or accepts an extension that was not offered or parameters outside the offers.
Result<WebSocketSession> AcceptedWebSocket(const HttpHead& request, const ResponseHead& response);

// Relays frames between `client` and `origin` until either ends the connection, fails, or breaks the protocol;
// `from_client` and `from_origin` hold bytes already read past the handshake. A stream silent for its idle time
// ends the relay only when the other was silent as long (`idle`). Returns why the relay stopped early, or empty
// when a side ended it: for a protocol breach, each side got a close frame with its code where one could go.
boost::asio::awaitable<std::string> RelayWebSocket(MessageStream& client, MessageStream& origin,
                                                   std::string from_client, std::string from_origin,
                                                   MessageFilter& filter, const Exchange& exchange,
                                                   const WebSocketSession& session, std::chrono::milliseconds idle);

}  // namespace isb::egress
