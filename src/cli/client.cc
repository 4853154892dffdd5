// The CLI's HTTP/1.1 client: plain blocking sockets with poll timeouts, bounded reads, SSE parsed as it arrives.
#include "cli/client.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "base/ascii.h"
#include "base/fd.h"
#include "base/url_text.h"

namespace isb::cli {
namespace {

constexpr size_t kMaxChunkLine = 1024;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool HasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

std::string Seconds(std::chrono::milliseconds d) { return std::to_string((d.count() + 999) / 1000) + "s"; }

// The hint that goes with a failed connect: what to check, and the other way in.
std::string ConnectHint(const Endpoint& ep, int err) {
  if (!ep.unix_path.empty()) {
    if (err == EACCES || err == EPERM) {
      return "; the socket is only for the daemon's user: run isb as root, or use --url/ISB_URL with ISB_TOKEN";
    }
    return "; is `isb serve` running? (or set ISB_URL/--url)";
  }
  return "; is `isb serve` listening there? (or use the unix socket: --socket/ISB_SOCKET)";
}

Error ConnectError(const Endpoint& ep, int err) {
  return Error::Of(Code::kUnavailable, "cannot reach the isb daemon at " + ep.Describe() + ": " + std::strerror(err) +
                                           ConnectHint(ep, err));
}

// Waits until `fd` is ready for `events`; false on timeout.
Result<bool> WaitFor(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  for (;;) {
    int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::Sys("poll");
    return n > 0;
  }
}

Result<Fd> ConnectUnix(const Endpoint& ep) {
  sockaddr_un addr{};
  if (ep.unix_path.size() >= sizeof addr.sun_path) {
    return Error::Of(Code::kInvalidArgument, "unix socket path is too long (at most 107 bytes): " + ep.unix_path);
  }
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Error::Sys("socket");
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, ep.unix_path.c_str(), ep.unix_path.size() + 1);
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return ConnectError(ep, errno);
  return fd;
}

// Tries each address in turn; the error reported is the last one's.
Result<Fd> ConnectTcp(const Endpoint& ep, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  std::string port = std::to_string(ep.port);
  if (int rc = ::getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &list); rc != 0) {
    return Error::Of(Code::kUnavailable, "cannot reach the isb daemon at " + ep.Describe() + ": cannot resolve '" +
                                             ep.host + "': " + ::gai_strerror(rc));
  }
  int last_err = ECONNREFUSED;
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!fd.valid()) {
      last_err = errno;
      continue;
    }
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last_err = errno;
        continue;
      }
      auto ready = WaitFor(fd.get(), POLLOUT, timeout);
      if (!ready.ok() || !*ready) {
        last_err = ready.ok() ? ETIMEDOUT : ready.error().err;
        continue;
      }
      int so_error = 0;
      socklen_t len = sizeof so_error;
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error != 0) {
        last_err = so_error;
        continue;
      }
    }
    ::freeaddrinfo(list);
    return fd;
  }
  ::freeaddrinfo(list);
  return ConnectError(ep, last_err);
}

// One connection's byte stream: everything read waits at most the idle timeout.
class Conn {
 public:
  Conn(Fd fd, std::chrono::milliseconds idle, std::string where)
      : fd_(std::move(fd)), idle_(idle), where_(std::move(where)) {
    // Non-blocking throughout so that poll alone decides how long anything waits.
    int flags = ::fcntl(fd_.get(), F_GETFL);
    if (flags >= 0) ::fcntl(fd_.get(), F_SETFL, flags | O_NONBLOCK);
  }

