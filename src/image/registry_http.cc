// The registry client's GET: connect (dialer or allow-list), TLS, request, response head (egress/http_response.h),
// body framed by Content-Length, chunks (egress/http_body.h) or the connection's end.
#include "image/registry_http.h"

#include "egress/address.h"
#include "egress/host_port.h"
#include "egress/http_body.h"
#include "egress/http_response.h"

namespace isb::image {
namespace {

using Clock = std::chrono::steady_clock;

// A host as a rule and a URL both hold it: an address in one spelling, a name normalized.
Result<std::string> CanonicalHost(std::string_view host) {
  Result<egress::IpAddress> address = egress::ParseIpAddress(host);
  if (address.ok()) return address->ToString();
  return egress::NormalizeHostName(host);
}

bool Matches(const std::vector<HostRule>& rules, const egress::HttpUrl& url) {
  Result<std::string> host = CanonicalHost(url.host);
  if (!host.ok()) return false;
  for (const HostRule& r : rules) {
    if (r.host == *host && (!r.port || *r.port == url.port)) return true;
  }
  return false;
}

std::string HostHeader(const egress::HttpUrl& url) {
  bool v6 = url.host.find(':') != std::string::npos;
  std::string host = v6 ? "[" + url.host + "]" : url.host;
  if (url.port != (url.tls ? 443 : 80)) host += ":" + std::to_string(url.port);
  return host;
}

Error Cut(std::string_view peer, const egress::HttpUrl& url, const std::string& why) {
  return Error::Of(Code::kUnavailable, std::string(peer) + " " + HostPortText(url) + ": " + why);
}

// Hands each piece of a body to `consume` until the body ends, reading more from `stream` as needed.
class BodyReader {
 public:
  BodyReader(egress::Stream& stream, std::string_view peer, const egress::HttpUrl& url,
             std::function<egress::Deadline()> next_deadline)
      : stream_(stream), peer_(peer), url_(url), next_deadline_(std::move(next_deadline)) {}

  Status Read(const egress::ResponseHead& head, std::string leftover, const BodySink& consume) {
    egress::BodyFraming framing = egress::ResponseBody("GET", head);
    switch (framing.kind) {
      case egress::BodyFraming::kNone:
        return {};
      case egress::BodyFraming::kLength:
        return ReadLength(framing.length, std::move(leftover), consume);
      case egress::BodyFraming::kChunked:
        return ReadChunked(std::move(leftover), consume);
      case egress::BodyFraming::kUntilClose:
        if (head.Find("transfer-encoding") != nullptr)
          return Cut(peer_, url_, "the response has a transfer coding other than chunked");
        return ReadUntilClose(std::move(leftover), consume);
    }
    return Cut(peer_, url_, "unknown body framing");
  }

 private:
  Result<size_t> More() { return stream_.Read(buf_, sizeof buf_, next_deadline_()); }

  Status ReadLength(uint64_t left, std::string leftover, const BodySink& consume) {
    std::string_view piece(leftover);
    if (piece.size() > left) piece = piece.substr(0, left);
    if (!piece.empty()) ISB_TRY(consume(piece));
    left -= piece.size();
    while (left > 0) {
      ISB_ASSIGN_OR_RETURN(size_t n, More());
      if (n == 0) return Cut(peer_, url_, "the connection closed inside the response body");
      size_t use = static_cast<size_t>(std::min<uint64_t>(n, left));
      ISB_TRY(consume(std::string_view(buf_, use)));
      left -= use;
    }
    return {};
  }

  Status ReadChunked(std::string leftover, const BodySink& consume) {
    egress::ChunkedScanner scanner;
    std::string data;
    std::string_view in(leftover);
    for (;;) {
      data.clear();
      egress::ChunkedScanner::Step step = scanner.Feed(in, &data);
      if (step.state == egress::ChunkedScanner::State::kMalformed)
        return Cut(peer_, url_, "malformed chunked body: " + step.reason);
      if (!data.empty()) ISB_TRY(consume(data));
      if (step.state == egress::ChunkedScanner::State::kDone) return {};
      ISB_ASSIGN_OR_RETURN(size_t n, More());
      if (n == 0) return Cut(peer_, url_, "the connection closed inside a chunked body");
      in = std::string_view(buf_, n);
    }
  }

  Status ReadUntilClose(std::string leftover, const BodySink& consume) {
    if (!leftover.empty()) ISB_TRY(consume(leftover));
    for (;;) {
      ISB_ASSIGN_OR_RETURN(size_t n, More());
      if (n == 0) return {};
      ISB_TRY(consume(std::string_view(buf_, n)));
    }
  }

  egress::Stream& stream_;
  std::string_view peer_;
  const egress::HttpUrl& url_;
  std::function<egress::Deadline()> next_deadline_;
  char buf_[65536];
};

}  // namespace

std::string HostPortText(const egress::HttpUrl& url) {
  bool v6 = url.host.find(':') != std::string::npos;
  return (v6 ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port);
}

std::vector<std::string> HttpGetResponse::All(std::string_view name) const {
  std::vector<std::string> out;
  for (const egress::HttpHeader& h : headers) {
    if (h.name.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i)
      same = std::tolower(static_cast<unsigned char>(h.name[i])) == std::tolower(static_cast<unsigned char>(name[i]));
    if (same) out.push_back(h.value);
  }
  return out;
}

Result<HostRule> ParseHostRule(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Error::Of(Code::kInvalidArgument,
                     "host '" + egress::Printable(text) + "' " + why + " (expected HOST or HOST:PORT)");
  };
  std::optional<egress::HostPort> hp = egress::SplitHostPort(text);
  if (!hp || hp->host.empty()) return bad("has no valid host");
  HostRule rule;
  if (hp->port) {
    rule.port = egress::ParsePort(*hp->port);
    if (!rule.port) return bad("has an invalid port");
  }
  Result<std::string> host = CanonicalHost(hp->host);
  if (!host.ok()) return bad("has an invalid host");
  rule.host = *host;
  return rule;
}

