#include "egress/client_response.h"

#include "base/ascii.h"
#include "egress/http_body.h"
#include "egress/http_response.h"

namespace isb::egress {
namespace {

constexpr int kMaxInterim = 8;

ResponseResult Malformed(std::string reason) {
  ResponseResult r;
  r.kind = ResponseResult::kMalformed;
  r.reason = std::move(reason);
  return r;
}

ResponseResult NeedMore(bool eof, const char* reason_at_eof) {
  return eof ? Malformed(reason_at_eof) : ResponseResult{};
}

ResponseResult Done(int status, std::string body) {
  ResponseResult r;
  r.kind = ResponseResult::kDone;
  r.status = status;
  r.body = std::move(body);
  return r;
}

// "chunked" alone: any other coding would leave the body coded for a client that only de-chunks.
bool OnlyChunked(const ResponseHead& head) {
  const std::string* coding = head.Find("transfer-encoding");
  if (coding == nullptr) return true;
  std::string_view v = *coding;
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return EqualsIgnoreCase(v, "chunked");
}

ResponseResult Body(const ResponseHead& head, std::string_view bytes, bool eof, size_t max_body) {
  BodyFraming framing = ResponseBody("POST", head);
  switch (framing.kind) {
    case BodyFraming::kNone:
      return Done(head.status, "");
    case BodyFraming::kLength:
      if (framing.length > max_body) return Malformed("the response body is too large");
      if (bytes.size() < framing.length) return NeedMore(eof, "the connection closed inside the response body");
      return Done(head.status, std::string(bytes.substr(0, framing.length)));
    case BodyFraming::kUntilClose:
      if (bytes.size() > max_body) return Malformed("the response body is too large");
      if (!eof) return ResponseResult{};
      return Done(head.status, std::string(bytes));
    case BodyFraming::kChunked: {
      ChunkedScanner scanner;
      std::string body;
      ChunkedScanner::Step step = scanner.Feed(bytes, &body);
      if (step.state == ChunkedScanner::State::kMalformed) return Malformed(step.reason);
      if (body.size() > max_body) return Malformed("the response body is too large");
      if (step.state == ChunkedScanner::State::kMore)
        return NeedMore(eof, "the connection closed inside a chunked body");
      return Done(head.status, std::move(body));
    }
  }
  return Malformed("unknown body framing");
}

}  // namespace

ResponseResult ParseHttpResponse(std::string_view bytes, bool eof, size_t max_body) {
  for (int interim = 0;; ++interim) {
    ResponseHeadResult parsed = ParseResponseHead(bytes);
    if (parsed.kind == ResponseHeadResult::kMalformed) return Malformed(parsed.reason);
    if (parsed.kind == ResponseHeadResult::kNeedMore) {
      return NeedMore(eof, bytes.empty() ? "the connection closed without a response"
                                         : "the connection closed inside the response head");
    }
    const ResponseHead& head = parsed.head;
    if (!OnlyChunked(head)) return Malformed("a transfer coding other than chunked alone");
    bytes.remove_prefix(head.size);
    if (head.status >= 200) return Body(head, bytes, eof, max_body);
    if (interim + 1 >= kMaxInterim) return Malformed("too many interim responses");
  }
}

}  // namespace isb::egress
