#include "egress/http_body.h"

#include <algorithm>

#include "base/ascii.h"

namespace isb::egress {
namespace {

std::string_view Trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ControlByte(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return (u < 0x20 && u != '\t') || u == 0x7f;
}

}  // namespace

BodyFraming RequestBody(const HttpHead& request) {
  if (request.chunked) return {BodyFraming::kChunked, 0};
  if (request.content_length) return {BodyFraming::kLength, *request.content_length};
  return {};
}

std::string BodylessMethodRefusal(const HttpHead& request) {
  const bool body = request.chunked || request.content_length.value_or(0) > 0;
  const std::string& m = request.method;
  if (!body || (m != "GET" && m != "HEAD" && m != "DELETE" && m != "TRACE")) return "";
  return "a " + m +
         " request with a body is refused (an origin may read the body as another request); send the "
         "body with POST";
}

BodyFraming ResponseBody(std::string_view method, const ResponseHead& response) {
  if (method == "HEAD" || response.status < 200 || response.status == 204 || response.status == 304) return {};
  if (response.chunked) return {BodyFraming::kChunked, 0};
  if (response.until_close || !response.content_length) return {BodyFraming::kUntilClose, 0};
  return {BodyFraming::kLength, *response.content_length};
}

bool ListsToken(const std::vector<HttpHeader>& headers, std::string_view name, std::string_view token) {
  for (const HttpHeader& h : headers) {
    if (!EqualsIgnoreCase(h.name, name)) continue;
    std::string_view list = h.value;
    for (;;) {
      size_t comma = list.find(',');
      if (EqualsIgnoreCase(Trim(list.substr(0, comma)), token)) return true;
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  return false;
}

bool Persists(int minor_version, const std::vector<HttpHeader>& headers) {
  if (ListsToken(headers, "connection", "close")) return false;
  return minor_version >= 1 || ListsToken(headers, "connection", "keep-alive");
}

ChunkedScanner::Step ChunkedScanner::Fail(size_t used, std::string reason) {
  phase_ = Phase::kMalformed;
  reason_ = std::move(reason);
  return Step{used, State::kMalformed, reason_};
}

ChunkedScanner::Step ChunkedScanner::Feed(std::string_view bytes, std::string* data, std::string* trailers) {
  if (phase_ == Phase::kDone) return Step{0, State::kDone, ""};
  if (phase_ == Phase::kMalformed) return Step{0, State::kMalformed, reason_};
  size_t i = 0;
  while (i < bytes.size()) {
    if (phase_ == Phase::kData) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, bytes.size() - i));
      if (data != nullptr) data->append(bytes.substr(i, n));
      i += n;
      remaining_ -= n;
      if (remaining_ == 0) phase_ = Phase::kDataCr;
      continue;
    }
    const char c = bytes[i++];
    const bool trailer = phase_ == Phase::kTrailerStart || phase_ == Phase::kTrailerName || phase_ == Phase::kTrailer;
    if (trailer && ++trailers_ > kMaxChunkTrailers) return Fail(i, "chunked trailer section larger than 16384 bytes");
    // A trailer line's bytes, its CRLF included; the CR of the blank line that ends the section is not one.
    if (trailers != nullptr &&
        ((trailer && !(phase_ == Phase::kTrailerStart && c == '\r')) || phase_ == Phase::kTrailerLf))
      trailers->push_back(c);
    switch (phase_) {
      case Phase::kSize: {
        int v = HexValue(c);
        if (v >= 0) {
          if (++digits_ > 15) return Fail(i, "chunk size longer than 15 hexadecimal digits");
          remaining_ = remaining_ * 16 + static_cast<uint64_t>(v);
        } else if (digits_ == 0) {
          return Fail(i, "chunk size line does not start with a hexadecimal size");
        } else if (c == ';') {
          phase_ = Phase::kExtension;
        } else if (c == '\r') {
          phase_ = Phase::kSizeLf;
        } else {
          return Fail(i, "chunk size followed by something other than ';' or CRLF");
        }
        ++line_;
        break;
      }
      case Phase::kExtension:
        if (++line_ > kMaxChunkLine) return Fail(i, "chunk size line longer than 4096 bytes");
        if (c == '\r') {
          phase_ = Phase::kSizeLf;
        } else if (ControlByte(c)) {
          return Fail(i, "chunk extension contains a control character");
        }
        break;
      case Phase::kSizeLf:
        if (c != '\n') return Fail(i, "chunk size line ends with a bare CR");
        phase_ = remaining_ == 0 ? Phase::kTrailerStart : Phase::kData;
        digits_ = line_ = 0;
        break;
      case Phase::kDataCr:
        if (c != '\r') return Fail(i, "chunk data not followed by CRLF");
        phase_ = Phase::kDataLf;
        break;
      case Phase::kDataLf:
        if (c != '\n') return Fail(i, "chunk data not followed by CRLF");
        phase_ = Phase::kSize;
        break;
      case Phase::kTrailerStart:
        // A trailer line is a header field: a token, then a colon at once (RFC 9112 5.1). A line that starts
        // with whitespace would continue the last one (obsolete folding), which RFC 9112 5.2 lets a proxy refuse.
        if (c == '\r') {
          phase_ = Phase::kLastLf;
        } else if (IsTokenChar(c)) {
          phase_ = Phase::kTrailerName;
        } else {
          return Fail(i, "chunked trailer line does not start with a field name");
        }
        break;
      case Phase::kTrailerName:
        if (c == ':') {
          phase_ = Phase::kTrailer;
        } else if (!IsTokenChar(c)) {
          return Fail(i, "chunked trailer field name is not a token followed by a colon");
        }
        break;
      case Phase::kTrailer:
        if (c == '\r') {
          phase_ = Phase::kTrailerLf;
        } else if (ControlByte(c)) {
          return Fail(i, "chunked trailer contains a control character or a bare LF");
        }
        break;
      case Phase::kTrailerLf:
        if (c != '\n') return Fail(i, "chunked trailer line ends with a bare CR");
        phase_ = Phase::kTrailerStart;
        break;
      case Phase::kLastLf:
        if (c != '\n') return Fail(i, "chunked body ends with a bare CR");
        phase_ = Phase::kDone;
        return Step{i, State::kDone, ""};
      case Phase::kData:
      case Phase::kDone:
      case Phase::kMalformed:
        break;
    }
  }
  return Step{i, State::kMore, ""};
}

}  // namespace isb::egress
