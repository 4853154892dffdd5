// The proxy's one HTTP/1.1 message relay, for plain HTTP and intercepted TLS alike: a message's parsed head goes
// through the MessageFilter (editable), then the head and its body go on, the body as sent or, when a filter changes
// it, framed anew (body_relay.h), never held whole except an HTTP/1.0 request's (at most kMaxBufferedBody).
#pragma once

#include <boost/asio.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "egress/body_relay.h"
#include "egress/http_body.h"
#include "egress/message_filter.h"
#include "egress/outgoing_head.h"

namespace isb::egress {

// The most bytes one read of a relayed message takes.
inline constexpr size_t kRelayPiece = 64 * 1024;

// One side of a relayed connection as the message relay sees it: a TCP socket (socket_relay.h) or a TLS channel.
class MessageStream {
 public:
  virtual ~MessageStream() = default;
  // Appends at most `max` (> 0) bytes to `buffer`; 0 when the peer has finished.
  virtual boost::asio::awaitable<Result<size_t>> ReadInto(std::string& buffer, size_t max) = 0;
  virtual boost::asio::awaitable<Status> Write(std::string_view bytes) = 0;
  // Moves at most `budget` bytes to `to` without their passing through user space, until this stream has nothing to
  // read for now; 0 when the two cannot (the default). Errors: the stream ended or failed.
  virtual boost::asio::awaitable<Result<uint64_t>> Forward(MessageStream& /*to*/, uint64_t /*budget*/) {
    co_return uint64_t{0};
  }
};

// A message ready to go: its head as it will be written, and how its body comes and goes.
struct PreparedMessage {
  OutgoingHead head;
  BodyFraming in;
  Reframe out = Reframe::kAsSent;
  std::unique_ptr<BodyFilter> filter;  // null: the body goes on as sent
  std::string refusal{};               // a request the filter refused (MessageFilter::RequestHead): not to be relayed
  // A filtered body's trailer fields go on (a request's) or are dropped (a response's: the filter sees content
  // only, and a field there could carry what it scrubs; a recipient may drop trailers).
  bool keep_trailers = true;
};

// A request whose head (`as_sent`, parsed as `head`) passed every check, through `filter`; when the filter refuses
// it, only `refusal` is set.
PreparedMessage PrepareRequest(MessageFilter& filter, const Exchange& exchange, std::string as_sent,
                               const HttpHead& head);
// A response to `request` whose head (`as_sent`) parsed as `head`, through `filter`.
PreparedMessage PrepareResponse(MessageFilter& filter, const Exchange& exchange, const HttpHead& request,
                                std::string as_sent, const ResponseHead& head);

// Writes `message`'s head to `to`, then relays its body from `from`: `buffer` holds the bytes read past the head and
// keeps those read past the body. Unfiltered Content-Length bodies past the first full read go by
// MessageStream::Forward when the streams can. Errors: kInvalidArgument, a malformed chunked body (the reason);
// kUnavailable, a body that ended early or a stream that failed; kTooLarge, a held body past kMaxBufferedBody, for
// which nothing was written (the sender may be answered 413); kForbidden, a body its filter refused
// (BodyFilter::Refusal, the message), of which nothing more was written (the connection is to be closed).
boost::asio::awaitable<Status> RelayMessage(MessageStream& from, MessageStream& to, std::string& buffer,
                                            PreparedMessage& message);

}  // namespace isb::egress
