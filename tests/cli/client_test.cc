// The CLI's HTTP client against a scripted server: framing, SSE as it arrives, limits, and connect errors.
#include "cli/client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>

#include "cli/test_server.h"

namespace isb::cli {
namespace {

using testing::JsonAnswer;
using testing::SeenRequest;
using testing::SendAll;
using testing::TestServer;

Endpoint Unix(const std::string& path) {
  Endpoint ep;
  ep.unix_path = path;
  return ep;
}

HttpRequest Post(std::string target, std::string body) {
  HttpRequest r;
  r.method = "POST";
  r.target = std::move(target);
  r.headers = {{"Content-Type", "application/json"}};
  r.body = std::move(body);
  return r;
}

TEST(HttpClientTest, ContentLengthBodyAndRequestFraming) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 11\r\nX-Two: a\r\n\r\n"
            "{\"ok\":true}");
  });
  HttpClient client(Unix(server.socket_path()));
  auto r = client.Send(Post("/api/v1/tools/x", R"({"a":1})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, R"({"ok":true})");
  EXPECT_EQ(r->Header("Content-Type"), "application/json");
  EXPECT_EQ(r->Header("x-two"), "a");
  EXPECT_EQ(r->Header("missing"), "");

  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].head.starts_with("POST /api/v1/tools/x HTTP/1.1\r\n")) << seen[0].head;
  EXPECT_NE(seen[0].head.find("\r\nHost: localhost\r\n"), std::string::npos);
  EXPECT_NE(seen[0].head.find("\r\nContent-Length: 7\r\n"), std::string::npos);
  EXPECT_NE(seen[0].head.find("\r\nConnection: close\r\n"), std::string::npos);
  EXPECT_EQ(seen[0].body, R"({"a":1})");
}

TEST(HttpClientTest, ChunkedBodyInPiecesWithExtensionsAndTrailers) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    SendAll(fd, "lo\r\n");
    SendAll(fd, "A\r\n, chunked!\r\n0\r\nX-Trailer: t\r\n\r\n");
  });
  HttpClient client(Unix(server.socket_path()));
  auto r = client.Send(Post("/p", ""));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body, "hello, chunked!");
}

TEST(HttpClientTest, BodyUntilCloseWithoutLength) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, "HTTP/1.0 200 OK\r\n\r\nfirst ");
    SendAll(fd, "and last");
  });
  HttpClient client(Unix(server.socket_path()));
  auto r = client.Send(HttpRequest{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "first and last");
  // A GET carries no body, so no Content-Length either.
  EXPECT_EQ(server.requests()[0].head.find("Content-Length"), std::string::npos);
}

TEST(HttpClientTest, SkipsInterimResponses) {
  TestServer server(
      [](int fd, const SeenRequest&) { SendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n" + JsonAnswer(201, "{}")); });
  auto r = HttpClient(Unix(server.socket_path())).Send(Post("/p", "x"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, "{}");
}

// The second event is only sent once the client has handed the first to its handler: a client that waited for
// the whole body would never see it (the server gives up after 5 s and the test fails).
TEST(HttpClientTest, SseEventsArriveAsTheyAreSent) {
  std::promise<void> first_seen;
  auto first_future = first_seen.get_future();
  bool server_waited_in_vain = false;
  TestServer server([&](int fd, const SeenRequest&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
    std::string ev1 = "event: stdout\ndata: {\"data\":\"one\"}\n\n";
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", ev1.size());
    SendAll(fd, size + ev1 + "\r\n");
    if (first_future.wait_for(std::chrono::seconds(5)) != std::future_status::ready) server_waited_in_vain = true;
    std::string ev2 = ": keep-alive\r\nevent: result\r\ndata: {\"result\":\r\ndata: 7}\r\n\r\n";
    std::snprintf(size, sizeof size, "%zx\r\n", ev2.size());
    SendAll(fd, size + ev2 + "\r\n0\r\n\r\n");
  });
  std::vector<SseEvent> events;
  HttpClient client(Unix(server.socket_path()));
  auto r = client.SendStreaming(Post("/s?stream=1", "{}"), [&](const SseEvent& ev) {
    events.push_back(ev);
    if (events.size() == 1) first_seen.set_value();
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(server_waited_in_vain) << "the first event was not delivered before the stream ended";
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event, "stdout");
  EXPECT_EQ(events[0].data, R"({"data":"one"})");
  EXPECT_EQ(events[1].event, "result");
  EXPECT_EQ(events[1].data, "{\"result\":\n7}");
  EXPECT_EQ(r->body, "");
}

TEST(HttpClientTest, StreamingCallGetsPlainErrorBodies) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, JsonAnswer(404, R"({"error":"not_found","message":"no such sandbox"})"));
  });
  int calls = 0;
  auto r = HttpClient(Unix(server.socket_path())).SendStreaming(Post("/s", "{}"), [&](const SseEvent&) {
    ++calls;
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(r->body.find("no such sandbox"), std::string::npos);
  EXPECT_EQ(calls, 0);
}

TEST(HttpClientTest, HandlerCanStopTheStream) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: a\n\ndata: b\n\n");
  });
  std::vector<std::string> seen;
  auto r = HttpClient(Unix(server.socket_path())).SendStreaming(Post("/s", ""), [&](const SseEvent& ev) {
    seen.push_back(ev.data);
    return false;
  });
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(seen, std::vector<std::string>{"a"});
}

