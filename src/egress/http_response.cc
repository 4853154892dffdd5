#include "egress/http_response.h"

#include <charconv>

#include "base/ascii.h"

namespace isb::egress {
namespace {

bool Digit(char c) { return c >= '0' && c <= '9'; }

std::optional<std::string> ParseStatusLine(std::string_view line, ResponseHead& head) {
  // HTTP/1.1 SP 3DIGIT SP reason; a missing reason (and its space) is accepted, as clients do.
  if (line.size() < 12 || !line.starts_with("HTTP/1.") || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
      !Digit(line[9]) || !Digit(line[10]) || !Digit(line[11]) || (line.size() > 12 && line[12] != ' '))
    return "status line is not HTTP/1.x SP STATUS SP REASON";
  for (char c : line.substr(12)) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t') || u == 0x7f) return "status line contains a control character";
  }
  head.minor_version = line[7] - '0';
  head.reason = line.size() > 12 ? line.substr(13) : std::string_view();
  head.status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (head.status < 100 || head.status > 599) return "status code outside 100 to 599";
  return std::nullopt;
}

std::optional<std::string> CheckFraming(ResponseHead& head) {
  const HttpHeader* length = nullptr;
  const HttpHeader* encoding = nullptr;
  for (const HttpHeader& h : head.headers) {
    const bool is_length = EqualsIgnoreCase(h.name, "content-length");
    const bool is_encoding = EqualsIgnoreCase(h.name, "transfer-encoding");
    if (!is_length && !is_encoding) continue;
    const HttpHeader*& slot = is_length ? length : encoding;
    if (slot != nullptr)
      return "more than one " + std::string(is_length ? "Content-Length" : "Transfer-Encoding") + " header";
    slot = &h;
  }
  if (length != nullptr && encoding != nullptr) return "both Content-Length and Transfer-Encoding";
  if (length != nullptr) {
    const std::string& v = length->value;
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || v.size() > 18 || !Digit(v.front()) || ec != std::errc() || end != v.data() + v.size())
      return "Content-Length is not a decimal number of at most 18 digits";
    head.content_length = n;
  }
  if (encoding != nullptr) {
    if (head.minor_version == 0) return "Transfer-Encoding in an HTTP/1.0 response";
    // A list of codings; chunked may only come last, and when it does the body is chunked.
    std::string_view list = encoding->value;
    bool last_chunked = false;
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string_view coding = list.substr(0, comma);
      while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) coding.remove_prefix(1);
      while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) coding.remove_suffix(1);
      if (last_chunked) return "Transfer-Encoding with a coding after chunked";
      last_chunked = EqualsIgnoreCase(coding, "chunked");
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    head.chunked = last_chunked;
    head.until_close = !last_chunked;
  }
  return std::nullopt;
}

ResponseHeadResult Malformed(std::string reason) {
  ResponseHeadResult r;
  r.kind = ResponseHeadResult::kMalformed;
  r.reason = std::move(reason);
  return r;
}

}  // namespace

ResponseHeadResult ParseResponseHead(std::string_view bytes) {
  ResponseHeadResult r;
  std::string_view window = bytes.substr(0, kMaxResponseHead);
  for (size_t at = 0, line_number = 0;; ++line_number) {
    size_t eol = window.find('\n', at);
    if (eol == std::string_view::npos) {
      if (bytes.size() >= kMaxResponseHead) return Malformed("response head larger than 65536 bytes");
      return r;
    }
    std::string_view line = window.substr(at, eol - at);
    if (line.empty() || line.back() != '\r') return Malformed("line ends with a bare LF");
    line.remove_suffix(1);
    if (line.find('\r') != std::string_view::npos) return Malformed("bare CR in the response head");
    std::optional<std::string> problem;
    if (line_number == 0) {
      problem = ParseStatusLine(line, r.head);
    } else if (line.empty()) {
      problem = CheckFraming(r.head);
      if (problem) return Malformed(*problem);
      r.kind = ResponseHeadResult::kParsed;
      r.head.size = eol + 1;
      return r;
    } else {
      problem = ParseFieldLine(line, r.head.headers);
    }
    if (problem) return Malformed(*problem);
    at = eol + 1;
  }
}

int PeekResponseStatus(std::string_view first_bytes) {
  if (first_bytes.size() < kStatusPrefix) return kStatusNeedMore;
  std::string_view line = first_bytes.substr(0, kStatusPrefix);
  if (!(line.starts_with("HTTP/1.1 ") || line.starts_with("HTTP/1.0 ")) || line[9] < '1' || line[9] > '9' ||
      !Digit(line[10]) || !Digit(line[11]))
    return kNotAStatus;
  return (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
}

}  // namespace isb::egress
