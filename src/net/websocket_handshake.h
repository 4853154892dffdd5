// The HTTP/1.1 opening handshake of RFC 6455 (section 4): the Sec-WebSocket-Accept a key calls for, and the checks
// of a request head (a server's, or a proxy's before it relays frames) and of a 101 answer (a client's, or a
// proxy's), each giving the refusal text or nothing.
#pragma once

#include <string>
#include <string_view>

#include "egress/http_head.h"
#include "egress/http_response.h"

namespace isb::net {

// The only version of the protocol there is (RFC 6455 section 4.1): a server refusing another answers 426 with
// "Sec-WebSocket-Version: 13".
inline constexpr char kWebSocketVersion[] = "13";

// base64(SHA-1(key + the RFC's GUID)).
std::string WebSocketAccept(std::string_view key);

// Whether `request` asks for a WebSocket at all: it lists "websocket" in Upgrade.
bool AsksForWebSocket(const egress::HttpHead& request);

// Why `request` is not a valid opening handshake, or empty: a GET of HTTP/1.1 with "websocket" in Upgrade, "upgrade"
// in Connection, Sec-WebSocket-Version 13 and a Sec-WebSocket-Key of 16 bytes in base64.
std::string WebSocketRequestRefusal(const egress::HttpHead& request);

// Why `response` does not accept a handshake whose key was `key`, or empty: a 101 with "websocket" in Upgrade,
// "upgrade" in Connection and the Sec-WebSocket-Accept `key` calls for.
std::string WebSocketResponseRefusal(const egress::ResponseHead& response, std::string_view key);

}  // namespace isb::net