  Status WriteAll(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        ISB_ASSIGN_OR_RETURN(bool ready, WaitFor(fd_.get(), POLLOUT, idle_));
        if (!ready) return TimedOut();
        continue;
      }
      return Error{"sending the request to the isb daemon at " + where_ + ": " + std::strerror(errno), errno,
                   Code::kUnavailable};
    }
    return {};
  }

  // Reads what is available into the buffer; false at end of stream.
  Result<bool> Fill() {
    Compact();
    char tmp[65536];
    for (;;) {
      ssize_t n = ::recv(fd_.get(), tmp, sizeof tmp, 0);
      if (n > 0) {
        buf_.append(tmp, static_cast<size_t>(n));
        return true;
      }
      if (n == 0) return false;
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        ISB_ASSIGN_OR_RETURN(bool ready, WaitFor(fd_.get(), POLLIN, idle_));
        if (!ready) return TimedOut();
        continue;
      }
      return Error{"reading the isb daemon's answer from " + where_ + ": " + std::strerror(errno), errno,
                   Code::kUnavailable};
    }
  }

  std::string_view Pending() const { return std::string_view(buf_).substr(pos_); }
  void Consume(size_t n) { pos_ += n; }
  const std::string& where() const { return where_; }

 private:
  void Compact() {
    if (pos_ > 0 && pos_ >= buf_.size() / 2) {
      buf_.erase(0, pos_);
      pos_ = 0;
    }
  }
  Error TimedOut() const {
    return Error::Of(Code::kTimeout, "the isb daemon at " + where_ + " sent nothing for " + Seconds(idle_) +
                                         "; it may be overloaded or stuck (see its log)");
  }

  Fd fd_;
  std::chrono::milliseconds idle_;
  std::string where_;
  std::string buf_;
  size_t pos_ = 0;
};

Error Malformed(const Conn& c, const std::string& what) {
  return Error::Of(Code::kInternal, "malformed HTTP response from the isb daemon at " + c.where() + ": " + what);
}

Error ClosedEarly(const Conn& c, const std::string& when) {
  return Error::Of(Code::kUnavailable,
                   "the isb daemon at " + c.where() + " closed the connection " + when + "; see its log");
}

// Reads one line ending in LF (CR before it dropped), of at most `max` bytes.
Result<std::string> ReadLine(Conn& c, size_t max, const char* what) {
  for (;;) {
    std::string_view p = c.Pending();
    size_t nl = p.find('\n');
    if (nl != std::string_view::npos) {
      if (nl > max) return Malformed(c, std::string(what) + " is too long");
      std::string line(p.substr(0, nl));
      if (!line.empty() && line.back() == '\r') line.pop_back();
      c.Consume(nl + 1);
      return line;
    }
    if (p.size() > max) return Malformed(c, std::string(what) + " is too long");
    ISB_ASSIGN_OR_RETURN(bool more, c.Fill());
    if (!more) return ClosedEarly(c, std::string("in the middle of the ") + what);
  }
}

struct Head {
  int status = 0;
  Headers headers;
};

Result<Head> ParseHead(const Conn& c, std::string_view text) {
  Head head;
  size_t eol = text.find('\n');
  std::string_view status_line = Trim(text.substr(0, eol));
  if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12 || status_line[8] != ' ') {
    return Malformed(c, "bad status line '" + std::string(status_line.substr(0, 80)) + "'");
  }
  std::string_view code = status_line.substr(9, 3);
  auto [end, ec] = std::from_chars(code.data(), code.data() + 3, head.status);
  if (ec != std::errc() || end != code.data() + 3 || head.status < 100 || head.status > 599 ||
      (status_line.size() > 12 && status_line[12] != ' ')) {
    return Malformed(c, "bad status code in '" + std::string(status_line.substr(0, 80)) + "'");
  }
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = Trim(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Malformed(c, "bad header line '" + std::string(line.substr(0, 80)) + "'");
    }
    head.headers.emplace_back(std::string(line.substr(0, colon)), std::string(Trim(line.substr(colon + 1))));
  }
  return head;
}

// Reads a status line and headers, skipping interim 1xx answers.
Result<Head> ReadHead(Conn& c, size_t max_header_bytes) {
  for (;;) {
    size_t end = std::string_view::npos, sep = 0;
    for (;;) {
      std::string_view p = c.Pending();
      size_t crlf = p.find("\r\n\r\n"), lf = p.find("\n\n");
      end = std::min(crlf, lf);
      sep = end == crlf ? 4 : 2;
      if (end != std::string_view::npos) break;
      if (p.size() > max_header_bytes) break;
      ISB_ASSIGN_OR_RETURN(bool more, c.Fill());
      if (!more) {
        return ClosedEarly(c, c.Pending().empty() ? "without answering" : "in the middle of the response headers");
      }
    }
    if (end == std::string_view::npos || end > max_header_bytes) {
      return Malformed(c, "the response headers are larger than " + std::to_string(max_header_bytes) + " bytes");
    }
    std::string text(c.Pending().substr(0, end));
    c.Consume(end + sep);
    ISB_ASSIGN_OR_RETURN(Head head, ParseHead(c, text));
    if (head.status >= 200 || head.status == 101) return head;
  }
}

