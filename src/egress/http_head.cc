// HTTP/1.x request-head parsing, line by line over the bytes received so far, strict where parsers are known to
// disagree (line ends, whitespace, duplicate or conflicting framing headers, a Host that differs from the target).
#include "egress/http_head.h"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>

#include "base/ascii.h"
#include "net/host_name.h"

namespace isb::egress {
namespace {

constexpr size_t kMaxMethod = 20;
constexpr std::string_view kTooManyFields = "more than 100 header fields";

struct Refusal {
  int status;
  std::string reason;
};
using Problem = std::optional<Refusal>;

Problem Bad(std::string reason, int status = 400) { return Refusal{status, std::move(reason)}; }

bool MethodByte(char c) { return (c >= 'A' && c <= 'Z') || c == '-' || c == '_'; }

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsLower(std::string_view a, std::string_view lower, bool underscore_as_dash = false) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = underscore_as_dash && a[i] == '_' ? '-' : Lower(a[i]);
    if (c != lower[i]) return false;
  }
  return true;
}

std::string_view TrimWhitespace(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// True while `bytes` can still be the start of "METHOD SP".
bool LooksLikeMethod(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size() && i <= kMaxMethod; ++i) {
    if (bytes[i] == ' ') return i > 0;
    if (!MethodByte(bytes[i])) return false;
  }
  return bytes.size() <= kMaxMethod;
}

struct Authority {
  std::string host;
  bool is_address = false;
  uint16_t port = 0;
  bool port_explicit = false;
};

Problem ParsePort(std::string_view text, Authority& out) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || text.size() > 5 || ec != std::errc() || end != text.data() + text.size() || value == 0 ||
      value > 65535) {
    return Bad("port is not a number from 1 to 65535");
  }
  out.port = static_cast<uint16_t>(value);
  out.port_explicit = true;
  return {};
}

// host[:port] as in Host and the authority of a target; no user info.
Problem ParseAuthority(std::string_view text, Authority& out) {
  if (text.find('@') != std::string_view::npos) return Bad("user info (@) in the authority");
  std::string_view host = text, port;
  bool has_port = false;
  if (text.starts_with('[')) {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return Bad("IPv6 literal without its closing bracket");
    host = text.substr(1, close - 1);
    std::string literal(host);
    in6_addr v6;
    if (inet_pton(AF_INET6, literal.c_str(), &v6) != 1) return Bad("bracketed host is not an IPv6 address");
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return Bad("bytes after an IPv6 literal");
    has_port = !rest.empty();
    if (has_port) port = rest.substr(1);
    out.is_address = true;
  } else if (size_t colon = text.find(':'); colon != std::string_view::npos) {
    if (text.find(':', colon + 1) != std::string_view::npos) return Bad("more than one ':' in the authority");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    has_port = true;
  }
  if (has_port) {
    if (Problem p = ParsePort(port, out)) return p;
  }
  std::string lower(host);
  for (char& c : lower) c = Lower(c);
  if (out.is_address || net::IsAddressLiteral(lower)) {
    out.is_address = true;
    out.host = std::move(lower);
    return {};
  }
  auto name = net::CanonicalHostName(host);
  if (!name.ok()) return Bad(name.error().message);
  out.host = std::move(*name);
  return {};
}

Problem Prefix(std::string prefix, Problem p) {
  if (p) p->reason = prefix + p->reason;
  return p;
}

// Sets form, scheme, path and the target's authority (when it has one) from head.target.
Problem ParseTarget(HttpHead& head, std::optional<Authority>& authority) {
  std::string_view t = head.target;
  for (char c : t) {
    if (c <= 0x20 || c >= 0x7f) return Bad("request target contains a control, space or non-ASCII byte");
  }
  if (t.find('#') != std::string_view::npos) return Bad("request target contains a fragment (#)");
  if (head.connect) {
    head.form = TargetForm::kAuthority;
    authority.emplace();
    if (Problem p = Prefix("request target: ", ParseAuthority(t, *authority))) return p;
    if (!authority->port_explicit) return Bad("CONNECT target has no port");
    return {};
  }
  if (t == "*") {
    if (head.method != "OPTIONS") return Bad("asterisk-form target is only for OPTIONS");
    head.form = TargetForm::kAsterisk;
    return {};
  }
  if (t.starts_with('/')) {
    head.form = TargetForm::kOrigin;
    head.path = t;
    return {};
  }
  size_t scheme_end = t.find("://");
  if (scheme_end == std::string_view::npos) {
    return Bad("request target is not in origin, absolute, authority or asterisk form");
  }
  std::string scheme(t.substr(0, scheme_end));
  for (char& c : scheme) c = Lower(c);
  if (scheme != "http" && scheme != "https") return Bad("absolute-form target with a scheme other than http or https");
  head.form = TargetForm::kAbsolute;
  head.scheme = scheme;
  std::string_view rest = t.substr(scheme_end + 3);
  size_t path_start = rest.find_first_of("/?");
  head.path = path_start == std::string_view::npos ? "/" : std::string(rest.substr(path_start));
  if (head.path.front() == '?') head.path.insert(0, "/");
  authority.emplace();
  authority->port = scheme == "https" ? 443 : 80;
  return Prefix("request target: ", ParseAuthority(rest.substr(0, path_start), *authority));
}