Status RegistryTransport::CheckScheme(const egress::HttpUrl& url) const {
  if (url.tls || Matches(options_.plain_http, url)) return {};
  return Error::Of(Code::kForbidden, options_.peer + " " + HostPortText(url) +
                                         ": plain http is refused; use https, or allow plain http for this host");
}

egress::Deadline RegistryTransport::StepDeadline(egress::Deadline overall) const {
  return std::min(overall, Clock::now() + options_.step_timeout);
}

Result<Fd> RegistryTransport::Connect(const egress::HttpUrl& url) const {
  if (!Matches(options_.allowed_private, url)) {
    Result<Fd> fd = options_.dialer->Dial(url.host, url.port);
    if (fd.ok() || fd.error().code != Code::kForbidden) return fd;
    Error refused = fd.error();
    refused.message += options_.allow_hint;
    return refused;
  }
  // An allowed host is dialled at whatever address it has: the admin named it, so its range is not checked.
  std::vector<egress::IpAddress> addresses;
  if (Result<egress::IpAddress> literal = egress::ParseIpAddress(url.host); literal.ok()) {
    addresses.push_back(*literal);
  } else {
    ISB_ASSIGN_OR_RETURN(addresses, egress::ResolveSystem(url.host));
  }
  Error last = Error::Of(Code::kUnavailable, "no address");
  for (const egress::IpAddress& a : addresses) {
    Result<Fd> fd = egress::ConnectTcp({a, url.port}, options_.step_timeout);
    if (fd.ok()) return fd;
    last = fd.error();
  }
  return last;
}

Result<HttpGetResponse> RegistryTransport::Get(const egress::HttpUrl& url,
                                               const std::vector<egress::HttpHeader>& headers, const BodySink* sink,
                                               size_t max_kept_body, egress::Deadline overall) const {
  bool sink_failed = false;
  BodySink tracked = [&](std::string_view piece) {
    Status s = (*sink)(piece);
    sink_failed = !s.ok();
    return s;
  };
  Result<HttpGetResponse> r = Exchange(url, headers, sink != nullptr ? &tracked : nullptr, max_kept_body, overall);
  // The dialer's and the stream's errors say what failed; which registry it was is said here once. The sink's own
  // errors (a blob over its size) name their blob already.
  if (!r.ok() && !sink_failed && !r.error().message.starts_with(options_.peer + " ")) {
    Error e = r.error();
    e.message = options_.peer + " " + HostPortText(url) + ": " + e.message;
    return e;
  }
  return r;
}

Result<HttpGetResponse> RegistryTransport::Exchange(const egress::HttpUrl& url,
                                                    const std::vector<egress::HttpHeader>& headers,
                                                    const BodySink* sink, size_t max_kept_body,
                                                    egress::Deadline overall) const {
  ISB_TRY(CheckScheme(url));
  if (url.tls && options_.trust == nullptr) return Error::Of(Code::kInternal, "https needs a TLS trust store");
  ISB_ASSIGN_OR_RETURN(Fd fd, Connect(url));
  if (Clock::now() >= overall)
    return Error::Of(Code::kTimeout, options_.peer + " " + HostPortText(url) + ": timed out");
  Result<egress::Stream> stream =
      url.tls ? egress::Stream::Tls(std::move(fd), *options_.trust, url.host, StepDeadline(overall))
              : egress::Stream::Plain(std::move(fd));
  if (!stream.ok()) return stream.error();

  std::string request = "GET " + url.target + " HTTP/1.1\r\nHost: " + HostHeader(url) + "\r\n";
  for (const egress::HttpHeader& h : headers) request += h.name + ": " + h.value + "\r\n";
  request += "User-Agent: isb\r\nConnection: close\r\n\r\n";
  ISB_TRY(stream->WriteAll(request, StepDeadline(overall)));

  std::string received;
  egress::ResponseHead head;
  for (bool parsed = false; !parsed;) {
    egress::ResponseHeadResult r = egress::ParseResponseHead(received);
    if (r.kind == egress::ResponseHeadResult::kMalformed)
      return Cut(options_.peer, url, "malformed response head: " + r.reason);
    if (r.kind == egress::ResponseHeadResult::kParsed && r.head.status >= 200) {
      head = std::move(r.head);
      parsed = true;
      continue;
    }
    if (r.kind == egress::ResponseHeadResult::kParsed) {  // an interim 1xx answer
      received.erase(0, r.head.size);
      continue;
    }
    char buf[16384];
    ISB_ASSIGN_OR_RETURN(size_t n, stream->Read(buf, sizeof buf, StepDeadline(overall)));
    if (n == 0) return Cut(options_.peer, url, "the connection closed before a response");
    received.append(buf, n);
  }
  HttpGetResponse response{head.status, head.headers, {}};
  received.erase(0, head.size);

  bool to_sink = sink != nullptr && head.status >= 200 && head.status < 300;
  BodySink keep = [&](std::string_view piece) -> Status {
    if (response.body.size() + piece.size() > max_kept_body)
      return Error::Of(Code::kTooLarge, options_.peer + " " + HostPortText(url) + ": response body over " +
                                            std::to_string(max_kept_body) + " bytes");
    response.body.append(piece);
    return {};
  };
  BodyReader reader(*stream, options_.peer, url, [&] { return StepDeadline(overall); });
  ISB_TRY(reader.Read(head, std::move(received), to_sink ? *sink : keep));
  return response;
}

}  // namespace isb::image
