#include "egress/http_client.h"

#include "base/url_text.h"
#include "egress/address.h"
#include "egress/host_port.h"
#include "egress/client_response.h"

namespace isb::egress {
namespace {

Error BadUrl(std::string_view url, const std::string& why) {
  return Error::Of(Code::kInvalidArgument, "URL '" + Printable(WithoutUserInfo(url)) + "' " + why);
}

// The Host header's value: the host, bracketed when IPv6, with the port when it is not the scheme's default.
std::string HostHeader(const HttpUrl& url) {
  std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  if (url.port != (url.tls ? 443 : 80)) host += ":" + std::to_string(url.port);
  return host;
}

}  // namespace

Result<HttpUrl> ParseHttpUrl(std::string_view url) {
  HttpUrl out;
  std::string_view rest;
  if (url.starts_with("https://")) {
    out.tls = true;
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else {
    return BadUrl(url, "must start with http:// or https://");
  }
  size_t slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  out.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (out.target.front() == '?') out.target.insert(0, "/");
  if (out.target.find_first_of(std::string_view(" \t\r\n#\0", 6)) != std::string::npos)
    return BadUrl(url, "has a space, a control character or a fragment in its path");
  if (authority.find('@') != std::string_view::npos) return BadUrl(url, "must not carry user information");
  std::optional<HostPort> hp = SplitHostPort(authority);
  if (!hp || hp->host.empty()) return BadUrl(url, "has no valid host");
  out.port = out.tls ? 443 : 80;
  if (hp->port) {
    std::optional<uint16_t> port = ParsePort(*hp->port);
    if (!port) return BadUrl(url, "has an invalid port");
    out.port = *port;
  }
  if (ParseIpAddress(hp->host).ok()) {
    out.host = std::string(hp->host);
  } else {
    Result<std::string> name = NormalizeHostName(hp->host);
    if (!name.ok()) return BadUrl(url, "has an invalid host: it " + name.error().message);
    out.host = *name;
  }
  return out;
}

Result<HttpReply> HttpPost(const Dialer& dialer, const TlsTrust* trust, const HttpUrl& url,
                           const HttpPostRequest& request, Deadline deadline) {
  if (url.tls && trust == nullptr) return Error::Of(Code::kInternal, "https needs a TLS trust store");
  ISB_ASSIGN_OR_RETURN(Fd fd, dialer.Dial(url.host, url.port));
  if (std::chrono::steady_clock::now() >= deadline) return Error::Of(Code::kTimeout, "connecting timed out");
  Result<Stream> stream =
      url.tls ? Stream::Tls(std::move(fd), *trust, url.host, deadline) : Stream::Plain(std::move(fd));
  if (!stream.ok()) return stream.error();

  std::string head = "POST " + url.target + " HTTP/1.1\r\nHost: " + HostHeader(url) + "\r\n";
  for (const auto& [name, value] : request.headers) head += name + ": " + value + "\r\n";
  head += "Content-Length: " + std::to_string(request.body.size()) + "\r\nConnection: close\r\n\r\n";
  ISB_TRY(stream->WriteAll(head + request.body, deadline));

  std::string received;
  bool eof = false;
  for (;;) {
    ResponseResult r = ParseHttpResponse(received, eof, request.max_response_body);
    if (r.kind == ResponseResult::kDone) return HttpReply{r.status, std::move(r.body)};
    if (r.kind == ResponseResult::kMalformed)
      return Error::Of(Code::kUnavailable, "malformed HTTP response: " + r.reason);
    char buf[16384];
    ISB_ASSIGN_OR_RETURN(size_t n, stream->Read(buf, sizeof buf, deadline));
    if (n == 0) eof = true;
    received.append(buf, n);
  }
}

}  // namespace isb::egress
