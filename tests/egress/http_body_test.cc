#include "egress/http_body.h"

#include <gtest/gtest.h>

#include "egress/parsed_messages.h"

namespace isb::egress {
namespace {

TEST(BodyFraming, ARequestHasABodyOnlyWithContentLengthOrChunked) {
  EXPECT_EQ(RequestBody(Request("GET / HTTP/1.1\r\nHost: a\r\n\r\n")).kind, BodyFraming::kNone);
  BodyFraming length = RequestBody(Request("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\n\r\n"));
  EXPECT_EQ(length.kind, BodyFraming::kLength);
  EXPECT_EQ(length.length, 7u);
  EXPECT_EQ(RequestBody(Request("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")).kind,
            BodyFraming::kChunked);
}

TEST(BodyFraming, AResponseHasNoBodyAfterHeadAndFor1xx204And304) {
  ResponseHead with_length = Response("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
  EXPECT_EQ(ResponseBody("HEAD", with_length).kind, BodyFraming::kNone);
  BodyFraming get = ResponseBody("GET", with_length);
  EXPECT_EQ(get.kind, BodyFraming::kLength);
  EXPECT_EQ(get.length, 5u);
  EXPECT_EQ(ResponseBody("GET", Response("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n")).kind,
            BodyFraming::kNone);
  EXPECT_EQ(ResponseBody("GET", Response("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n")).kind,
            BodyFraming::kNone);
  EXPECT_EQ(ResponseBody("POST", Response("HTTP/1.1 100 Continue\r\n\r\n")).kind, BodyFraming::kNone);
  EXPECT_EQ(ResponseBody("GET", Response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")).kind,
            BodyFraming::kChunked);
  EXPECT_EQ(ResponseBody("GET", Response("HTTP/1.1 200 OK\r\n\r\n")).kind, BodyFraming::kUntilClose);
  EXPECT_EQ(ResponseBody("GET", Response("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n")).kind,
            BodyFraming::kUntilClose);
}

TEST(BodyFraming, ConnectionsPersistInHttp11UnlessClosedAndInHttp10OnlyWithKeepAlive) {
  EXPECT_TRUE(Persists(1, {}));
  EXPECT_FALSE(Persists(1, {{"Connection", "Upgrade, Close"}}));
  EXPECT_FALSE(Persists(1, {{"X", "y"}, {"connection", "close"}}));
  EXPECT_FALSE(Persists(0, {}));
  EXPECT_TRUE(Persists(0, {{"Connection", "keep-alive"}}));
  EXPECT_TRUE(ListsToken({{"Expect", " 100-Continue "}}, "expect", "100-continue"));
  EXPECT_FALSE(ListsToken({{"Expect", "100-continued"}}, "expect", "100-continue"));
}

struct Scanned {
  size_t used = 0;
  ChunkedScanner::State state = ChunkedScanner::State::kMore;
  std::string reason;
};

Scanned Scan(std::string_view bytes, size_t piece) {
  ChunkedScanner scanner;
  Scanned out;
  for (size_t at = 0; at < bytes.size() && out.state == ChunkedScanner::State::kMore; at += piece) {
    ChunkedScanner::Step step = scanner.Feed(bytes.substr(at, piece));
    out.used += step.used;
    out.state = step.state;
    out.reason = step.reason;
  }
  return out;
}

TEST(ChunkedScanner, FindsTheEndOfABodyHoweverItsBytesArrive) {
  std::string body =
      "5\r\nhello\r\n1A;ext=\"v\"\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nTrailer: x\r\nEmpty:\r\nX-Sum:a  b\r\n\r\n";
  std::string next = "GET /next HTTP/1.1\r\n";
  for (size_t piece : {body.size() + next.size(), size_t{1}, size_t{2}, size_t{7}}) {
    Scanned s = Scan(body + next, piece);
    EXPECT_EQ(s.state, ChunkedScanner::State::kDone) << piece;
    EXPECT_EQ(s.used, body.size()) << piece;
  }
  Scanned partial = Scan(body.substr(0, body.size() - 1), 5);
  EXPECT_EQ(partial.state, ChunkedScanner::State::kMore);
  EXPECT_EQ(partial.used, body.size() - 1);
}

TEST(ChunkedScanner, AfterTheEndItTakesNothingMore) {
  ChunkedScanner scanner;
  EXPECT_EQ(scanner.Feed("0\r\n\r\n").state, ChunkedScanner::State::kDone);
  ChunkedScanner::Step again = scanner.Feed("0\r\n\r\n");
  EXPECT_EQ(again.state, ChunkedScanner::State::kDone);
  EXPECT_EQ(again.used, 0u);
}

TEST(ChunkedScanner, RefusesAnythingLooserThanTheGrammar) {
  auto reason = [](std::string_view bytes) {
    Scanned s = Scan(bytes, bytes.size());
    EXPECT_EQ(s.state, ChunkedScanner::State::kMalformed) << bytes;
    return s.reason;
  };
  EXPECT_EQ(reason("x\r\n"), "chunk size line does not start with a hexadecimal size");
  EXPECT_EQ(reason("5 \r\nhello\r\n"), "chunk size followed by something other than ';' or CRLF");
  EXPECT_EQ(reason("5\nhello\r\n"), "chunk size followed by something other than ';' or CRLF");
  EXPECT_EQ(reason("5\rhello"), "chunk size line ends with a bare CR");
  EXPECT_EQ(reason("1000000000000000\r\n"), "chunk size longer than 15 hexadecimal digits");
  EXPECT_EQ(reason("5\r\nhelloX\r\n"), "chunk data not followed by CRLF");
  EXPECT_EQ(reason("5\r\nhello\rX"), "chunk data not followed by CRLF");
  EXPECT_EQ(reason("5;a\x01\r\n"), "chunk extension contains a control character");
  EXPECT_EQ(reason("5;" + std::string(kMaxChunkLine, 'a')), "chunk size line longer than 4096 bytes");
  EXPECT_EQ(reason("0\r\nA: b\n\r\n"), "chunked trailer contains a control character or a bare LF");
  EXPECT_EQ(reason("0\r\nA: b\rX"), "chunked trailer line ends with a bare CR");
  // Each trailer line is a field: a token and a colon, no folding, no space before the colon.
  EXPECT_EQ(reason("0\r\n Folded: x\r\n\r\n"), "chunked trailer line does not start with a field name");
  EXPECT_EQ(reason("0\r\nA: b\r\n\tmore\r\n\r\n"), "chunked trailer line does not start with a field name");
  EXPECT_EQ(reason("0\r\n: x\r\n\r\n"), "chunked trailer line does not start with a field name");
  EXPECT_EQ(reason("0\r\nName : x\r\n\r\n"), "chunked trailer field name is not a token followed by a colon");
  EXPECT_EQ(reason("0\r\nNoColon\r\n\r\n"), "chunked trailer field name is not a token followed by a colon");
  EXPECT_EQ(reason("0\r\nGET / HTTP/1.1\r\n\r\n"), "chunked trailer field name is not a token followed by a colon");
  EXPECT_EQ(reason("0\r\n\rX"), "chunked body ends with a bare CR");
  EXPECT_EQ(reason("0\r\n" + std::string(kMaxChunkTrailers + 1, 'a')),
            "chunked trailer section larger than 16384 bytes");
}

// On every path to an origin: a GET, HEAD, DELETE or TRACE with a body is refused (an origin that ignores it would
// read it as another request, which no policy saw); an empty one, and a body on other methods, are not.
TEST(BodylessMethodRefusal, GetHeadDeleteAndTraceWithABody) {
  auto refusal = [](const std::string& method, std::optional<uint64_t> length, bool chunked) {
    HttpHead h;
    h.method = method;
    h.content_length = length;
    h.chunked = chunked;
    return BodylessMethodRefusal(h);
  };
  for (const char* method : {"GET", "HEAD", "DELETE", "TRACE"}) {
    const std::string why = std::string("a ") + method +
                            " request with a body is refused (an origin may read the "
                            "body as another request); send the body with POST";
    EXPECT_EQ(refusal(method, 1, false), why);
    EXPECT_EQ(refusal(method, std::nullopt, true), why);
    EXPECT_EQ(refusal(method, 0, false), "");
    EXPECT_EQ(refusal(method, std::nullopt, false), "");
  }
  EXPECT_EQ(refusal("POST", 10, false), "");
  EXPECT_EQ(refusal("PUT", std::nullopt, true), "");
  EXPECT_EQ(refusal("OPTIONS", 3, false), "");
}

}  // namespace
}  // namespace isb::egress

namespace isb::egress {
namespace {

TEST(ChunkedScanner, HandsOverTheDataAndTheTrailerLinesApart) {
  const std::string body = "5;x=y\r\nhello\r\n2\r\n, \r\n0\r\nX-Sum: 7\r\nX-B:c\r\n\r\n";
  for (size_t piece = 1; piece <= body.size(); ++piece) {
    ChunkedScanner scanner;
    std::string data, trailers;
    ChunkedScanner::Step step;
    for (size_t at = 0; at < body.size(); at += piece) step = scanner.Feed(body.substr(at, piece), &data, &trailers);
    EXPECT_EQ(step.state, ChunkedScanner::State::kDone) << piece;
    EXPECT_EQ(data, "hello, ") << piece;
    EXPECT_EQ(trailers, "X-Sum: 7\r\nX-B:c\r\n") << piece;
  }
  ChunkedScanner none;
  std::string data, trailers;
  EXPECT_EQ(none.Feed("0\r\n\r\n", &data, &trailers).state, ChunkedScanner::State::kDone);
  EXPECT_EQ(trailers, "");
}

}  // namespace
}  // namespace isb::egress
