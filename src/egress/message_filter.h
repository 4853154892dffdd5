// The seam where an intercepted connection's messages can be changed on their way: secrets substituted into a
// request, a response scrubbed. The proxy calls a filter for every request and response of an intercepted
// connection, in order, with the bytes it is about to forward; the default filter forwards them unchanged.
#pragma once

#include <cstdint>
#include <string>

#include "egress/http_head.h"
#include "egress/http_response.h"

namespace isb::egress {

// Whose connection and to where: the sandbox and the name it asked for (the TLS server name every request's Host
// was checked against) and the port.
struct Exchange {
  std::string sandbox;
  std::string host;
  uint16_t port = 0;
};

class MessageFilter {
 public:
  virtual ~MessageFilter() = default;
  // A request head (request line to blank line, as the client sent it) and its parse; `bytes` may be replaced.
  virtual void RequestHead(const Exchange&, const HttpHead&, std::string& /*bytes*/) {}
  // The next piece of a request body as it passes, framing included (chunk sizes of a chunked body). A filter that
  // changes a body's length must change its framing in the head too (the next issue's work: it buffers the body).
  virtual void RequestBody(const Exchange&, std::string& /*bytes*/) {}
  // A response head (interim 1xx ones too) and its parse.
  virtual void ResponseHead(const Exchange&, const ResponseHead&, std::string& /*bytes*/) {}
  virtual void ResponseBody(const Exchange&, std::string& /*bytes*/) {}
};

}  // namespace isb::egress
