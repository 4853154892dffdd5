// A plain HTTP connection's two directions: requests read head by head, each checked (its host, its method's body,
// the judge) and passed through the message relay, and responses relayed untouched after the first one's status.
#include <boost/asio.hpp>

#include "egress/classify.h"
#include "egress/http_response.h"
#include "egress/proxy_impl.h"

namespace isb::egress {

namespace asio = boost::asio;

namespace {

// Why `head` may not go on `conn`, or empty: it names another host (on the explicit proxy port, another host or
// port).
std::string OtherHost(const std::string& conn_host, uint16_t conn_port, bool explicit_proxy, const HttpHead& head) {
  const uint16_t port = explicit_proxy ? head.port : conn_port;
  if (head.host == conn_host && port == conn_port) return "";
  return "egress to " + head.host + ":" + std::to_string(port) + " on a connection to " + conn_host + ":" +
         std::to_string(conn_port) + " is refused: one host per connection";
}

// A request on the explicit proxy port parsed again as the origin gets it (origin form, no proxy fields): what the
// filter edits. A rewrite that did not parse (none does) leaves the head as sent.
HttpHead OriginHead(const RelayedRequest& request) {
  HeadResult parsed = ParseHttpHead(request.origin_form);
  return parsed.kind == HeadResult::kParsed ? std::move(parsed.head) : request.head;
}

}  // namespace

// Origin to client on a plain HTTP connection: relayed untouched, but the status of the first response is noted
// (ends.first_status) before it goes on, so the request side knows whether the origin took an upgrade.
asio::awaitable<void> Proxy::Impl::RelayResponses(Socket& from, Socket& to, ByteCount down, RelayEnds& ends) {
  char buf[16384];
  size_t have = 0;
  // "HTTP/1.1 101 ": the status is known once its prefix is in, or once the bytes cannot be a status line.
  while (have < kStatusPrefix) {
    auto [ec, n] = co_await ReadSome(from, asio::buffer(buf + have, sizeof buf - have), ends);
    if (ec == asio::error::eof && have == 0) co_return HalfClose(to, ends);
    if (ec) {
      if (have > 0) co_await Send(to, std::string_view(buf, have));
      co_return ec == asio::error::eof ? HalfClose(to, ends) : CloseBoth(from, to);
    }
    have += n;
  }
  std::string_view line(buf, have);
  ends.first_status = PeekResponseStatus(line);  // kNotAStatus: not HTTP, no switch it could confirm
  down.Add(have);
  bool sent = co_await Send(to, line);
  if (!sent) co_return CloseBoth(from, to);
  co_return co_await Pump(from, to, down, ends);
}

// Client to origin on a plain HTTP connection, from its first request (`buffer`: the bytes read so far): each
// request head is read and checked before it goes on, then its body follows by its framing (a Content-Length body
// spliced when large, a chunked one scanned), and the next head is expected after it. A refused request gets a
// 400 or 403 with the reason and the connection closes. When the connection's first request was an Upgrade and
// the origin answered it 101, bytes that are not an HTTP request head are the
// protocol switched to: from there on the bytes are relayed untouched. Without that answer they are refused like
// any malformed head: a client's Upgrade header alone never turns the checks off.
asio::awaitable<void> Proxy::Impl::RelayRequests(Socket& from, Socket& to, std::string& buffer,
                                                 const HttpConnection& conn, Counts counts, RelayEnds& ends) {
  char buf[16384];
  SocketStream client(from, ends, counts.down);
  SocketStream origin(to, ends, counts.up);
  const Exchange exchange{conn.sandbox, conn.host, conn.port, false};
  bool first = true;
  bool asked_upgrade = false;  // whether the first request asked the origin to switch protocols
  for (;;) {
    RelayedRequest request = ReadRelayedRequest(buffer, conn.explicit_proxy);
    for (int reads = 0; request.state == RelayedRequest::State::kNeedMore; ++reads) {
      if (buffer.size() >= opts_.max_head) {
        request.state = RelayedRequest::State::kMalformed;
        request.status = 431;
        request.reason = "request head too large";
        break;
      }
      if (reads == kMaxHeadReads) {
        request.state = RelayedRequest::State::kMalformed;
        request.status = 400;
        request.reason = kTooManyPieces;
        break;
      }
      auto [ec, n] =
          co_await ReadSome(from, asio::buffer(buf, std::min(sizeof buf, opts_.max_head - buffer.size())), ends);
      if (ec == asio::error::eof && buffer.empty()) co_return HalfClose(to, ends);  // between requests
      if (ec) co_return CloseBoth(from, to);
      buffer.append(buf, n);
      request = ReadRelayedRequest(buffer, conn.explicit_proxy);
    }
    const int status = ends.first_status;
    const bool switched = asked_upgrade && status == 101;
    if (switched && request.state != RelayedRequest::State::kParsed) {
      bool sent = co_await Send(to, buffer);
      if (!sent) co_return CloseBoth(from, to);
      counts.up.Add(buffer.size());
      co_return co_await Pump(from, to, counts.up, ends);
    }
    std::string refusal;
    int deny_status = 403;
    bool policy = true;  // a refusal of the policy's (reported), not of a malformed request
    if (request.state != RelayedRequest::State::kParsed) {
      refusal = request.reason;
      deny_status = request.status;
      policy = false;
    } else {
      refusal = OtherHost(conn.host, conn.port, conn.explicit_proxy, request.head);
      if (refusal.empty()) {
        refusal = BodylessMethodRefusal(request.head);
        if (!refusal.empty()) deny_status = 400;
      }
      // The first request was decided already; a judged name has every later one decided too.
      if (refusal.empty() && !first && conn.per_request) refusal = co_await JudgeRequest(conn, request.head);
    }
    if (!refusal.empty()) {
      if (policy)
        Report(conn.sandbox,
               request.head.host + ":" + std::to_string(conn.explicit_proxy ? request.head.port : conn.port), refusal);
      else
        ++stats_.denied;
      std::string response = HttpDenyResponse(deny_status, refusal);
      co_await Send(from, response);
      co_return CloseBoth(from, to);
    }
    // The head as the origin gets it (on the explicit proxy port, in origin form), through the filter.
    const HttpHead head = conn.explicit_proxy ? OriginHead(request) : request.head;
    std::string as_sent(request.Upstream(buffer));
    buffer.erase(0, request.head.size);
    PreparedMessage message = PrepareRequest(*filter_, exchange, std::move(as_sent), head);
    if (!message.refusal.empty()) {
      ++stats_.denied;
      std::string response = HttpDenyResponse(403, message.refusal);
      co_await Send(from, response);
      co_return CloseBoth(from, to);
    }
    Status relayed = co_await RelayMessage(client, origin, buffer, message);
    const Code failed = relayed.ok() ? Code::kInternal : relayed.error().code;
    if (failed == Code::kTooLarge || failed == Code::kForbidden) {
      ++stats_.denied;
      std::string response = HttpDenyResponse(failed == Code::kTooLarge ? 413 : 403, relayed.error().message);
      co_await Send(from, response);
    }
    if (!relayed.ok()) co_return CloseBoth(from, to);
    if (first && request.opaque_after) asked_upgrade = true;
    first = false;
  }
}

}  // namespace isb::egress