std::string HeaderOf(const Headers& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoreCase(k, name)) return v;
  }
  return "";
}

// Where the body's bytes go; returns false to stop reading early.
using BodySink = std::function<Result<bool>(std::string_view)>;

Status ReadExact(Conn& c, uint64_t n, const BodySink& sink, bool* stopped) {
  while (n > 0) {
    if (c.Pending().empty()) {
      ISB_ASSIGN_OR_RETURN(bool more, c.Fill());
      if (!more) return ClosedEarly(c, "in the middle of the response body");
    }
    std::string_view piece = c.Pending().substr(0, static_cast<size_t>(std::min<uint64_t>(n, c.Pending().size())));
    c.Consume(piece.size());
    n -= piece.size();
    ISB_ASSIGN_OR_RETURN(bool go_on, sink(piece));
    if (!go_on) {
      *stopped = true;
      return {};
    }
  }
  return {};
}

Status ReadChunked(Conn& c, size_t max_header_bytes, const BodySink& sink) {
  bool stopped = false;
  for (;;) {
    ISB_ASSIGN_OR_RETURN(std::string line, ReadLine(c, kMaxChunkLine, "chunk header"));
    std::string_view hex = Trim(std::string_view(line).substr(0, line.find(';')));
    uint64_t size = 0;
    auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), size, 16);
    if (hex.empty() || hex.size() > 15 || ec != std::errc() || end != hex.data() + hex.size()) {
      return Malformed(c, "bad chunk size '" + std::string(hex.substr(0, 20)) + "'");
    }
    if (size == 0) break;
    ISB_TRY(ReadExact(c, size, sink, &stopped));
    if (stopped) return {};
    ISB_ASSIGN_OR_RETURN(std::string after, ReadLine(c, 2, "chunk end"));
    if (!after.empty()) return Malformed(c, "chunk data is longer than its size");
  }
  // Trailers, if any, end with an empty line; a close right after the last chunk is fine too.
  for (size_t total = 0;;) {
    if (c.Pending().empty()) {
      ISB_ASSIGN_OR_RETURN(bool more, c.Fill());
      if (!more) return {};
    }
    ISB_ASSIGN_OR_RETURN(std::string trailer, ReadLine(c, max_header_bytes, "trailer"));
    total += trailer.size();
    if (trailer.empty()) return {};
    if (total > max_header_bytes) return Malformed(c, "the trailers are too large");
  }
}

Status ReadUntilClose(Conn& c, const BodySink& sink) {
  for (;;) {
    if (!c.Pending().empty()) {
      std::string_view piece = c.Pending();
      c.Consume(piece.size());
      ISB_ASSIGN_OR_RETURN(bool go_on, sink(piece));
      if (!go_on) return {};
    }
    ISB_ASSIGN_OR_RETURN(bool more, c.Fill());
    if (!more) return {};
  }
}

Status ReadBody(Conn& c, const HttpRequest& req, const Head& head, const ClientLimits& limits, bool streaming,
                const BodySink& sink) {
  if (req.method == "HEAD" || head.status == 204 || head.status == 304) return {};
  std::string te = HeaderOf(head.headers, "Transfer-Encoding");
  if (!te.empty()) {
    if (!EqualsIgnoreCase(Trim(te), "chunked")) return Malformed(c, "unsupported Transfer-Encoding '" + te + "'");
    return ReadChunked(c, limits.max_header_bytes, sink);
  }
  std::string cl;
  for (const auto& [k, v] : head.headers) {
    if (!EqualsIgnoreCase(k, "Content-Length")) continue;
    if (!cl.empty() && cl != v) return Malformed(c, "conflicting Content-Length headers");
    cl = v;
  }
  if (cl.empty()) return ReadUntilClose(c, sink);
  uint64_t length = 0;
  auto [end, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), length);
  if (ec != std::errc() || end != cl.data() + cl.size()) return Malformed(c, "bad Content-Length '" + cl + "'");
  if (!streaming && length > limits.max_body_bytes) {
    return Error::Of(Code::kTooLarge, "the isb daemon's response is " + std::to_string(length) +
                                          " bytes; refusing more than " + std::to_string(limits.max_body_bytes));
  }
  bool stopped = false;
  return ReadExact(c, length, sink, &stopped);
}

