// The opening handshake's checks on parsed heads, and the accept value of RFC 6455's own example.
#include "net/websocket_handshake.h"

#include <gtest/gtest.h>

namespace isb::net {
namespace {

egress::HttpHead Request(const std::string& text) {
  egress::HeadResult r = egress::ParseHttpHead(text);
  EXPECT_EQ(r.kind, egress::HeadResult::kParsed) << r.reason;
  return r.head;
}

egress::ResponseHead Response(const std::string& text) {
  egress::ResponseHeadResult r = egress::ParseResponseHead(text);
  EXPECT_EQ(r.kind, egress::ResponseHeadResult::kParsed) << r.reason;
  return r.head;
}

constexpr char kKey[] = "dGhlIHNhbXBsZSBub25jZQ==";

std::string Handshake(const std::string& method, const std::string& fields) {
  return method + " /chat HTTP/1.1\r\nHost: server.example.com\r\n" + fields + "\r\n";
}

const std::string kGood =
    "Upgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Version: 13\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";

TEST(WebSocketHandshakeTest, TheAcceptValueIsTheRfcExamples) {
  EXPECT_EQ(WebSocketAccept(kKey), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(WebSocketHandshakeTest, AValidRequestHasNoRefusal) {
  egress::HttpHead head = Request(Handshake("GET", kGood));
  EXPECT_TRUE(AsksForWebSocket(head));
  EXPECT_EQ(WebSocketRequestRefusal(head), "");
}

TEST(WebSocketHandshakeTest, EachMissingPieceOfARequestIsNamed) {
  EXPECT_EQ(WebSocketRequestRefusal(Request(Handshake("POST", kGood + "Content-Length: 0\r\n"))),
            "a WebSocket handshake must be a GET, not POST");
  EXPECT_EQ(WebSocketRequestRefusal(Request(Handshake("GET", "Upgrade: h2c\r\nConnection: upgrade\r\n"))),
            "the Upgrade header does not list websocket");
  EXPECT_EQ(WebSocketRequestRefusal(Request(Handshake("GET", "Upgrade: websocket\r\nConnection: close\r\n"))),
            "the Connection header does not list upgrade");
  EXPECT_EQ(WebSocketRequestRefusal(Request(Handshake("GET", "Upgrade: websocket\r\nConnection: upgrade\r\n"))),
            "Sec-WebSocket-Version must be 13, and is missing");
  EXPECT_EQ(WebSocketRequestRefusal(
                Request(Handshake("GET", "Upgrade: websocket\r\nConnection: upgrade\r\nSec-WebSocket-Version: 8\r\n"))),
            "Sec-WebSocket-Version must be 13, not 8");
  EXPECT_EQ(WebSocketRequestRefusal(Request(
                Handshake("GET", "Upgrade: websocket\r\nConnection: upgrade\r\nSec-WebSocket-Version: 13\r\n"))),
            "the Sec-WebSocket-Key header is missing");
  EXPECT_EQ(WebSocketRequestRefusal(Request(Handshake("GET",
                                                      "Upgrade: websocket\r\nConnection: upgrade\r\n"
                                                      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: "
                                                      "c2hvcnQ=\r\n"))),
            "Sec-WebSocket-Key must be 16 bytes in base64");
}

TEST(WebSocketHandshakeTest, AnHttp10RequestIsRefused) {
  EXPECT_EQ(WebSocketRequestRefusal(Request("GET / HTTP/1.0\r\nHost: a.example\r\n" + kGood + "\r\n")),
            "a WebSocket handshake must be HTTP/1.1");
}

TEST(WebSocketHandshakeTest, TheOriginsAnswerIsChecked) {
  const std::string fields = "Upgrade: websocket\r\nConnection: Upgrade\r\n";
  EXPECT_EQ(WebSocketResponseRefusal(Response("HTTP/1.1 101 Switching Protocols\r\n" + fields +
                                              "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"),
                                     kKey),
            "");
  EXPECT_EQ(WebSocketResponseRefusal(Response("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), kKey),
            "the answer to a WebSocket handshake is 200, not 101");
  EXPECT_EQ(WebSocketResponseRefusal(Response("HTTP/1.1 101 Switching Protocols\r\n" + fields + "\r\n"), kKey),
            "the Sec-WebSocket-Accept header is missing");
  EXPECT_EQ(WebSocketResponseRefusal(Response("HTTP/1.1 101 Switching Protocols\r\n" + fields +
                                              "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n"),
                                     kKey),
            "Sec-WebSocket-Accept does not match the key");
}

}  // namespace
}  // namespace isb::net
