#include "egress/http_response.h"

#include <gtest/gtest.h>

namespace isb::egress {
namespace {

std::string Refusal(std::string_view bytes) {
  ResponseHeadResult r = ParseResponseHead(bytes);
  EXPECT_EQ(r.kind, ResponseHeadResult::kMalformed) << bytes;
  return r.reason;
}

TEST(ResponseHead, ParsesStatusHeadersAndContentLength) {
  std::string bytes = "HTTP/1.1 201 Created\r\nContent-Type: text/plain\r\nContent-Length:  12 \r\n\r\nbody follows";
  ResponseHeadResult r = ParseResponseHead(bytes);
  ASSERT_EQ(r.kind, ResponseHeadResult::kParsed) << r.reason;
  EXPECT_EQ(r.head.status, 201);
  EXPECT_EQ(r.head.minor_version, 1);
  EXPECT_EQ(r.head.size, bytes.size() - 12);
  EXPECT_EQ(r.head.content_length, 12u);
  EXPECT_FALSE(r.head.chunked);
  EXPECT_FALSE(r.head.until_close);
  ASSERT_NE(r.head.Find("content-type"), nullptr);
  EXPECT_EQ(*r.head.Find("content-type"), "text/plain");
}

TEST(ResponseHead, TransferEncodingIsChunkedOnlyWhenChunkedComesLast) {
  ResponseHeadResult chunked = ParseResponseHead("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n");
  ASSERT_EQ(chunked.kind, ResponseHeadResult::kParsed);
  EXPECT_TRUE(chunked.head.chunked);
  EXPECT_FALSE(chunked.head.until_close);
  ResponseHeadResult gzip = ParseResponseHead("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n");
  ASSERT_EQ(gzip.kind, ResponseHeadResult::kParsed);
  EXPECT_FALSE(gzip.head.chunked);
  EXPECT_TRUE(gzip.head.until_close);
  EXPECT_EQ(Refusal("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"),
            "Transfer-Encoding with a coding after chunked");
}

TEST(ResponseHead, AStatusLineWithoutAReasonIsAccepted) {
  ResponseHeadResult r = ParseResponseHead("HTTP/1.0 204\r\n\r\n");
  ASSERT_EQ(r.kind, ResponseHeadResult::kParsed);
  EXPECT_EQ(r.head.status, 204);
  EXPECT_EQ(r.head.minor_version, 0);
}

TEST(ResponseHead, WaitsForTheBlankLine) {
  EXPECT_EQ(ParseResponseHead("").kind, ResponseHeadResult::kNeedMore);
  EXPECT_EQ(ParseResponseHead("HTTP/1.1 200 OK\r\nA: b\r\n").kind, ResponseHeadResult::kNeedMore);
  EXPECT_EQ(ParseResponseHead("HTTP/1.1 200 OK\r\nA: b\r\n\r").kind, ResponseHeadResult::kNeedMore);
}

TEST(ResponseHead, RefusesWhatAClientCouldFrameDifferently) {
  EXPECT_EQ(Refusal("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            "both Content-Length and Transfer-Encoding");
  EXPECT_EQ(Refusal("HTTP/1.1 200 OK\r\nContent-Length: 1\r\ncontent-length: 1\r\n\r\n"),
            "more than one Content-Length header");
  EXPECT_EQ(Refusal("HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\n"),
            "Content-Length is not a decimal number of at most 18 digits");
  EXPECT_EQ(Refusal("HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\n"),
            "Content-Length is not a decimal number of at most 18 digits");
  EXPECT_EQ(Refusal("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
            "Transfer-Encoding in an HTTP/1.0 response");
  EXPECT_EQ(Refusal("HTTP/1.1 200 OK\nA: b\r\n\r\n"), "line ends with a bare LF");
  EXPECT_EQ(Refusal("HTTP/1.1 200 O\rK\r\n\r\n"), "bare CR in the response head");
  EXPECT_EQ(Refusal("HTTP/1.1 200 OK\r\n folded\r\n\r\n"), "obs-fold (a header line starting with whitespace)");
  EXPECT_EQ(Refusal("HTTP/1.1 200 OK\r\nName : v\r\n\r\n"), "whitespace between a header name and its colon");
  EXPECT_EQ(Refusal("HTTP/2 200 OK\r\n\r\n"), "status line is not HTTP/1.x SP STATUS SP REASON");
  EXPECT_EQ(Refusal("HTTP/1.1 20 OK\r\n\r\n"), "status line is not HTTP/1.x SP STATUS SP REASON");
  EXPECT_EQ(Refusal("HTTP/1.1 200OK\r\n\r\n"), "status line is not HTTP/1.x SP STATUS SP REASON");
  EXPECT_EQ(Refusal("HTTP/1.1 099 Early\r\n\r\n"), "status code outside 100 to 599");
  EXPECT_EQ(Refusal("HTTP/1.1 200 O\x01K\r\n\r\n"), "status line contains a control character");
  EXPECT_EQ(Refusal("HTTP/1.1 200 OK\r\nA: " + std::string(kMaxResponseHead, 'x')),
            "response head larger than 65536 bytes");
  std::string many = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 101; ++i) many += "A: b\r\n";
  EXPECT_EQ(Refusal(many + "\r\n"), "more than 100 header fields");
}

TEST(ResponseStatus, IsReadFromTheFirstTwelveBytesOnly) {
  EXPECT_EQ(PeekResponseStatus(""), kStatusNeedMore);
  EXPECT_EQ(PeekResponseStatus("HTTP/1.1 10"), kStatusNeedMore);
  EXPECT_EQ(PeekResponseStatus("HTTP/1.1 101"), 101);
  EXPECT_EQ(PeekResponseStatus("HTTP/1.1 101 Switching Protocols\r\n"), 101);
  EXPECT_EQ(PeekResponseStatus("HTTP/1.0 200 OK\r\n"), 200);
  EXPECT_EQ(PeekResponseStatus("HTTP/1.1 999 x"), 999);
  // Not a status line: no switch can be confirmed by it.
  EXPECT_EQ(PeekResponseStatus("HTTP/1.1 010 x"), kNotAStatus);
  EXPECT_EQ(PeekResponseStatus("HTTP/1.1 1O1 x"), kNotAStatus);
  EXPECT_EQ(PeekResponseStatus("HTTP/2.0 101 x"), kNotAStatus);
  EXPECT_EQ(PeekResponseStatus("http/1.1 101 x"), kNotAStatus);
  EXPECT_EQ(PeekResponseStatus("HTTP/1.1  101 x"), kNotAStatus);
  EXPECT_EQ(PeekResponseStatus("SSH-2.0-OpenSSH_9.2\r\n"), kNotAStatus);
  EXPECT_EQ(PeekResponseStatus(std::string_view("HTTP/1.1 1\0\0 x", 14)), kNotAStatus);
}

TEST(ResponseStatus, AgreesWithTheHeadParser) {
  for (std::string_view head : {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
                                "HTTP/1.0 204\r\n\r\n", "HTTP/1.1 599 Odd\r\nContent-Length: 0\r\n\r\n"}) {
    ResponseHeadResult r = ParseResponseHead(head);
    ASSERT_EQ(r.kind, ResponseHeadResult::kParsed) << head;
    EXPECT_EQ(PeekResponseStatus(head), r.head.status) << head;
  }
}

}  // namespace
}  // namespace isb::egress