TEST(HttpClientTest, RefusesABodyOver64MiBByItsLength) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string((64u << 20) + 1) + "\r\n\r\nxx");
  });
  auto r = HttpClient(Unix(server.socket_path())).Send(Post("/p", "{}"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTooLarge);
  EXPECT_NE(r.error().message.find("refusing more than 67108864"), std::string::npos) << r.error().message;
}

TEST(HttpClientTest, RefusesAChunkedBodyOverTheLimitAsItGrows) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    std::string chunk(1000, 'x');
    for (int i = 0; i < 5; ++i) {
      if (!SendAll(fd, "3e8\r\n" + chunk + "\r\n")) return;
    }
    SendAll(fd, "0\r\n\r\n");
  });
  ClientLimits limits;
  limits.max_body_bytes = 2500;
  auto r = HttpClient(Unix(server.socket_path()), limits).Send(Post("/p", "{}"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTooLarge);
  EXPECT_NE(r.error().message.find("larger than 2500 bytes"), std::string::npos) << r.error().message;
}

TEST(HttpClientTest, RefusesAnSseEventOverTheLimit) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: " + std::string(5000, 'y') + "\n\n");
  });
  ClientLimits limits;
  limits.max_body_bytes = 1000;
  auto r = HttpClient(Unix(server.socket_path()), limits).SendStreaming(Post("/p", ""), [](const SseEvent&) {
    return true;
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTooLarge);
}

TEST(HttpClientTest, RefusesHeadersOver64KiB) {
  TestServer server([](int fd, const SeenRequest&) {
    std::string big = "HTTP/1.1 200 OK\r\n";
    for (int i = 0; i < 2000; ++i) big += "X-Filler-" + std::to_string(i) + ": " + std::string(40, 'f') + "\r\n";
    SendAll(fd, big + "\r\n");
  });
  auto r = HttpClient(Unix(server.socket_path())).Send(Post("/p", ""));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("headers are larger than 65536 bytes"), std::string::npos) << r.error().message;
}

TEST(HttpClientTest, MalformedAnswersAreErrorsNotCrashes) {
  for (std::string answer : {"garbage\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
                             "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                             "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
                             "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
                             "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"}) {
    TestServer server([&](int fd, const SeenRequest&) { SendAll(fd, answer); });
    auto r = HttpClient(Unix(server.socket_path())).Send(Post("/p", ""));
    EXPECT_FALSE(r.ok()) << answer;
  }
}

TEST(HttpClientTest, ServerClosingWithoutAnAnswer) {
  TestServer server([](int, const SeenRequest&) {});
  auto r = HttpClient(Unix(server.socket_path())).Send(Post("/p", ""));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kUnavailable);
  EXPECT_NE(r.error().message.find("closed the connection without answering"), std::string::npos) << r.error().message;
}

TEST(HttpClientTest, IdleTimeout) {
  std::promise<void> done;
  auto done_future = done.get_future();
  TestServer server([&](int, const SeenRequest&) { done_future.wait_for(std::chrono::seconds(5)); });
  ClientLimits limits;
  limits.idle_timeout = std::chrono::milliseconds(200);
  auto r = HttpClient(Unix(server.socket_path()), limits).Send(Post("/p", ""));
  done.set_value();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTimeout);
}

// A daemon that refuses a big request answers before reading it all; that answer, not EPIPE, is what the user sees.
TEST(HttpClientTest, EarlyAnswerToALargeRequestIsRead) {
  TestServer server(
      [](int fd, const SeenRequest&) {
        SendAll(fd, JsonAnswer(413, R"({"error":"too_large","message":"request body is larger than 8 bytes"})"));
        ::shutdown(fd, SHUT_WR);
      },
      /*read_body=*/false);
  auto r = HttpClient(Unix(server.socket_path())).Send(Post("/p", std::string(16u << 20, 'z')));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 413);
}

