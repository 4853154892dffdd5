// A message is relayed by one coroutine, reading a piece, passing it through the BodyRelay and writing what comes
// out before the next read: at most a piece and what the filter keeps back are held (a buffered body excepted).
#include "egress/message_relay.h"

#include <algorithm>

namespace isb::egress {

namespace asio = boost::asio;

PreparedMessage PrepareRequest(MessageFilter& filter, const Exchange& exchange, std::string as_sent,
                               const HttpHead& head) {
  HttpHead edited = head;
  std::string refusal = filter.RequestHead(exchange, edited);
  if (!refusal.empty()) {
    PreparedMessage refused{OutgoingHead::Request(std::move(as_sent), head, head), BodyFraming{}, Reframe::kAsSent,
                            nullptr};
    refused.refusal = std::move(refusal);
    return refused;
  }
  PreparedMessage m{OutgoingHead::Request(std::move(as_sent), head, edited), RequestBody(head), Reframe::kAsSent,
                    nullptr};
  if (m.in.kind != BodyFraming::kNone) m.filter = filter.RequestBody(exchange, edited);
  m.keep_trailers = m.filter == nullptr || filter.KeepRequestTrailers(exchange);
  m.out = ChooseReframe(m.in, m.filter != nullptr, true, head.minor_version);
  if (m.out != Reframe::kBuffered) m.head.SetFraming(m.out);
  return m;
}

PreparedMessage PrepareResponse(MessageFilter& filter, const Exchange& exchange, const HttpHead& request,
                                std::string as_sent, const ResponseHead& head) {
  ResponseHead edited = head;
  filter.ResponseHead(exchange, request, edited);
  PreparedMessage m{OutgoingHead::Response(std::move(as_sent), head, edited), ResponseBody(request.method, head),
                    Reframe::kAsSent, nullptr};
  if (m.in.kind != BodyFraming::kNone) m.filter = filter.ResponseBody(exchange, request, edited);
  m.out = ChooseReframe(m.in, m.filter != nullptr, false, request.minor_version);
  m.keep_trailers = false;
  m.head.SetFraming(m.out);
  return m;
}

namespace {

Error BodyFailure(const BodyRelay::Step& step) {
  if (step.state == BodyRelay::State::kRefused) return Error::Of(Code::kForbidden, step.reason);
  return Error::Of(step.state == BodyRelay::State::kTooLarge ? Code::kTooLarge : Code::kInvalidArgument, step.reason);
}

}  // namespace

asio::awaitable<Status> RelayMessage(MessageStream& from, MessageStream& to, std::string& buffer,
                                     PreparedMessage& message) {
  const bool held = message.out == Reframe::kBuffered;
  // The head goes with the body's first bytes when they are at hand (one write, one TLS record, one send), and on its
  // own before the relay waits for any.
  std::string lead = held ? std::string() : message.head.Bytes();
  auto send_lead = [&]() -> asio::awaitable<Status> {
    if (lead.empty()) co_return Status();
    Status sent = co_await to.Write(lead);
    lead.clear();
    co_return sent;
  };
  if (message.in.kind == BodyFraming::kNone) co_return co_await send_lead();
  BodyRelay body(message.in, message.out, std::move(message.filter), message.keep_trailers);
  std::string out, whole;
  bool full_read = false;  // the last read filled its piece: a bulk body, whose rest may be forwarded
  for (;;) {
    out.clear();
    BodyRelay::Step step = body.Feed(buffer, out);
    buffer.erase(0, step.used);
    if (step.state == BodyRelay::State::kMalformed || step.state == BodyRelay::State::kTooLarge ||
        step.state == BodyRelay::State::kRefused)
      co_return BodyFailure(step);
    if (held) {
      whole.append(out);
    } else if (!out.empty()) {
      if (!lead.empty()) {
        out.insert(0, lead);
        lead.clear();
      }
      Status sent = co_await to.Write(out);
      if (!sent.ok()) co_return sent;
    }
    if (step.state == BodyRelay::State::kDone) break;
    if (Status sent = co_await send_lead(); !sent.ok()) co_return sent;
    const uint64_t opaque = body.opaque_remaining();
    if (full_read && opaque > 0) {
      Result<uint64_t> moved = co_await from.Forward(to, opaque);
      if (!moved.ok()) co_return Error::Of(Code::kUnavailable, "the body ended before its end");
      body.Skipped(*moved);
      if (*moved > 0) continue;
    }
    const size_t want = opaque > 0 ? static_cast<size_t>(std::min<uint64_t>(opaque, kRelayPiece)) : kRelayPiece;
    Result<size_t> n = co_await from.ReadInto(buffer, want);
    if (!n.ok()) co_return n.error();
    full_read = *n == want;
    if (*n > 0) continue;
    out.clear();
    BodyRelay::Step end = body.End(out);
    if (end.state == BodyRelay::State::kRefused) co_return BodyFailure(end);
    if (end.state != BodyRelay::State::kDone) co_return Error::Of(Code::kUnavailable, end.reason);
    if (held) {
      whole.append(out);
    } else if (!out.empty()) {
      Status sent = co_await to.Write(out);
      if (!sent.ok()) co_return sent;
    }
    break;
  }
  if (!held) co_return co_await send_lead();  // a body that came to nothing
  message.head.SetFraming(Reframe::kBuffered, body.length_out());
  std::string bytes = message.head.Bytes() + whole;
  co_return co_await to.Write(bytes);
}

}  // namespace isb::egress
