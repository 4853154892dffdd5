#include "egress/classify.h"

#include <gtest/gtest.h>

namespace isb::egress {
namespace {

TEST(ClassifyTest, HttpOnAListedPortIsNamedByItsHostAndKeepsTheConnectedPort) {
  EXPECT_EQ(ClassifyConnection("GET / HTTP/1.1\r\nHo", 80, false).state, Sniff::State::kNeedMore);
  Sniff s = ClassifyConnection("GET /x HTTP/1.1\r\nHost: API.example.com:8080\r\n\r\n", 80, false);
  EXPECT_EQ(s.state, Sniff::State::kDone);
  EXPECT_EQ(s.kind, Sniff::Kind::kHttp);
  EXPECT_EQ(s.host, "api.example.com");
  EXPECT_EQ(s.port, 0) << "the port the sandbox connected to decides, not the Host header";
  EXPECT_FALSE(s.upstream_prefix.has_value());
  EXPECT_EQ(s.method, "GET");
  EXPECT_EQ(s.path, "/x");
}

TEST(ClassifyTest, BytesThatAreNeitherTlsNorHttpCarryNoName) {
  Sniff s = ClassifyConnection("SSH-2.0-OpenSSH_9.2\r\n", 22, false);
  EXPECT_EQ(s.state, Sniff::State::kDone);
  EXPECT_EQ(s.kind, Sniff::Kind::kUnknown);
  EXPECT_EQ(s.host, "");
  EXPECT_EQ(s.method, "");
  EXPECT_EQ(s.path, "");
}

TEST(ClassifyTest, MalformedHttpIsRefusedWithTheParsersReason) {
  Sniff s = ClassifyConnection("GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n", 80, false);
  EXPECT_EQ(s.state, Sniff::State::kMalformed);
  EXPECT_EQ(s.kind, Sniff::Kind::kHttp);
  EXPECT_EQ(s.reason, "more than one Host header");
}

// An origin skips empty lines before a request; taken for a protocol without a name, the request would go to the
// port's one listed host unchecked. Refused, as HTTP.
TEST(ClassifyTest, AnEmptyLineBeforeARequestIsRefused) {
  for (const char* bytes : {"\r\nGET / HTTP/1.1\r\nHost: other.example\r\n\r\n", "\nGET / HTTP/1.1\r\n", "\r"}) {
    Sniff s = ClassifyConnection(bytes, 80, false);
    EXPECT_EQ(s.state, Sniff::State::kMalformed) << bytes;
    EXPECT_EQ(s.kind, Sniff::Kind::kHttp) << bytes;
    EXPECT_EQ(s.reason, "a connection may not begin with an empty line") << bytes;
  }
}

TEST(ClassifyTest, TheExplicitProxyTakesConnectAndAbsoluteFormOnly) {
  Sniff c = ClassifyConnection("CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n\x16\x03\x01",
                               3128, true);
  EXPECT_EQ(c.state, Sniff::State::kDone);
  EXPECT_EQ(c.kind, Sniff::Kind::kConnect);
  EXPECT_EQ(c.host, "api.example.com");
  EXPECT_EQ(c.port, 443);
  EXPECT_EQ(c.upstream_prefix, std::string("\x16\x03\x01"));
  EXPECT_EQ(c.method, "") << "a tunnel's requests are inside it";
  EXPECT_EQ(c.path, "");

  Sniff a = ClassifyConnection(
      "GET http://api.example.com/v1?q=1 HTTP/1.1\r\nHost: api.example.com\r\n"
      "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\nAccept: */*\r\n\r\nbody",
      3128, true);
  EXPECT_EQ(a.state, Sniff::State::kDone);
  EXPECT_EQ(a.kind, Sniff::Kind::kHttp);
  EXPECT_EQ(a.host, "api.example.com");
  EXPECT_EQ(a.port, 80);
  EXPECT_EQ(a.upstream_prefix, "GET /v1?q=1 HTTP/1.1\r\nHost: api.example.com\r\nAccept: */*\r\n\r\nbody");
  EXPECT_EQ(a.method, "GET");
  EXPECT_EQ(a.path, "/v1?q=1");

  Sniff o = ClassifyConnection("GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n", 3128, true);
  EXPECT_EQ(o.state, Sniff::State::kMalformed);
  EXPECT_EQ(o.reason, "a request to the proxy must be CONNECT or carry an absolute URI");
  Sniff t = ClassifyConnection("\x16\x03\x01\x00\x05hello", 3128, true);
  EXPECT_EQ(t.state, Sniff::State::kMalformed);
  EXPECT_EQ(t.reason, "the proxy port speaks HTTP only");
}

// A relayed request's head goes upstream as read on a listed port (the bytes of the buffer, up to the body), and as
// its origin form on the explicit proxy port.
TEST(RelayedRequestTest, TheHeadGoesUpstreamAsReadOrInOriginForm) {
  const std::string listed = "POST /p HTTP/1.1\r\nHost: a.example\r\nContent-Length: 3\r\n\r\nabc";
  RelayedRequest r = ReadRelayedRequest(listed, false);
  ASSERT_EQ(r.state, RelayedRequest::State::kParsed);
  EXPECT_EQ(r.Upstream(listed), "POST /p HTTP/1.1\r\nHost: a.example\r\nContent-Length: 3\r\n\r\n");
  EXPECT_EQ(r.Upstream(listed).data(), listed.data()) << "the head as read is not copied";
  EXPECT_EQ(r.body.kind, BodyFraming::kLength);

  const std::string proxied = "GET http://a.example/q?x=1 HTTP/1.1\r\nHost: a.example\r\n\r\n";
  r = ReadRelayedRequest(proxied, true);
  ASSERT_EQ(r.state, RelayedRequest::State::kParsed);
  EXPECT_EQ(r.Upstream(proxied), r.origin_form);
  EXPECT_EQ(r.Upstream(proxied).substr(0, 19), "GET /q?x=1 HTTP/1.1");

  // Without a Host, the origin form gets one naming the target, as a proxy must send it.
  const std::string hostless = "GET http://a.example:8080/q HTTP/1.0\r\nAccept: */*\r\n\r\n";
  r = ReadRelayedRequest(hostless, true);
  ASSERT_EQ(r.state, RelayedRequest::State::kParsed) << r.reason;
  EXPECT_EQ(r.Upstream(hostless), "GET /q HTTP/1.0\r\nHost: a.example:8080\r\nAccept: */*\r\n\r\n");
  const std::string plain = "GET http://a.example/ HTTP/1.1\r\n\r\n";
  EXPECT_EQ(ReadRelayedRequest(plain, true).Upstream(plain), "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n");

  EXPECT_EQ(ReadRelayedRequest("GET / HTTP/1.1\r\nHo", false).state, RelayedRequest::State::kNeedMore);
  r = ReadRelayedRequest("GET /q HTTP/1.1\r\nHost: a.example\r\n\r\n", true);
  EXPECT_EQ(r.state, RelayedRequest::State::kMalformed);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.reason, "a request to the proxy must be CONNECT or carry an absolute URI");
}

// CONNECT is never relayed, on a listed port as on the proxy's: an origin that answered it 2xx without opening a
// tunnel would take the bytes after it, unchecked, as requests.
TEST(RelayedRequestTest, AConnectIsNeverRelayed) {
  for (bool explicit_proxy : {false, true}) {
    RelayedRequest r =
        ReadRelayedRequest("CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n", explicit_proxy);
    EXPECT_EQ(r.state, RelayedRequest::State::kMalformed) << explicit_proxy;
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.reason, "CONNECT on a connection that relays HTTP");
  }
}

}  // namespace
}  // namespace isb::egress