Problem ParseRequestLine(std::string_view line, HttpHead& head, std::optional<Authority>& authority) {
  size_t sp1 = line.find(' ');
  size_t sp2 = line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      line.find(' ', sp2 + 1) != std::string_view::npos || sp2 == sp1 + 1) {
    return Bad("request line is not METHOD SP TARGET SP VERSION");
  }
  head.method = line.substr(0, sp1);
  head.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (version == "HTTP/1.1" || version == "HTTP/1.0") {
    head.minor_version = version.back() - '0';
  } else if (version.size() == 8 && version.starts_with("HTTP/") &&
             std::isdigit(static_cast<unsigned char>(version[5])) && version[6] == '.' &&
             std::isdigit(static_cast<unsigned char>(version[7]))) {
    return Bad("unsupported HTTP version (only HTTP/1.0 and HTTP/1.1)", 505);
  } else {
    return Bad("request line is not METHOD SP TARGET SP VERSION");
  }
  head.connect = head.method == "CONNECT";
  return ParseTarget(head, authority);
}

Problem ParseHeaderLine(std::string_view line, HttpHead& head) {
  if (std::optional<std::string> why = ParseFieldLine(line, head.headers))
    return Bad(*why, *why == kTooManyFields ? 431 : 400);
  return {};
}

Problem ParseContentLength(std::string_view value, HttpHead& head) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (value.empty() || value.size() > 18 || ec != std::errc() || end != value.data() + value.size() ||
      value.front() == '+' || value.front() == '-') {
    return Bad("Content-Length is not a decimal number of at most 18 digits");
  }
  head.content_length = n;
  return {};
}

// Host, Content-Length and Transfer-Encoding, each at most once and consistent with each other and the target.
Problem CheckFraming(HttpHead& head, const HttpHeader*& host) {
  const HttpHeader* length = nullptr;
  const HttpHeader* encoding = nullptr;
  for (const HttpHeader& h : head.headers) {
    // Gateways that map header names to variables (CGI, WSGI) read Content_Length as Content-Length.
    if (h.name.find('_') != std::string::npos &&
        (EqualsLower(h.name, "content-length", true) || EqualsLower(h.name, "transfer-encoding", true))) {
      return Bad("underscore spelling of Content-Length or Transfer-Encoding");
    }
    const HttpHeader** slot = EqualsLower(h.name, "host")                ? &host
                              : EqualsLower(h.name, "content-length")    ? &length
                              : EqualsLower(h.name, "transfer-encoding") ? &encoding
                                                                         : nullptr;
    if (slot == nullptr) continue;
    if (*slot != nullptr) return Bad("more than one " + h.name + " header");
    *slot = &h;
  }
  if (length != nullptr && encoding != nullptr)
    return Bad("both Content-Length and Transfer-Encoding (request smuggling)");
  if (length != nullptr) {
    if (Problem p = ParseContentLength(length->value, head)) return p;
  }
  if (encoding != nullptr) {
    if (head.minor_version == 0) return Bad("Transfer-Encoding in an HTTP/1.0 request");
    if (!EqualsLower(encoding->value, "chunked")) return Bad("Transfer-Encoding other than chunked", 501);
    head.chunked = true;
  }
  if (head.connect && (head.chunked || head.content_length.value_or(0) != 0)) return Bad("CONNECT with a body");
  return {};
}