Result<std::string> RequestBytes(const Endpoint& ep, const HttpRequest& req) {
  if (req.method.empty() || HasLineBreak(req.method) || req.method.find(' ') != std::string::npos ||
      req.target.empty() || req.target[0] != '/' || HasLineBreak(req.target) ||
      req.target.find(' ') != std::string::npos) {
    return Error::Of(Code::kInvalidArgument, "invalid HTTP request line: " + req.method + " " + req.target);
  }
  std::string host = ep.unix_path.empty() ? (ep.host.find(':') != std::string::npos ? "[" + ep.host + "]" : ep.host) +
                                                ":" + std::to_string(ep.port)
                                          : "localhost";
  std::string out = req.method + " " + req.target + " HTTP/1.1\r\nHost: " + host + "\r\n";
  bool has_agent = false;
  for (const auto& [k, v] : req.headers) {
    if (k.empty() || HasLineBreak(k) || HasLineBreak(v) || k.find(':') != std::string::npos) {
      return Error::Of(Code::kInvalidArgument, "invalid HTTP header '" + k + "': no line breaks or colons allowed");
    }
    if (EqualsIgnoreCase(k, "Host") || EqualsIgnoreCase(k, "Content-Length") || EqualsIgnoreCase(k, "Connection") ||
        EqualsIgnoreCase(k, "Transfer-Encoding")) {
      continue;
    }
    has_agent = has_agent || EqualsIgnoreCase(k, "User-Agent");
    out += k + ": " + v + "\r\n";
  }
  if (!has_agent) out += "User-Agent: isb-cli\r\n";
  out += "Connection: close\r\n";
  if (!req.body.empty() || req.method == "POST" || req.method == "PUT") {
    out += "Content-Length: " + std::to_string(req.body.size()) + "\r\n";
  }
  out += "\r\n";
  return out;
}

}  // namespace

std::string Endpoint::Describe() const {
  if (!unix_path.empty()) return "unix:" + unix_path;
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return "http://" + h + ":" + std::to_string(port);
}

Result<Endpoint> ParseUrl(std::string_view url) {
  Endpoint ep;
  const std::string shown = WithoutUserInfo(url);
  auto bad = [&](const std::string& why) {
    return Error::Of(Code::kInvalidArgument, "invalid daemon URL '" + shown + "': " + why +
                                                 " (use http://HOST:PORT or unix:/path/to/isb.sock)");
  };
  if (url.starts_with("unix:")) {
    std::string_view path = url.substr(5);
    if (path.starts_with("//")) path.remove_prefix(2);
    if (path.empty()) return bad("no socket path");
    ep.unix_path = std::string(path);
    return ep;
  }
  if (url.starts_with("https://")) {
    return bad("https is not supported; the daemon speaks plain HTTP on loopback or a tailnet address");
  }
  if (!url.starts_with("http://")) return bad("unknown scheme");
  std::string_view rest = url.substr(7);
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
    if (rest.substr(slash) != "/") return bad("a path is not supported");
    rest = rest.substr(0, slash);
  }
  if (rest.find('@') != std::string_view::npos) return bad("credentials in the URL are not supported; use ISB_TOKEN");
  std::string_view port_text;
  if (rest.starts_with("[")) {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return bad("unclosed '['");
    ep.host = std::string(rest.substr(1, close - 1));
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad("junk after ']'");
      port_text = after.substr(1);
    }
  } else {
    size_t colon = rest.find(':');
    ep.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port_text = rest.substr(colon + 1);
  }
  if (ep.host.empty()) return bad("no host");
  ep.port = 80;
  if (!port_text.empty() || rest.ends_with(":")) {
    unsigned port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
        port > 65535) {
      return bad("bad port");
    }
    ep.port = static_cast<uint16_t>(port);
  }
  return ep;
}

std::string HttpResponse::Header(std::string_view name) const { return HeaderOf(headers, name); }

