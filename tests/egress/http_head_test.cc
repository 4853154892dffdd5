// HTTP request-head parsing: real curl requests (origin, absolute and CONNECT forms, live from a loopback listener),
// every truncation, and each refusal with its exact status and reason.
#include "egress/http_head.h"

#include <gtest/gtest.h>

#include "net/loopback.h"

namespace isb::egress {
namespace {

HeadResult Parsed(const std::string& bytes) {
  HeadResult r = ParseHttpHead(bytes);
  EXPECT_EQ(r.kind, HeadResult::kParsed) << bytes << "\n" << r.reason;
  return r;
}

void ExpectRefused(const std::string& bytes, int status, const std::string& reason) {
  HeadResult r = ParseHttpHead(bytes);
  EXPECT_EQ(r.kind, HeadResult::kMalformed) << bytes;
  EXPECT_EQ(r.status, status) << bytes;
  EXPECT_EQ(r.reason, reason) << bytes;
}

std::string Get(const std::string& headers, const std::string& target = "/") {
  return "GET " + target + " HTTP/1.1\r\n" + headers + "\r\n";
}

const std::string kCurlAbsolute =
    "GET http://example.com/path?q=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n"
    "Proxy-Connection: Keep-Alive\r\n\r\n";
const std::string kCurlConnect =
    "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nUser-Agent: curl/7.88.1\r\n"
    "Proxy-Connection: Keep-Alive\r\n\r\n";
const std::string kCurlPost =
    "POST /submit HTTP/1.1\r\nHost: api.example.com\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\nContent-Length: 7\r\n"
    "Content-Type: application/x-www-form-urlencoded\r\n\r\na=1&b=2";

TEST(HttpHeadTest, OriginForm) {
  HeadResult r = Parsed(kCurlPost);
  const HttpHead& h = r.head;
  EXPECT_EQ(h.method, "POST");
  EXPECT_EQ(h.target, "/submit");
  EXPECT_EQ(h.form, TargetForm::kOrigin);
  EXPECT_EQ(h.minor_version, 1);
  EXPECT_EQ(h.host, "api.example.com");
  EXPECT_FALSE(h.host_is_address);
  EXPECT_EQ(h.port, 80);
  EXPECT_FALSE(h.port_explicit);
  EXPECT_EQ(h.scheme, "");
  EXPECT_EQ(h.path, "/submit");
  EXPECT_FALSE(h.connect);
  EXPECT_EQ(h.content_length, 7u);
  EXPECT_FALSE(h.chunked);
  EXPECT_EQ(h.size, kCurlPost.size() - 7);
  EXPECT_EQ(r.seen, h.size);
  ASSERT_EQ(h.headers.size(), 5u);
  EXPECT_EQ(h.headers[3].name, "Content-Length");
  EXPECT_EQ(h.headers[3].value, "7");
  ASSERT_NE(h.Find("content-TYPE"), nullptr);
  EXPECT_EQ(*h.Find("content-type"), "application/x-www-form-urlencoded");
  EXPECT_EQ(h.Find("cookie"), nullptr);
}

TEST(HttpHeadTest, HostForms) {
  struct Case {
    std::string host_header;
    std::string host;
    bool is_address;
    uint16_t port;
  };
  for (const Case& c : std::vector<Case>{{"API.Example.COM", "api.example.com", false, 80},
                                         {"api.example.com:8080", "api.example.com", false, 8080},
                                         {"127.0.0.1", "127.0.0.1", true, 80},
                                         {"0x7F.1:81", "0x7f.1", true, 81},
                                         {"2130706433", "2130706433", true, 80},
                                         {"[::1]", "::1", true, 80},
                                         {"[FE80::1]:8443", "fe80::1", true, 8443},
                                         {"a:65535", "a", false, 65535}}) {
    HeadResult r = Parsed(Get("Host: \t" + c.host_header + " \t\r\n"));
    EXPECT_EQ(r.head.host, c.host);
    EXPECT_EQ(r.head.host_is_address, c.is_address) << c.host_header;
    EXPECT_EQ(r.head.port, c.port);
    EXPECT_EQ(r.head.port_explicit, c.port != 80);
  }
  EXPECT_EQ(Parsed("GET / HTTP/1.0\r\nHost: a.example\r\n\r\n").head.minor_version, 0);
}

TEST(HttpHeadTest, AbsoluteForm) {
  HeadResult r = Parsed(kCurlAbsolute);
  EXPECT_EQ(r.head.form, TargetForm::kAbsolute);
  EXPECT_EQ(r.head.scheme, "http");
  EXPECT_EQ(r.head.host, "example.com");
  EXPECT_EQ(r.head.port, 80);
  EXPECT_EQ(r.head.path, "/path?q=1");
  struct Case {
    std::string target, host_header, scheme, host, path;
    uint16_t port;
  };
  for (const Case& c :
       std::vector<Case>{{"HTTP://Example.com:8080/a/b?c", "example.com:8080", "http", "example.com", "/a/b?c", 8080},
                         {"https://example.com", "", "https", "example.com", "/", 443},
                         {"https://example.com/x", "example.com", "https", "example.com", "/x", 443},
                         {"https://example.com:443/x", "example.com", "https", "example.com", "/x", 443},
                         {"http://example.com?x=1", "example.com:80", "http", "example.com", "/?x=1", 80},
                         {"http://[2001:db8::1]:81/", "[2001:db8::1]:81", "http", "2001:db8::1", "/", 81},
                         {"http://10.0.0.1/", "", "http", "10.0.0.1", "/", 80}}) {
    std::string host = c.host_header.empty() ? "" : "Host: " + c.host_header + "\r\n";
    HeadResult a = Parsed(Get(host, c.target));
    EXPECT_EQ(a.head.form, TargetForm::kAbsolute);
    EXPECT_EQ(a.head.scheme, c.scheme) << c.target;
    EXPECT_EQ(a.head.host, c.host) << c.target;
    EXPECT_EQ(a.head.path, c.path) << c.target;
    EXPECT_EQ(a.head.port, c.port) << c.target;
  }
}

TEST(HttpHeadTest, ConnectAndAsterisk) {
  HeadResult r = Parsed(kCurlConnect);
  EXPECT_TRUE(r.head.connect);
  EXPECT_EQ(r.head.form, TargetForm::kAuthority);
  EXPECT_EQ(r.head.host, "example.com");
  EXPECT_EQ(r.head.port, 443);
  EXPECT_TRUE(r.head.port_explicit);
  EXPECT_EQ(r.head.path, "");
  // Older Python clients send CONNECT over HTTP/1.0 without a Host; a Host without a port names the same target.
  EXPECT_EQ(Parsed("CONNECT git.example:22 HTTP/1.0\r\n\r\n").head.port, 22);
  EXPECT_EQ(Parsed("CONNECT git.example:22 HTTP/1.1\r\nHost: git.example\r\nContent-Length: 0\r\n\r\n").head.host,
            "git.example");
  HeadResult o = Parsed("OPTIONS * HTTP/1.1\r\nHost: a.example\r\n\r\n");
  EXPECT_EQ(o.head.form, TargetForm::kAsterisk);
  EXPECT_EQ(o.head.host, "a.example");
}

TEST(HttpHeadTest, FramingHeaders) {
  HeadResult r = Parsed(Get("Host: a\r\nTransfer-Encoding: Chunked\r\n"));
  EXPECT_TRUE(r.head.chunked);
  EXPECT_FALSE(r.head.content_length);
  EXPECT_EQ(Parsed(Get("Host: a\r\nContent-Length: 000000000000000012\r\n")).head.content_length, 12u);
  EXPECT_EQ(Parsed(Get("Host: a\r\ncontent-length: 999999999999999999\r\n")).head.content_length, 999999999999999999u);
  EXPECT_EQ(Parsed(Get("Host: a\r\nContent-Length: 0\r\n")).head.content_length, 0u);
}

TEST(HttpHeadTest, EveryTruncationNeedsMore) {
  for (const std::string& full : {kCurlAbsolute, kCurlConnect, kCurlPost.substr(0, kCurlPost.size() - 7)}) {
    for (size_t n = 0; n < full.size(); ++n) {
      HeadResult r = ParseHttpHead(full.substr(0, n));
      ASSERT_EQ(r.kind, HeadResult::kNeedMore) << n << ": " << r.reason;
      ASSERT_EQ(r.seen, n);
    }
    EXPECT_EQ(ParseHttpHead(full).kind, HeadResult::kParsed);
  }
}

TEST(HttpHeadTest, RecognizesWhatIsNotHttp) {
  for (const std::string& bytes :
       {std::string("\x16\x03\x01\x02\x00", 5), std::string("SSH-2.0-OpenSSH_9.2\r\n"),
        std::string("get / HTTP/1.1\r\n"), std::string(" GET / HTTP/1.1\r\n"), std::string("\r\n"),
        std::string("GET\r\n"), std::string(21, 'A'), std::string("PRI\x00", 4)}) {
    HeadResult r = ParseHttpHead(bytes);
    EXPECT_EQ(r.kind, HeadResult::kNotHttp) << bytes;
    EXPECT_EQ(r.reason, "does not start with an HTTP method");
  }
  EXPECT_EQ(ParseHttpHead(std::string(20, 'A')).kind, HeadResult::kNeedMore);
  EXPECT_EQ(ParseHttpHead("VERSION-CONTROL / HTTP/1.1\r\nHost: a\r\n\r\n").kind, HeadResult::kParsed);
}

TEST(HttpHeadTest, RefusesBadRequestLines) {
  const std::string host = "Host: a.example\r\n\r\n";
  for (const auto& [line, status, reason] : std::vector<std::tuple<std::string, int, std::string>>{
           {"GET  / HTTP/1.1", 400, "request line is not METHOD SP TARGET SP VERSION"},
           {"GET / HTTP/1.1 ", 400, "request line is not METHOD SP TARGET SP VERSION"},
           {"GET /", 400, "request line is not METHOD SP TARGET SP VERSION"},
           {"GET / HTTX/1.1", 400, "request line is not METHOD SP TARGET SP VERSION"},
           {"GET / http/1.1", 400, "request line is not METHOD SP TARGET SP VERSION"},
           {"GET / HTTP/1.10", 400, "request line is not METHOD SP TARGET SP VERSION"},
           {"GET / HTTP/2.0", 505, "unsupported HTTP version (only HTTP/1.0 and HTTP/1.1)"},
           {"GET / HTTP/0.9", 505, "unsupported HTTP version (only HTTP/1.0 and HTTP/1.1)"},
           {"GET /\x01 HTTP/1.1", 400, "request target contains a control, space or non-ASCII byte"},
           {"GET /\tx HTTP/1.1", 400, "request target contains a control, space or non-ASCII byte"},
           {"GET /caf\xc3\xa9 HTTP/1.1", 400, "request target contains a control, space or non-ASCII byte"},
           {"GET /#frag HTTP/1.1", 400, "request target contains a fragment (#)"},
           {"GET a.example:443 HTTP/1.1", 400, "request target is not in origin, absolute, authority or asterisk form"},
           {"GET * HTTP/1.1", 400, "asterisk-form target is only for OPTIONS"},
           {"GET ftp://a.example/ HTTP/1.1", 400, "absolute-form target with a scheme other than http or https"},
           {"GET http://user@a.example/ HTTP/1.1", 400, "request target: user info (@) in the authority"},
           {"GET http:///x HTTP/1.1", 400, "request target: host name is empty"},
           {"GET http://a.example:0/ HTTP/1.1", 400, "request target: port is not a number from 1 to 65535"},
           {"GET http://-a.example/ HTTP/1.1", 400,
            "request target: host name has a label starting or ending with '-'"},
           {"CONNECT a.example HTTP/1.1", 400, "CONNECT target has no port"},
           {"CONNECT /x HTTP/1.1", 400,
            "request target: host name contains a byte other than a letter, digit, '-', '_' or '.'"},
           {"CONNECT a.example:99999 HTTP/1.1", 400, "request target: port is not a number from 1 to 65535"},
           {"CONNECT ::1:443 HTTP/1.1", 400, "request target: more than one ':' in the authority"}}) {
    ExpectRefused(line + "\r\n" + host, status, reason);
  }
}

TEST(HttpHeadTest, RefusesBadHeaderLines) {
  for (const auto& [headers, reason] : std::vector<std::pair<std::string, std::string>>{
           {"Host: a\r\n  folded\r\n", "obs-fold (a header line starting with whitespace)"},
           {" Host: a\r\n", "obs-fold (a header line starting with whitespace)"},
           {"\tHost: a\r\n", "obs-fold (a header line starting with whitespace)"},
           {"Host: a\r\nNoColon\r\n", "header line without a colon"},
           {"Host : a\r\n", "whitespace between a header name and its colon"},
           {"Host\t: a\r\n", "whitespace between a header name and its colon"},
           {": a\r\nHost: a\r\n", "header name is not a token"},
           {"Ho(st: a\r\n", "header name is not a token"},
           {"Host: a\r\nX-A\xc3\xa9: 1\r\n", "header name is not a token"},
           {std::string("Host: a\r\nX: a\0b\r\n", 17), "header value contains a control character"},
           {"Host: a\r\nX: a\x01\r\n", "header value contains a control character"},
           {"Host: a\r\nX: a\x7f\r\n", "header value contains a control character"}}) {
    ExpectRefused(Get(headers), 400, reason);
  }
  ExpectRefused("GET / HTTP/1.1\nHost: a\n\n", 400, "line ends with a bare LF");
  ExpectRefused("GET / HTTP/1.1\r\nHost: a\n\r\n", 400, "line ends with a bare LF");
  ExpectRefused("GET / HTTP/1.1\r\nHost: a\r\n\n", 400, "line ends with a bare LF");
  ExpectRefused("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", 400, "bare CR in the request head");
  ExpectRefused("GET /\r HTTP/1.1\r\nHost: a\r\n\r\n", 400, "bare CR in the request head");
  // Bytes above 0x7f in a value (obs-text) and tabs inside it pass untouched.
  EXPECT_EQ(*Parsed(Get("Host: a\r\nX: caf\xc3\xa9\tb\r\n")).head.Find("x"), "caf\xc3\xa9\tb");
  EXPECT_EQ(*Parsed(Get("Host: a\r\nX:\r\n")).head.Find("x"), "");
}

TEST(HttpHeadTest, RefusesBadHosts) {
  for (const auto& [headers, reason] : std::vector<std::pair<std::string, std::string>>{
           {"", "no Host header"},
           {"X-Host: a\r\n", "no Host header"},
           {"Host: a\r\nHost: b\r\n", "more than one Host header"},
           {"Host: a\r\nHost: a\r\n", "more than one Host header"},
           {"Host: a\r\nhost: a\r\n", "more than one host header"},
           {"Host: \r\n", "Host header: host name is empty"},
           {"Host: a:\r\n", "Host header: port is not a number from 1 to 65535"},
           {"Host: a:0\r\n", "Host header: port is not a number from 1 to 65535"},
           {"Host: a:65536\r\n", "Host header: port is not a number from 1 to 65535"},
           {"Host: a:+80\r\n", "Host header: port is not a number from 1 to 65535"},
           {"Host: a:080x\r\n", "Host header: port is not a number from 1 to 65535"},
           {"Host: a:000080\r\n", "Host header: port is not a number from 1 to 65535"},
           {"Host: u:p@a\r\n", "Host header: user info (@) in the authority"},
           {"Host: [::1\r\n", "Host header: IPv6 literal without its closing bracket"},
           {"Host: [a.example]\r\n", "Host header: bracketed host is not an IPv6 address"},
           {"Host: [::1]x\r\n", "Host header: bytes after an IPv6 literal"},
           {"Host: ::1\r\n", "Host header: more than one ':' in the authority"},
           {"Host: a b\r\n", "Host header: host name contains a byte other than a letter, digit, '-', '_' or '.'"},
           {"Host: a.example.\r\n", "Host header: host name has an empty label"},
           {"Host: a/b\r\n", "Host header: host name contains a byte other than a letter, digit, '-', '_' or '.'"}}) {
    ExpectRefused(Get(headers), 400, reason);
  }
  ExpectRefused("GET / HTTP/1.0\r\n\r\n", 400, "no Host header");
  EXPECT_EQ(Parsed(Get("Host: a\r\nX_Host: b\r\nContent_Type: x\r\n")).head.host, "a");
  ExpectRefused("OPTIONS * HTTP/1.1\r\n\r\n", 400, "no Host header");
}

TEST(HttpHeadTest, RefusesAHostThatDiffersFromTheTarget) {
  for (const auto& [target, host] :
       std::vector<std::pair<std::string, std::string>>{{"http://a.example/", "b.example"},
                                                        {"http://a.example/", "a.example:8080"},
                                                        {"http://a.example:8080/", "a.example"},
                                                        {"https://a.example/", "a.example:80"},
                                                        {"http://a.example/", "a.example.evil"},
                                                        {"http://127.0.0.1/", "127.1"}}) {
    ExpectRefused(Get("Host: " + host + "\r\n", target), 400, "Host header differs from the request target");
  }
  ExpectRefused("CONNECT a.example:443 HTTP/1.1\r\nHost: b.example:443\r\n\r\n", 400,
                "Host header differs from the request target");
  ExpectRefused("CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:8443\r\n\r\n", 400,
                "Host header differs from the request target");
}

TEST(HttpHeadTest, RefusesAmbiguousBodies) {
  for (const auto& [headers, status, reason] : std::vector<std::tuple<std::string, int, std::string>>{
           {"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 400,
            "both Content-Length and Transfer-Encoding (request smuggling)"},
           {"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400,
            "both Content-Length and Transfer-Encoding (request smuggling)"},
           {"Content-Length: 5\r\nContent-Length: 5\r\n", 400, "more than one Content-Length header"},
           {"Content-Length: 5\r\ncontent-length: 6\r\n", 400, "more than one content-length header"},
           {"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400,
            "more than one Transfer-Encoding header"},
           {"Content-Length: 5, 5\r\n", 400, "Content-Length is not a decimal number of at most 18 digits"},
           {"Content-Length: +5\r\n", 400, "Content-Length is not a decimal number of at most 18 digits"},
           {"Content-Length: -1\r\n", 400, "Content-Length is not a decimal number of at most 18 digits"},
           {"Content-Length: 0x10\r\n", 400, "Content-Length is not a decimal number of at most 18 digits"},
           {"Content-Length: \r\n", 400, "Content-Length is not a decimal number of at most 18 digits"},
           {"Content-Length: 1 2\r\n", 400, "Content-Length is not a decimal number of at most 18 digits"},
           {"Content-Length: 1234567890123456789\r\n", 400,
            "Content-Length is not a decimal number of at most 18 digits"},
           {"Transfer-Encoding: gzip, chunked\r\n", 501, "Transfer-Encoding other than chunked"},
           {"Transfer-Encoding: chunked, chunked\r\n", 501, "Transfer-Encoding other than chunked"},
           {"Transfer-Encoding: identity\r\n", 501, "Transfer-Encoding other than chunked"},
           {"Transfer-Encoding: \"chunked\"\r\n", 501, "Transfer-Encoding other than chunked"},
           {"Content_Length: 5\r\n", 400, "underscore spelling of Content-Length or Transfer-Encoding"},
           {"transfer_encoding: chunked\r\n", 400, "underscore spelling of Content-Length or Transfer-Encoding"},
           {"Content-Length: 1\r\nTransfer_Encoding: chunked\r\n", 400,
            "underscore spelling of Content-Length or Transfer-Encoding"}}) {
    ExpectRefused(Get("Host: a\r\n" + headers), status, reason);
  }
  ExpectRefused("POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
                "Transfer-Encoding in an HTTP/1.0 request");
  ExpectRefused("CONNECT a:443 HTTP/1.1\r\nContent-Length: 3\r\n\r\n", 400, "CONNECT with a body");
  ExpectRefused("CONNECT a:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "CONNECT with a body");
}

TEST(HttpHeadTest, Limits) {
  std::string headers = "Host: a\r\n";
  for (int i = 1; i < 100; ++i) headers += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(Parsed(Get(headers)).head.headers.size(), 100u);
  ExpectRefused(Get(headers + "X-101: v\r\n"), 431, "more than 100 header fields");

  std::string line = "GET /" + std::string(kMaxRequestLine - 14, 'a') + " HTTP/1.1";
  ASSERT_EQ(line.size(), kMaxRequestLine);
  EXPECT_EQ(Parsed(line + "\r\nHost: a\r\n\r\n").kind, HeadResult::kParsed);
  ExpectRefused("GET /a" + line.substr(5) + "\r\nHost: a\r\n\r\n", 414, "request line longer than 8192 bytes");
  EXPECT_EQ(ParseHttpHead(line.substr(0, kMaxRequestLine)).kind, HeadResult::kNeedMore);
  ExpectRefused(line + "a", 414, "request line longer than 8192 bytes");

  // A head of exactly 64 KiB parses; one byte more is refused, whether or not its end has arrived.
  std::string start = "GET / HTTP/1.1\r\nHost: a\r\nX: ";
  std::string exact = start + std::string(kMaxHttpHead - start.size() - 4, 'v') + "\r\n\r\n";
  ASSERT_EQ(exact.size(), kMaxHttpHead);
  EXPECT_EQ(Parsed(exact).head.size, kMaxHttpHead);
  std::string over = start + std::string(kMaxHttpHead - start.size() - 3, 'v') + "\r\n\r\n";
  ExpectRefused(over, 431, "request head larger than 65536 bytes");
  ExpectRefused(over.substr(0, kMaxHttpHead), 431, "request head larger than 65536 bytes");
  EXPECT_EQ(ParseHttpHead(over.substr(0, kMaxHttpHead - 1)).kind, HeadResult::kNeedMore);
}

// Parses the head curl sends to a loopback listener.
HeadResult FromCurl(std::vector<std::string> args) {
  args.insert(args.begin(), {"curl", "-s", "--max-time", "10"});
  HeadResult r;
  auto sent = testing::CaptureClient(args, [&](const std::string& got) {
    r = ParseHttpHead(got);
    return r.kind != HeadResult::kNeedMore;
  });
  EXPECT_TRUE(sent.ok()) << sent.error().message;
  return r;
}

TEST(HttpHeadTest, LiveCurlThroughAProxy) {
  HeadResult r = FromCurl({"-x", "http://127.0.0.1:PORT", "http://Files.Example.com:8080/a/b?c=d"});
  ASSERT_EQ(r.kind, HeadResult::kParsed) << r.reason;
  EXPECT_EQ(r.head.form, TargetForm::kAbsolute);
  EXPECT_EQ(r.head.host, "files.example.com");
  EXPECT_EQ(r.head.port, 8080);
  EXPECT_EQ(r.head.path, "/a/b?c=d");
  EXPECT_EQ(*r.head.Find("host"), "Files.Example.com:8080");
}

TEST(HttpHeadTest, LiveCurlConnect) {
  HeadResult r = FromCurl({"-p", "-x", "http://127.0.0.1:PORT", "https://api.example.org/"});
  ASSERT_EQ(r.kind, HeadResult::kParsed) << r.reason;
  EXPECT_TRUE(r.head.connect);
  EXPECT_EQ(r.head.host, "api.example.org");
  EXPECT_EQ(r.head.port, 443);
}

TEST(HttpHeadTest, LiveCurlDirect) {
  HeadResult r = FromCurl({"-H", "Host: web.example", "-H", "Transfer-Encoding: chunked", "--data-binary", "x",
                           "http://127.0.0.1:PORT/upload"});
  ASSERT_EQ(r.kind, HeadResult::kParsed) << r.reason;
  EXPECT_EQ(r.head.method, "POST");
  EXPECT_EQ(r.head.form, TargetForm::kOrigin);
  EXPECT_EQ(r.head.host, "web.example");
  EXPECT_TRUE(r.head.chunked);
}

}  // namespace
}  // namespace isb::egress