// The policy summary: the target's authority if it has one (a Host must then agree), else the Host header.
Problem Summarize(HttpHead& head, const std::optional<Authority>& target, const HttpHeader* host_header) {
  std::optional<Authority> host;
  if (host_header != nullptr) {
    host.emplace();
    host->port = head.scheme == "https" ? 443 : 80;
    if (Problem p = Prefix("Host header: ", ParseAuthority(host_header->value, *host))) return p;
  }
  if (target) {
    if (host && (host->host != target->host || (host->port_explicit && host->port != target->port) ||
                 (!host->port_explicit && !head.connect && target->port != host->port))) {
      return Bad("Host header differs from the request target");
    }
    host = target;
  }
  if (!host) return Bad("no Host header");
  head.host = host->host;
  head.host_is_address = host->is_address;
  head.port = host->port_explicit ? host->port : (head.scheme == "https" ? 443 : 80);
  head.port_explicit = host->port_explicit;
  return {};
}

HeadResult Refuse(size_t at, const Refusal& r) {
  HeadResult out;
  out.kind = HeadResult::kMalformed;
  out.seen = at;
  out.status = r.status;
  out.reason = r.reason;
  return out;
}

}  // namespace

const std::string* FindHeader(const std::vector<HttpHeader>& headers, std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = Lower(c);
  for (const HttpHeader& h : headers) {
    if (EqualsLower(h.name, lower)) return &h.value;
  }
  return nullptr;
}

const std::string* HttpHead::Find(std::string_view name) const { return FindHeader(headers, name); }

std::optional<std::string> ParseFieldLine(std::string_view line, std::vector<HttpHeader>& headers) {
  if (line.empty()) return "empty header line";
  if (line.front() == ' ' || line.front() == '\t') return "obs-fold (a header line starting with whitespace)";
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return "header line without a colon";
  std::string_view name = line.substr(0, colon);
  if (name.empty()) return "header name is not a token";
  if (name.back() == ' ' || name.back() == '\t') return "whitespace between a header name and its colon";
  for (char c : name) {
    if (!IsTokenChar(c)) return "header name is not a token";
  }
  std::string_view value = TrimWhitespace(line.substr(colon + 1));
  for (char c : value) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t') || u == 0x7f) return "header value contains a control character";
  }
  if (headers.size() == kMaxHeaderFields) return std::string(kTooManyFields);
  headers.push_back({std::string(name), std::string(value)});
  return std::nullopt;
}

HeadResult ParseHttpHead(std::string_view bytes) {
  HeadResult r;
  if (!LooksLikeMethod(bytes)) {
    r.kind = HeadResult::kNotHttp;
    r.reason = "does not start with an HTTP method";
    return r;
  }
  std::optional<Authority> target;
  std::string_view window = bytes.substr(0, kMaxHttpHead);
  for (size_t at = 0, line_number = 0;; ++line_number) {
    size_t eol = window.find('\n', at);
    if (eol == std::string_view::npos) {
      if (line_number == 0 && bytes.size() > kMaxRequestLine) {
        return Refuse(0, {414, "request line longer than 8192 bytes"});
      }
      if (bytes.size() >= kMaxHttpHead) return Refuse(at, {431, "request head larger than 65536 bytes"});
      r.seen = bytes.size();
      return r;
    }
    std::string_view line = window.substr(at, eol - at);
    if (line.empty() || line.back() != '\r') return Refuse(at, {400, "line ends with a bare LF"});
    line.remove_suffix(1);
    if (line.find('\r') != std::string_view::npos) return Refuse(at, {400, "bare CR in the request head"});
    Problem problem;
    if (line_number == 0) {
      if (line.size() > kMaxRequestLine) return Refuse(0, {414, "request line longer than 8192 bytes"});
      problem = ParseRequestLine(line, r.head, target);
    } else if (line.empty()) {
      const HttpHeader* host = nullptr;
      problem = CheckFraming(r.head, host);
      if (!problem) problem = Summarize(r.head, target, host);
      if (problem) return Refuse(at, *problem);
      r.kind = HeadResult::kParsed;
      r.seen = r.head.size = eol + 1;
      return r;
    } else {
      problem = ParseHeaderLine(line, r.head);
    }
    if (problem) return Refuse(at, *problem);
    at = eol + 1;
  }
}

bool NamesAnHttpVersion(std::string_view line) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  const size_t blank = line.find_last_of(" \t");
  if (blank == std::string_view::npos) return false;
  const std::string_view last = line.substr(blank + 1);
  return last.size() >= 5 && EqualsIgnoreCase(last.substr(0, 5), "HTTP/");
}

}  // namespace isb::egress
