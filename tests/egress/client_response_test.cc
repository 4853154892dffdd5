// The HTTP response parser the judge reads its endpoint's answer with: framings, interim answers, limits, and the
// framings it refuses (with the reasons of the head and chunk parsers it is built on).
#include "egress/client_response.h"
#include "egress/http_response.h"

#include <gtest/gtest.h>

#include <string>

namespace isb::egress {
namespace {

ResponseResult Parse(const std::string& bytes, bool eof = false, size_t max_body = 1024) {
  return ParseHttpResponse(bytes, eof, max_body);
}

TEST(HttpResponse, ContentLength) {
  std::string r = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 7\r\n\r\n{\"a\":1}";
  ResponseResult got = Parse(r);
  ASSERT_EQ(got.kind, ResponseResult::kDone) << got.reason;
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, "{\"a\":1}");
  // Every prefix needs more.
  for (size_t n = 0; n < r.size(); ++n) EXPECT_EQ(Parse(r.substr(0, n)).kind, ResponseResult::kNeedMore) << n;
  // The same prefixes at the end of the connection are cut off.
  EXPECT_EQ(Parse(r.substr(0, r.size() - 1), true).reason, "the connection closed inside the response body");
  EXPECT_EQ(Parse("HTTP/1.1 200 OK\r\n", true).reason, "the connection closed inside the response head");
  EXPECT_EQ(Parse("", true).reason, "the connection closed without a response");
}

TEST(HttpResponse, Chunked) {
  std::string r =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\nX-T: y\r\n\r\n";
  ResponseResult got = Parse(r);
  ASSERT_EQ(got.kind, ResponseResult::kDone) << got.reason;
  EXPECT_EQ(got.body, "{\"a\":1}");
  for (size_t n = 0; n < r.size(); ++n) EXPECT_EQ(Parse(r.substr(0, n)).kind, ResponseResult::kNeedMore) << n;
  EXPECT_EQ(Parse(r.substr(0, r.size() - 2), true).reason, "the connection closed inside a chunked body");
}

TEST(HttpResponse, UntilCloseAndInterimAndNoBody) {
  ResponseResult got = Parse("HTTP/1.0 500 Oops\r\n\r\nboom", false);
  EXPECT_EQ(got.kind, ResponseResult::kNeedMore);
  got = Parse("HTTP/1.0 500 Oops\r\n\r\nboom", true);
  EXPECT_EQ(got.kind, ResponseResult::kDone);
  EXPECT_EQ(got.status, 500);
  EXPECT_EQ(got.body, "boom");
  got = Parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok");
  EXPECT_EQ(got.status, 201);
  EXPECT_EQ(got.body, "ok");
  got = Parse("HTTP/1.1 204\r\n\r\n");
  EXPECT_EQ(got.kind, ResponseResult::kDone);
  EXPECT_EQ(got.status, 204);
  EXPECT_EQ(got.body, "");
}

TEST(HttpResponse, Refused) {
  struct Case {
    std::string bytes;
    const char* reason;
  };
  std::vector<Case> cases = {
      {"HTTP/2 200\r\n\r\n", "status line is not HTTP/1.x SP STATUS SP REASON"},
      {"ICY 200 OK\r\n\r\n", "status line is not HTTP/1.x SP STATUS SP REASON"},
      {"HTTP/1.1 2000 OK\r\n\r\n", "status line is not HTTP/1.x SP STATUS SP REASON"},
      {"HTTP/1.1 099 Low\r\n\r\n", "status code outside 100 to 599"},
      {"HTTP/1.1 +20 Plus\r\n\r\n", "status line is not HTTP/1.x SP STATUS SP REASON"},
      {"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "header line without a colon"},
      {"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "header name is not a token"},
      {"HTTP/1.1 200 OK\r\nX: a\nb\r\n\r\n", "line ends with a bare LF"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", "more than one Content-Length header"},
      {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length is not a decimal number of at most 18 digits"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", "Content-Length is not a decimal number of at most 18 digits"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "a transfer coding other than chunked alone"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
       "both Content-Length and Transfer-Encoding"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
       "chunk size line does not start with a hexadecimal size"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", "chunk data not followed by CRLF"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1025\r\n\r\n", "the response body is too large"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n401\r\n" + std::string(1025, 'x'),
       "the response body is too large"},
      {"HTTP/1.1 200 OK\r\n\r\n" + std::string(1025, 'x'), "the response body is too large"},
      {"HTTP/1.1 200 OK\r\nX: " + std::string(kMaxResponseHead, 'x'), "response head larger than 65536 bytes"},
  };
  for (const Case& c : cases) {
    ResponseResult got = Parse(c.bytes);
    EXPECT_EQ(got.kind, ResponseResult::kMalformed) << c.bytes.substr(0, 80);
    EXPECT_EQ(got.reason, c.reason) << c.bytes.substr(0, 80);
  }
}

}  // namespace
}  // namespace isb::egress
