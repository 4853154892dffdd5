// Each direction is a coroutine reading its sender, passing the bytes through its pump and writing what comes out
// before the next read, so a direction holds at most a read and what its pump holds; the first direction to end
// ends both (a WebSocket's connection is closed by its server once both close frames have passed).
#include "egress/websocket_relay.h"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include "base/ascii.h"
#include "net/permessage_deflate.h"
#include "net/websocket_handshake.h"

namespace isb::egress {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr std::string_view kExtensions = "Sec-WebSocket-Extensions";

// Every `name` field's value, joined as one list.
std::string JoinedFields(const std::vector<HttpHeader>& headers, std::string_view name) {
  std::string out;
  for (const HttpHeader& h : headers) {
    if (!EqualsIgnoreCase(h.name, name)) continue;
    if (!out.empty()) out += ", ";
    out += h.value;
  }
  return out;
}

// The permessage-deflate offers of a request, those the proxy reads.
std::vector<net::WsExtension> DeflateOffers(const std::vector<HttpHeader>& headers) {
  std::vector<net::WsExtension> kept;
  Result<std::vector<net::WsExtension>> offered = net::ParseExtensionList(JoinedFields(headers, kExtensions));
  if (!offered.ok()) return kept;
  for (net::WsExtension& e : *offered)
    if (e.name == net::kPermessageDeflate && net::ParseDeflateParams(e, false).ok()) kept.push_back(std::move(e));
  return kept;
}

// Why the direction stopped: a breach of the protocol (its close code and sentence), a failed stream, or an end.
struct DirectionEnd {
  net::WsRefusal refusal;
  std::string failure;
};

using Clock = std::chrono::steady_clock;

asio::awaitable<DirectionEnd> Direction(MessageStream& from, MessageStream& to, std::string& buffer,
                                        WebSocketPump& pump, Clock::time_point& last_read,
                                        std::chrono::milliseconds idle) {
  std::string out;
  for (;;) {
    if (!buffer.empty()) {
      out.clear();
      net::WsRefusal refusal = pump.Feed(buffer, out);
      buffer.clear();
      if (!out.empty()) {
        Status sent = co_await to.Write(out);
        if (!sent.ok()) co_return DirectionEnd{{}, sent.error().message};
      }
      if (!refusal.ok()) co_return DirectionEnd{refusal, ""};
    }
    Result<size_t> n = co_await from.ReadInto(buffer, kRelayPiece);
    if (!n.ok() && n.error().code == Code::kTimeout && Clock::now() - last_read < idle) continue;
    if (!n.ok()) co_return DirectionEnd{{}, n.error().message};
    if (*n == 0) co_return DirectionEnd{};
    last_read = Clock::now();
  }
}

}  // namespace

std::string ReadableWebSocketOffer(std::string_view as_sent, const HttpHead& head) {
  if (head.Find(kExtensions) == nullptr) return std::string(as_sent);
  std::string kept;
  for (const net::WsExtension& e : DeflateOffers(head.headers)) {
    if (!kept.empty()) kept += ", ";
    kept += net::FormatExtension(e);
  }
  // The head again, line by line, without the extension fields; the kept offers go last.
  std::string out;
  std::string_view rest = as_sent.substr(0, as_sent.size() - 2);  // the blank line is written last
  while (!rest.empty()) {
    const size_t end = rest.find("\r\n");
    const std::string_view line = rest.substr(0, end + 2);
    rest.remove_prefix(line.size());
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos && EqualsIgnoreCase(line.substr(0, colon), kExtensions)) continue;
    out.append(line);
  }
  if (!kept.empty()) out.append(kExtensions).append(": ").append(kept).append("\r\n");
  return out + "\r\n";
}

Result<WebSocketSession> AcceptedWebSocket(const HttpHead& request, const ResponseHead& response) {
  const std::string* key = request.Find("Sec-WebSocket-Key");
  std::string refusal = net::WebSocketResponseRefusal(response, key != nullptr ? *key : "");
  if (!refusal.empty()) return Error::Of(Code::kUnavailable, refusal);
  WebSocketSession session;
  if (response.Find(kExtensions) == nullptr) return session;
  const std::string answer = JoinedFields(response.headers, kExtensions);
  auto unoffered = [&](const std::string& why) {
    return Error::Of(Code::kUnavailable,
                     "the origin accepted extensions (" + answer + ") the proxy cannot relay: " + why);
  };
  Result<std::vector<net::WsExtension>> accepted = net::ParseExtensionList(answer);
  if (!accepted.ok()) return unoffered(accepted.error().message);
  if (accepted->size() != 1 || (*accepted)[0].name != net::kPermessageDeflate)
    return unoffered("only permessage-deflate was offered");
  Result<net::DeflateParams> params = net::ParseDeflateParams((*accepted)[0], true);
  if (!params.ok()) return unoffered(params.error().message);
  std::string why = "no offer was made";
  for (const net::WsExtension& offer : DeflateOffers(request.headers)) {
    why = net::DeflateResponseRefusal(net::ParseDeflateParams(offer, false).value(), *params);
    if (why.empty()) {
      session.deflate = *params;
      return session;
    }
  }
  return unoffered(why);
}

// g++ 12 takes the frames of awaitables joined by || for a mismatched new/delete (asio's frames have operator new
// and delete of their own, which match); the warning is wrong here, and only here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
asio::awaitable<std::string> RelayWebSocket(MessageStream& client, MessageStream& origin, std::string from_client,
                                            std::string from_origin, MessageFilter& filter, const Exchange& exchange,
                                            const WebSocketSession& session, std::chrono::milliseconds idle) {
  WebSocketPump up(filter, exchange, true, session);
  WebSocketPump down(filter, exchange, false, session);
  Clock::time_point last_read = Clock::now();
  auto ended = co_await (Direction(client, origin, from_client, up, last_read, idle) ||
                         Direction(origin, client, from_origin, down, last_read, idle));
  const bool from_sandbox = ended.index() == 0;
  DirectionEnd end = from_sandbox ? std::get<0>(ended) : std::get<1>(ended);
  if (end.refusal.ok()) co_return end.failure;
  // Both sides are told, each where its stream is between frames; the sides finish the close as they can.
  const uint16_t code = end.refusal.close_code;
  const std::string who = from_sandbox ? "the sandbox" : exchange.host;
  if (down.at_frame_boundary()) (void)co_await client.Write(down.CloseFrame(code, end.refusal.reason));
  if (up.at_frame_boundary()) (void)co_await origin.Write(up.CloseFrame(code, end.refusal.reason));
  co_return "WebSocket frames from " + who + " refused: " + end.refusal.reason;
}

#pragma GCC diagnostic pop

}  // namespace isb::egress
