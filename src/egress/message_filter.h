// The seam where a relayed HTTP/1.1 message can be changed on its way (secrets substituted into a request, a response
// scrubbed): a MessageFilter, shared by every connection of a proxy, edits each parsed head and makes a BodyFilter,
// the state of one body, for each body it wants to see. The message relay (message_relay.h) calls it and writes the
// framing itself; the default filter changes nothing, and an unchanged message goes on byte for byte.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "egress/http_head.h"
#include "egress/http_response.h"

namespace isb::egress {

// Whose connection and to where: the sandbox it serves and the name it was admitted for (on an intercepted
// connection, the TLS server name every request's Host was checked against) and the port.
struct Exchange {
  std::string sandbox;
  std::string host;
  uint16_t port = 0;
  bool intercepted = false;  // TLS terminated by the proxy (true) or plain HTTP (false)
};

// One body's content on its way, as a stream: chunk framing removed, the pieces as they arrive (any split; a value
// the filter looks for may straddle two). The relay frames what it is given again (body_relay.h).
class BodyFilter {
 public:
  virtual ~BodyFilter() = default;
  // The next bytes of the content; appends what may go on now to `out`. It may keep a tail back to match across
  // pieces (what it keeps is its own memory to bound), to be given back by a later Take or by Finish.
  virtual void Take(std::string_view data, std::string& out) = 0;
  // The content has ended: appends what was kept back.
  virtual void Finish(std::string& out) = 0;
  // Non-empty (after a Take): the body may not go on. The relay sends nothing more of it, not even what that Take
  // gave, and closes both sides; the text says why (the sandbox gets it when it can still be answered).
  virtual std::string Refusal() const { return {}; }
};

// Called on the event loop, so it must not block. Holds only configuration shared by all connections; whatever one
// body needs lives in its BodyFilter.
class MessageFilter {
 public:
  virtual ~MessageFilter() = default;
  // A request head after every check (host, method, judge), before it goes on. The method, target, version and
  // header fields may be changed; the head's summary (host, port, framing) is not read again. Content-Length and
  // Transfer-Encoding are the relay's to write: whatever the filter leaves in them is replaced by the framing the
  // relay sends. Returns empty to go on, or a refusal: the request is not sent, the sandbox is answered 403 with
  // that text and the connection closed.
  virtual std::string RequestHead(const Exchange&, HttpHead&) { return {}; }
  // Whether a chunked request's trailer fields go on after a body this filter saw (it sees content only: a filter
  // that must judge every byte a request carries says no, and they are dropped).
  virtual bool KeepRequestTrailers(const Exchange&) { return true; }
  // The filter for this request's body, or null: the body goes on byte for byte in its own framing.
  virtual std::unique_ptr<BodyFilter> RequestBody(const Exchange&, const HttpHead&) { return nullptr; }
  // A response head (interim 1xx ones too) to `request`: status, reason and fields may be changed, the framing
  // fields as for requests (a filter that decodes a Content-Encoding removes that field here).
  virtual void ResponseHead(const Exchange&, const HttpHead& /*request*/, ResponseHead&) {}
  virtual std::unique_ptr<BodyFilter> ResponseBody(const Exchange&, const HttpHead& /*request*/,
                                                   const egress::ResponseHead&) {
    return nullptr;
  }
  // On an intercepted connection that upgraded to a WebSocket: the filter for one message's payload (defragmented,
  // decompressed when permessage-deflate is in use), from the sandbox (`to_origin`) or to it, text or binary; or
  // null, and its frames go on as they came (a compressed one is inflated and deflated again all the same: the
  // receiver's compression context is the proxy's). What the filter gives is framed again (compressed and masked as
  // the receiver expects). Control frames (close, ping, pong) are never filtered.
  virtual std::unique_ptr<BodyFilter> WebSocketMessage(const Exchange&, bool /*to_origin*/, bool /*text*/) {
    return nullptr;
  }
};

}  // namespace isb::egress