Status SseParser::Feed(std::string_view bytes, const SseHandler& handler, bool* stop) {
  for (size_t i = 0; i < bytes.size() && !*stop; ++i) {
    char ch = bytes[i];
    if (after_cr_) {
      after_cr_ = false;
      if (ch == '\n') continue;
    }
    if (ch == '\r' || ch == '\n') {
      after_cr_ = ch == '\r';
      Line(line_, handler, stop);
      line_.clear();
      continue;
    }
    line_.push_back(ch);
    if (line_.size() + data_.size() > max_event_bytes_) {
      return Error::Of(Code::kTooLarge, "an event from the isb daemon is larger than " +
                                            std::to_string(max_event_bytes_) + " bytes; refused");
    }
  }
  return {};
}

void SseParser::Line(std::string_view line, const SseHandler& handler, bool* stop) {
  if (line.empty()) {
    if (data_seen_) {
      if (!data_.empty() && data_.back() == '\n') data_.pop_back();
      SseEvent ev{event_.empty() ? "message" : event_, std::move(data_)};
      if (!handler(ev)) *stop = true;
    }
    event_.clear();
    data_.clear();
    data_seen_ = false;
    return;
  }
  if (line[0] == ':') return;  // a comment, such as a keep-alive
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (value.starts_with(" ")) value.remove_prefix(1);
  if (field == "event") {
    event_ = std::string(value);
  } else if (field == "data") {
    data_.append(value).push_back('\n');
    data_seen_ = true;
  }
  // "id" and "retry" matter only to reconnecting browsers.
}

HttpClient::HttpClient(Endpoint endpoint, ClientLimits limits) : endpoint_(std::move(endpoint)), limits_(limits) {}

Result<HttpResponse> HttpClient::Send(const HttpRequest& request) const { return Exchange(request, nullptr); }

Result<HttpResponse> HttpClient::SendStreaming(const HttpRequest& request, const SseHandler& on_event) const {
  return Exchange(request, &on_event);
}

Result<HttpResponse> HttpClient::Exchange(const HttpRequest& request, const SseHandler* on_event) const {
  ISB_ASSIGN_OR_RETURN(std::string head_bytes, RequestBytes(endpoint_, request));
  Result<Fd> fd = endpoint_.unix_path.empty() ? ConnectTcp(endpoint_, limits_.connect_timeout) : ConnectUnix(endpoint_);
  if (!fd.ok()) return fd.error();
  Conn conn(std::move(*fd), limits_.idle_timeout, endpoint_.Describe());
  Status sent = conn.WriteAll(head_bytes);
  if (sent.ok()) sent = conn.WriteAll(request.body);
  // A daemon that refuses the request (a body too large, say) may answer and close before reading all of it:
  // its answer says more than the broken pipe, so read it if there is one.
  Result<Head> head = ReadHead(conn, limits_.max_header_bytes);
  if (!sent.ok() && !head.ok()) return sent.error();
  if (!head.ok()) return head.error();

  HttpResponse resp;
  resp.status = head->status;
  resp.headers = head->headers;
  bool sse = on_event != nullptr && resp.status / 100 == 2 &&
             resp.Header("Content-Type").find("text/event-stream") != std::string::npos;
  if (sse) {
    SseParser parser(limits_.max_body_bytes);
    bool stop = false;
    BodySink feed = [&](std::string_view bytes) -> Result<bool> {
      ISB_TRY(parser.Feed(bytes, *on_event, &stop));
      return !stop;
    };
    // An event cut off by the end of the stream is dropped, as SSE requires: callers see the missing final event.
    ISB_TRY(ReadBody(conn, request, *head, limits_, true, feed));
    return resp;
  }
  BodySink collect = [&](std::string_view bytes) -> Result<bool> {
    if (resp.body.size() + bytes.size() > limits_.max_body_bytes) {
      return Error::Of(Code::kTooLarge, "the isb daemon's response is larger than " +
                                            std::to_string(limits_.max_body_bytes) + " bytes; refused");
    }
    resp.body.append(bytes);
    return true;
  };
  ISB_TRY(ReadBody(conn, request, *head, limits_, false, collect));
  return resp;
}

}  // namespace isb::cli