TEST(HttpClientTest, MissingSocketSaysHowToFixIt) {
  auto r = HttpClient(Unix("/nonexistent-isb-dir/isb.sock")).Send(HttpRequest{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kUnavailable);
  EXPECT_EQ(r.error().message,
            "cannot reach the isb daemon at unix:/nonexistent-isb-dir/isb.sock: No such file or directory; is `isb "
            "serve` running? (or set ISB_URL/--url)");
}

TEST(HttpClientTest, SocketWithNobodyListeningIsRefused) {
  char tmpl[] = "/tmp/isb-cli-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string path = std::string(tmpl) + "/isb.sock";
  {
    Fd s(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    ASSERT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  }  // bound but never listening, then closed: a stale socket file, as a dead daemon leaves it
  auto r = HttpClient(Unix(path)).Send(HttpRequest{});
  ::unlink(path.c_str());
  ::rmdir(tmpl);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(": Connection refused; is `isb serve` running?"), std::string::npos)
      << r.error().message;
}

TEST(HttpClientTest, TcpConnectionRefusedSaysHowToFixIt) {
  uint16_t port;
  {
    Fd s(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }  // closed without listening: nothing answers on that port
  auto ep = ParseUrl("http://127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(ep.ok());
  auto r = HttpClient(*ep).Send(HttpRequest{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "cannot reach the isb daemon at http://127.0.0.1:" + std::to_string(port) +
                                   ": Connection refused; is `isb serve` listening there? (or use the unix socket: "
                                   "--socket/ISB_SOCKET)");
}

TEST(HttpClientTest, HeaderInjectionIsRefused) {
  HttpRequest req;
  req.headers = {{"Authorization", "Bearer x\r\nX-Evil: 1"}};
  auto r = HttpClient(Unix("/nonexistent/isb.sock")).Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
}

TEST(ParseUrlTest, Forms) {
  auto a = ParseUrl("http://127.0.0.1:8092");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8092);
  EXPECT_EQ(a->Describe(), "http://127.0.0.1:8092");
  auto b = ParseUrl("http://[::1]:9/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->Describe(), "http://[::1]:9");
  auto c = ParseUrl("http://localhost");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port, 80);
  auto d = ParseUrl("unix:/run/isb.sock");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->unix_path, "/run/isb.sock");
  EXPECT_EQ(d->Describe(), "unix:/run/isb.sock");
  for (const char* bad : {"https://h:1", "ftp://h", "http://", "http://h:0", "http://h:70000", "http://h:x",
                          "http://h/api", "http://u:p@h:1", "http://[::1", "unix:", "127.0.0.1:8092"}) {
    EXPECT_FALSE(ParseUrl(bad).ok()) << bad;
  }
  EXPECT_NE(ParseUrl("https://h").error().message.find("https is not supported"), std::string::npos);
  // Credentials put in the URL are never echoed.
  EXPECT_EQ(ParseUrl("http://me:isb_tok_SECRET@127.0.0.1:1").error().message,
            "invalid daemon URL 'http://[redacted]@127.0.0.1:1': credentials in the URL are not supported; use "
            "ISB_TOKEN (use http://HOST:PORT or unix:/path/to/isb.sock)");
}

std::vector<SseEvent> ParseAll(std::string_view text, size_t piece) {
  SseParser p(1 << 20);
  std::vector<SseEvent> out;
  bool stop = false;
  for (size_t i = 0; i < text.size(); i += piece) {
    EXPECT_TRUE(p.Feed(
                     text.substr(i, piece),
                     [&](const SseEvent& e) {
                       out.push_back(e);
                       return true;
                     },
                     &stop)
                    .ok());
  }
  return out;
}

// Every way of cutting the stream into pieces gives the same events, including a CR LF split across pieces.
TEST(SseParserTest, SameEventsWhateverThePieces) {
  std::string text =
      ":comment\r\nevent: a\r\ndata: 1\r\ndata:2\r\n\r\nid: 7\nretry: 5\ndata\n\nevent: only-name\n\r"
      "data: x: y\rdata: \r\r";
  for (size_t piece = 1; piece <= text.size(); ++piece) {
    auto events = ParseAll(text, piece);
    ASSERT_EQ(events.size(), 3u) << "piece size " << piece;
    EXPECT_EQ(events[0].event, "a");
    EXPECT_EQ(events[0].data, "1\n2");
    EXPECT_EQ(events[1].event, "message");
    EXPECT_EQ(events[1].data, "");
    EXPECT_EQ(events[2].event, "message");  // "only-name" had no data and was dropped with its name
    EXPECT_EQ(events[2].data, "x: y\n");
  }
}

}  // namespace
}  // namespace isb::cli
