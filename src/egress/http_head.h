// The HTTP/1.x request head the proxy reads from a sandbox: request line, header fields, and the summary its policy
// decides on (target host and port). Anything two HTTP parsers could read differently is refused (request smuggling).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace isb::egress {

inline constexpr size_t kMaxHttpHead = 64 * 1024;  // request line, header fields and the blank line
inline constexpr size_t kMaxRequestLine = 8 * 1024;
inline constexpr size_t kMaxHeaderFields = 100;
// A head is parsed again from its start after every read, so one sent a byte at a time (a TLS record each, on an
// intercepted connection) would cost the event loop time in the square of its length: past this many reads without
// a whole head, it is refused.
inline constexpr int kMaxHeadReads = 256;
inline constexpr char kTooManyPieces[] = "request head sent in too many pieces";

enum class TargetForm { kOrigin, kAbsolute, kAuthority, kAsterisk };

struct HttpHeader {
  std::string name;   // as sent
  std::string value;  // without the whitespace around it
  bool operator==(const HttpHeader&) const = default;
};

struct HttpHead {
  std::string method;
  std::string target;  // the request-target as sent
  TargetForm form = TargetForm::kOrigin;
  int minor_version = 1;  // HTTP/1.0 or HTTP/1.1
  std::vector<HttpHeader> headers;

  // The summary for the policy: from the target in absolute- and authority-form (a Host header there must agree),
  // else from the Host header.
  std::string host;              // lowercased; an IPv6 literal without its brackets
  bool host_is_address = false;  // an address literal in any spelling; the policy refuses those
  uint16_t port = 0;             // as written, else the default: 443 for https, 80 otherwise
  bool port_explicit = false;
  std::string scheme;    // absolute-form: "http" or "https"; else empty
  std::string path;      // path and query: origin-form's target, absolute-form's ("/" when empty)
  bool connect = false;  // a CONNECT request (authority-form)
  std::optional<uint64_t> content_length;
  bool chunked = false;  // Transfer-Encoding: chunked
  size_t size = 0;       // bytes of the head, blank line included; a body starts there

  // The value of the first header field called `name` (ASCII case-insensitive), or null.
  const std::string* Find(std::string_view name) const;
};

struct HeadResult {
  enum Kind { kParsed, kNeedMore, kNotHttp, kMalformed };
  Kind kind = kNeedMore;
  size_t seen = 0;     // kNeedMore: the input length; kParsed: the head's size; else where the parser stopped
  int status = 0;      // kMalformed: the status to answer (400, 414 URI too long, 431 too large, 501, 505)
  std::string reason;  // kNotHttp and kMalformed: a fixed sentence saying what was wrong
  HttpHead head;       // kParsed only
};

// The value of the first of `headers` called `name` (ASCII case-insensitive), or null.
const std::string* FindHeader(const std::vector<HttpHeader>& headers, std::string_view name);

// One header field line (without its CRLF), checked (a token name, no obs-fold, no whitespace before the colon, no
// control byte in the value) and appended to `headers` without the whitespace around its value; or why not, a fixed
// sentence. At most kMaxHeaderFields.
std::optional<std::string> ParseFieldLine(std::string_view line, std::vector<HttpHeader>& headers);

// Parses the request head at the start of `bytes` (what a client sent on a connection). kNeedMore until the blank
// line arrives; kNotHttp when the bytes do not start with an HTTP method (upper-case letters, '-' or '_') and a
// space; kMalformed with a status and reason for anything else the proxy refuses.
HeadResult ParseHttpHead(std::string_view bytes);

// Whether a first line (without its line end) ends the way an HTTP request line does: its last word names an HTTP
// version, any version and any case, blanks after it ignored ("GET / HTTP/1.1 ", "PRI * HTTP/2.0"). Tells HTTP from
// the line protocols that look like it (SMTP's "EHLO host") once a whole line has come.
bool NamesAnHttpVersion(std::string_view line);

}  // namespace isb::egress
