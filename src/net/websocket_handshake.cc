// SHA-1 comes from OpenSSL's libcrypto, which the binary links already; the header lists are read with the HTTP
// layer's own token matcher so the proxy and these checks agree on what a field lists.
#include "net/websocket_handshake.h"

#include <openssl/sha.h>

#include "base/base64.h"
#include "egress/http_body.h"

namespace isb::net {

namespace {

constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

std::string UpgradeFieldsRefusal(const std::vector<egress::HttpHeader>& headers) {
  if (!egress::ListsToken(headers, "Upgrade", "websocket")) return "the Upgrade header does not list websocket";
  if (!egress::ListsToken(headers, "Connection", "upgrade")) return "the Connection header does not list upgrade";
  return "";
}

}  // namespace

std::string WebSocketAccept(std::string_view key) {
  std::string input(key);
  input.append(kGuid);
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

bool AsksForWebSocket(const egress::HttpHead& request) {
  return egress::ListsToken(request.headers, "Upgrade", "websocket");
}

std::string WebSocketRequestRefusal(const egress::HttpHead& request) {
  if (request.method != "GET") return "a WebSocket handshake must be a GET, not " + request.method;
  if (request.minor_version != 1) return "a WebSocket handshake must be HTTP/1.1";
  if (std::string refusal = UpgradeFieldsRefusal(request.headers); !refusal.empty()) return refusal;
  const std::string* version = request.Find("Sec-WebSocket-Version");
  if (version == nullptr || *version != kWebSocketVersion)
    return "Sec-WebSocket-Version must be 13" +
           (version == nullptr ? std::string(", and is missing") : ", not " + *version);
  const std::string* key = request.Find("Sec-WebSocket-Key");
  if (key == nullptr) return "the Sec-WebSocket-Key header is missing";
  Result<std::string> nonce = Base64Decode(*key, Base64Padding::kRequired);
  if (!nonce.ok() || nonce->size() != 16) return "Sec-WebSocket-Key must be 16 bytes in base64";
  return "";
}

std::string WebSocketResponseRefusal(const egress::ResponseHead& response, std::string_view key) {
  if (response.status != 101)
    return "the answer to a WebSocket handshake is " + std::to_string(response.status) + ", not 101";
  if (std::string refusal = UpgradeFieldsRefusal(response.headers); !refusal.empty()) return refusal;
  const std::string* accept = response.Find("Sec-WebSocket-Accept");
  if (accept == nullptr) return "the Sec-WebSocket-Accept header is missing";
  if (*accept != WebSocketAccept(key)) return "Sec-WebSocket-Accept does not match the key";
  return "";
}

}  // namespace isb::net
