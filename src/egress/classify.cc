#include "egress/classify.h"

#include <span>

#include "base/ascii.h"
#include "egress/client_hello.h"
#include "egress/http_head.h"

namespace isb::egress {
namespace {

Sniff Malformed(Sniff::Kind kind, std::string reason) {
  Sniff s;
  s.state = Sniff::State::kMalformed;
  s.kind = kind;
  s.reason = std::move(reason);
  return s;
}

Sniff Done(Sniff::Kind kind, std::string host, uint16_t port) {
  Sniff s;
  s.state = Sniff::State::kDone;
  s.kind = kind;
  s.host = std::move(host);
  s.port = port;
  return s;
}

bool IsProxyHeader(const std::string& name) {
  auto eq = [&](std::string_view want) {
    if (name.size() != want.size()) return false;
    for (size_t i = 0; i < name.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(name[i])) != want[i]) return false;
    return true;
  };
  return eq("proxy-connection") || eq("proxy-authorization");
}

// The absolute-form request as the origin expects it: origin-form target, the proxy's own headers dropped, and a
// Host naming the target when the client sent none (RFC 9112 3.2.2: the proxy generates it; an origin without one
// would answer for its default site). A Host that was sent agrees with the target (the head parser checks).
std::string OriginForm(const HttpHead& h, std::string_view rest) {
  std::string out;
  out.reserve(h.size + rest.size() + h.host.size() + 16);  // about the size of the head as sent
  out.append(h.method)
      .append(" ")
      .append(h.path)
      .append(" HTTP/1.")
      .append(std::to_string(h.minor_version))
      .append("\r\n");
  if (FindHeader(h.headers, "host") == nullptr) {
    const bool v6 = h.host.find(':') != std::string::npos;
    out.append("Host: ").append(v6 ? "[" + h.host + "]" : h.host);
    if (h.port_explicit) out.append(":").append(std::to_string(h.port));
    out.append("\r\n");
  }
  for (const HttpHeader& f : h.headers) {
    if (IsProxyHeader(f.name)) continue;
    out.append(f.name).append(": ").append(f.value).append("\r\n");
  }
  out.append("\r\n");
  out.append(rest);
  return out;
}

Sniff ExplicitProxy(std::string_view bytes) {
  HeadResult r = ParseHttpHead(bytes);
  if (r.kind == HeadResult::kNeedMore) return Sniff{};
  if (r.kind != HeadResult::kParsed)
    return Malformed(Sniff::Kind::kHttp, r.kind == HeadResult::kNotHttp ? "the proxy port speaks HTTP only" : r.reason);
  const HttpHead& h = r.head;
  if (h.connect) {
    Sniff s = Done(Sniff::Kind::kConnect, h.host, h.port);
    s.upstream_prefix = std::string(bytes.substr(h.size));
    return s;
  }
  if (h.form != TargetForm::kAbsolute)
    return Malformed(Sniff::Kind::kHttp, "a request to the proxy must be CONNECT or carry an absolute URI");
  if (h.scheme != "http") return Malformed(Sniff::Kind::kHttp, "only http:// URIs can be proxied without CONNECT");
  Sniff s = Done(Sniff::Kind::kHttp, h.host, h.port);
  s.upstream_prefix = OriginForm(h, bytes.substr(h.size));
  s.method = h.method;
  s.path = h.path;
  return s;
}

// Whether an Upgrade header lists h2c (comma-separated tokens, any case).
bool UpgradesToH2c(const HttpHead& h) {
  const std::string* upgrade = FindHeader(h.headers, "upgrade");
  if (upgrade == nullptr) return false;
  std::string_view rest = *upgrade;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view token = rest.substr(0, comma);
    while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
    if (EqualsIgnoreCase(token, "h2c")) return true;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return false;
}

RelayedRequest Refused(RelayedRequest::State state, int status, std::string reason) {
  RelayedRequest r;
  r.state = state;
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

}  // namespace

RelayedRequest ReadRelayedRequest(std::string_view bytes, bool explicit_proxy) {
  using State = RelayedRequest::State;
  HeadResult parsed = ParseHttpHead(bytes);
  switch (parsed.kind) {
    case HeadResult::kNeedMore:
      return RelayedRequest{};
    case HeadResult::kNotHttp:
      return Refused(State::kNotHttp, 400, "the connection carries HTTP; this is not an HTTP request");
    case HeadResult::kMalformed:
      return Refused(State::kMalformed, parsed.status, parsed.reason);
    case HeadResult::kParsed:
      break;
  }
  RelayedRequest r;
  r.head = std::move(parsed.head);
  const HttpHead& h = r.head;
  // After an upgrade the bytes are relayed unparsed: HTTP/2 there (h2c) would carry requests for any host, method
  // and path, none checked. WebSocket and the like carry no requests of HTTP's.
  if (FindHeader(h.headers, "http2-settings") != nullptr || UpgradesToH2c(h))
    return Refused(State::kMalformed, 400,
                   "an upgrade to HTTP/2 over cleartext (h2c) is not relayed: its requests "
                   "could not be checked; use HTTP/1.1, or https");
  // CONNECT is the explicit proxy's own request (the first on its connection), never relayed: to an origin it could
  // only name that origin again (any other host is refused), and an origin that answered it 2xx without opening a
  // tunnel would then take unparsed bytes as requests no one checked.
  if (h.connect) return Refused(State::kMalformed, 400, "CONNECT on a connection that relays HTTP");
  if (explicit_proxy) {
    if (h.form != TargetForm::kAbsolute)
      return Refused(State::kMalformed, 400, "a request to the proxy must be CONNECT or carry an absolute URI");
    if (h.scheme != "http") return Refused(State::kMalformed, 400, "only http:// URIs can be proxied without CONNECT");
    r.origin_form = OriginForm(h, "");
  }
  r.state = State::kParsed;
  r.body = RequestBody(h);
  r.opaque_after = FindHeader(h.headers, "upgrade") != nullptr;
  return r;
}

Sniff ClassifyConnection(std::string_view bytes, uint16_t /*port*/, bool explicit_proxy) {
  if (bytes.empty()) return Sniff{};
  if (explicit_proxy) return ExplicitProxy(bytes);
  HelloResult hello = ParseClientHello(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  switch (hello.kind) {
    case HelloResult::kNeedMore:
      return Sniff{};
    case HelloResult::kMalformed:
      return Malformed(Sniff::Kind::kTls, hello.reason);
    // No SNI: the connection has no name; the port's single listed host may take it.
    case HelloResult::kParsed:
      return Done(Sniff::Kind::kTls, hello.hello.sni, 0);
    case HelloResult::kNotTls:
      break;
  }
  // Servers skip empty lines before a request (RFC 9112 2.2); a parser that did not would take the request for a
  // protocol without a name, relayed unchecked. Nothing else begins with one: refused.
  if (bytes.front() == '\r' || bytes.front() == '\n')
    return Malformed(Sniff::Kind::kHttp, "a connection may not begin with an empty line");
  HeadResult head = ParseHttpHead(bytes);
  switch (head.kind) {
    case HeadResult::kNeedMore:
      return Sniff{};
    case HeadResult::kMalformed:
      return Malformed(Sniff::Kind::kHttp, head.reason);
    // The upstream port is the one the sandbox connected to, whatever the Host header says.
    case HeadResult::kParsed: {
      Sniff s = Done(Sniff::Kind::kHttp, head.head.host, 0);
      s.method = head.head.method;
      s.path = head.head.path;
      return s;
    }
    case HeadResult::kNotHttp:
      break;
  }
  return Done(Sniff::Kind::kUnknown, "", 0);
}

}  // namespace isb::egress
