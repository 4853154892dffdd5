#include "egress/client_response.h"

#include <charconv>
#include <cstdint>
#include <optional>

namespace isb::egress {
namespace {

ResponseResult Malformed(const char* reason) {
  ResponseResult r;
  r.kind = ResponseResult::kMalformed;
  r.reason = reason;
  return r;
}

ResponseResult NeedMore(bool eof, const char* reason_at_eof) {
  return eof ? Malformed(reason_at_eof) : ResponseResult{};
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<uint64_t> ParseNumber(std::string_view text, int base) {
  uint64_t v = 0;
  if (text.empty() || text.size() > 15) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

struct Head {
  int status = 0;
  std::optional<uint64_t> content_length;
  bool chunked = false;
  const char* error = nullptr;
};

// The status line and header fields of `text` (the head without its blank line).
Head ParseHead(std::string_view text) {
  Head h;
  size_t eol = text.find("\r\n");
  std::string_view line = text.substr(0, eol);
  // "HTTP/1.x SSS" then nothing or a space and a reason phrase.
  if (line.size() < 12 || !line.starts_with("HTTP/1.") || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
      (line.size() > 12 && line[12] != ' ')) {
    h.error = "the status line is not HTTP/1.x";
    return h;
  }
  std::optional<uint64_t> status = ParseNumber(line.substr(9, 3), 10);
  if (!status || *status < 100 || *status > 599 || line[9] == '+' || line[9] == '-') {
    h.error = "the status code is not a number from 100 to 599";
    return h;
  }
  h.status = static_cast<int>(*status);
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 2);
  while (!rest.empty()) {
    size_t end = rest.find("\r\n");
    std::string_view field = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 2);
    size_t colon = field.find(':');
    if (colon == 0 || colon == std::string_view::npos || field.find_first_of(" \t") < colon) {
      h.error = "a header field has no name";
      return h;
    }
    if (field.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
      h.error = "a header field holds a bare CR, LF or NUL";
      return h;
    }
    std::string_view name = field.substr(0, colon), value = TrimSpace(field.substr(colon + 1));
    if (EqualsNoCase(name, "content-length")) {
      std::optional<uint64_t> n = ParseNumber(value, 10);
      if (!n || value[0] == '+' || value[0] == '-') {
        h.error = "Content-Length is not a number";
        return h;
      }
      if (h.content_length && *h.content_length != *n) {
        h.error = "two different Content-Length fields";
        return h;
      }
      h.content_length = n;
    } else if (EqualsNoCase(name, "transfer-encoding")) {
      if (!EqualsNoCase(value, "chunked") || h.chunked) {
        h.error = "a transfer coding other than one chunked";
        return h;
      }
      h.chunked = true;
    }
  }
  if (h.chunked && h.content_length) h.error = "both Content-Length and Transfer-Encoding";
  return h;
}

// The de-chunked body of `bytes` (what follows the head), or kNeedMore.
ResponseResult Dechunk(std::string_view bytes, bool eof, size_t max_body) {
  ResponseResult r;
  for (;;) {
    size_t eol = bytes.find("\r\n");
    if (eol == std::string_view::npos) {
      if (bytes.size() > 1024) return Malformed("a chunk header is too long");
      return NeedMore(eof, "the connection closed inside a chunked body");
    }
    if (eol > 1024) return Malformed("a chunk header is too long");
    std::string_view line = bytes.substr(0, eol);
    std::string_view size_text = TrimSpace(line.substr(0, line.find(';')));
    std::optional<uint64_t> size = ParseNumber(size_text, 16);
    if (!size || size_text[0] == '+' || size_text[0] == '-') return Malformed("a chunk size is not a hex number");
    bytes.remove_prefix(eol + 2);
    if (*size == 0) break;
    if (*size > max_body - r.body.size()) return Malformed("the response body is too large");
    if (bytes.size() < *size + 2) return NeedMore(eof, "the connection closed inside a chunked body");
    if (bytes.substr(*size, 2) != "\r\n") return Malformed("a chunk does not end with CRLF");
    r.body.append(bytes.substr(0, *size));
    bytes.remove_prefix(*size + 2);
  }
  // Trailer fields, if any, up to the blank line; their content is of no interest.
  for (;;) {
    size_t eol = bytes.find("\r\n");
    if (eol == std::string_view::npos) {
      if (bytes.size() > kMaxClientResponseHead) return Malformed("the chunked body's trailer is too large");
      return NeedMore(eof, "the connection closed inside a chunked body");
    }
    if (eol == 0) break;
    bytes.remove_prefix(eol + 2);
  }
  r.kind = ResponseResult::kDone;
  return r;
}

}  // namespace

ResponseResult ParseHttpResponse(std::string_view bytes, bool eof, size_t max_body) {
  for (int interim = 0;; ++interim) {
    size_t end = bytes.find("\r\n\r\n");
    if (end == std::string_view::npos || end + 4 > kMaxClientResponseHead) {
      if (std::min(end, bytes.size()) + 4 > kMaxClientResponseHead) return Malformed("the response head is too large");
      return NeedMore(eof, bytes.empty() ? "the connection closed without a response"
                                         : "the connection closed inside the response head");
    }
    Head h = ParseHead(bytes.substr(0, end));
    if (h.error != nullptr) return Malformed(h.error);
    bytes.remove_prefix(end + 4);
    if (h.status < 200) {
      if (interim >= 8) return Malformed("too many interim responses");
      continue;
    }
    ResponseResult r;
    r.status = h.status;
    if (h.status == 204 || h.status == 304) {
      r.kind = ResponseResult::kDone;
      return r;
    }
    if (h.chunked) {
      ResponseResult body = Dechunk(bytes, eof, max_body);
      body.status = h.status;
      return body;
    }
    if (h.content_length) {
      if (*h.content_length > max_body) return Malformed("the response body is too large");
      if (bytes.size() < *h.content_length) return NeedMore(eof, "the connection closed inside the response body");
      r.body = std::string(bytes.substr(0, *h.content_length));
      r.kind = ResponseResult::kDone;
      return r;
    }
    if (bytes.size() > max_body) return Malformed("the response body is too large");
    if (!eof) return ResponseResult{};
    r.body = std::string(bytes);
    r.kind = ResponseResult::kDone;
    return r;
  }
}

}  // namespace isb::egress
