// GET /api/v1/events and GET /metrics on the real server: what each caller gets, byte for byte.
#include <poll.h>
#include <sys/socket.h>

#include <filesystem>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "api/events_stream.h"
#include "api/http_server.h"
#include "api/json_util.h"
#include "api/principals.h"
#include "api/raw_http.h"

namespace isb::api {
namespace {

using std::chrono::milliseconds;

// Reads from `fd` into `*got` until it holds `needle` or `timeout` passes; whether it does.
bool ReadUntil(const Fd& fd, std::string* got, const std::string& needle, milliseconds timeout = milliseconds(5000)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (got->find(needle) == std::string::npos) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd.get(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[4096];
    ssize_t n = recv(fd.get(), buf, sizeof buf, 0);
    if (n <= 0) return false;
    got->append(buf, static_cast<size_t>(n));
  }
  return true;
}

SandboxEvent Ev(const std::string& type, const std::string& org, const std::string& id) {
  return {.type = type, .org = org, .sandbox = id, .name = "", .state = "running", .at_ms = 1'764'953'574'000};
}

// An event's frame as the stream writes it (one chunk: its size line, then the frame).
std::string Frame(uint64_t id, const std::string& type, const std::string& org, const std::string& sandbox) {
  SandboxEvent e = Ev(type, org, sandbox);
  e.id = id;
  return "id: " + std::to_string(id) + "\nevent: sandbox\ndata: " + EventJson(e) + "\n\n";
}

class EventsHttpTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(false); }
  void Start(bool metrics_public) {
    server_.reset();
    char tmpl[] = "/tmp/isb_events_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dirs_.push_back(tmpl);
    HttpServerOptions opts;
    opts.port = 0;
    opts.unix_socket_path = dirs_.back() + "/run/isb.sock";
    opts.worker_threads = 8;
    opts.max_streams_per_account = 2;
    opts.max_streams = 3;
    opts.reauthorize_every = milliseconds(200);
    opts.events = [this](const Request& req, const Identity& who) {
      // The daemon's tool policy, as serve.cc asks it: "hidden" is a caller it hides sandbox_list from.
      return ServeEvents(bus_, req, who,
                         {.keep_alive = milliseconds(300),
                          .poll = milliseconds(50),
                          .listed = [](const Identity& caller) { return caller.user_name != "hidden"; }});
    };
    // A terminal that only waits for the server to say stop, then says so on the socket.
    opts.terminal = [](const Request&, const Identity&) {
      Response r;
      r.status = 101;
      r.headers.Set("Upgrade", "websocket");
      r.headers.Set("Connection", "Upgrade");
      r.upgraded = [](int fd, std::string_view, const std::function<bool()>& stopping) {
        while (!stopping()) std::this_thread::sleep_for(milliseconds(20));
        (void)send(fd, "stopped\n", 8, MSG_NOSIGNAL);
      };
      return r;
    };
    opts.metrics = [] { return std::string("# HELP isb_up Up.\n# TYPE isb_up gauge\nisb_up 1\n"); };
    opts.metrics_public = metrics_public;
    server_ = std::make_unique<HttpServer>(opts, rest_, mcp_, [this](const Request& req, bool) -> Result<Identity> {
      const std::string auth = req.headers.Get("Authorization");
      if (auth == "Bearer acme") return UserIn("ann", "acme", identity::Role::kViewer, 1);
      Identity admin = UserIn("pat", "acme", identity::Role::kMember, 2);
      admin.platform_admin = true;
      if (auth == "Bearer admin") return admin;
      admin.scopes = {{identity::ScopeKind::kMetrics, ""}};
      if (auth == "Bearer scraper") return admin;
      Identity narrow = UserIn("ann", "acme", identity::Role::kOwner, 3);
      narrow.scopes = {{identity::ScopeKind::kMetrics, ""}};
      if (auth == "Bearer not-admin-scraper") return narrow;
      if (auth == "Bearer revocable" && !revoked_) return UserIn("rev", "acme", identity::Role::kViewer, 4);
      if (auth == "Bearer member")
        return removed_ ? UserIn("mem", "elsewhere", identity::Role::kViewer, 5)
                        : UserIn("mem", "acme", identity::Role::kViewer, 5);
      if (auth == "Bearer hidden") return UserIn("hidden", "acme", identity::Role::kViewer, 6);
      if (auth == "Bearer bob") return UserIn("bob", "acme", identity::Role::kViewer, 7);
      if (auth == "Bearer cy") return UserIn("cy", "acme", identity::Role::kViewer, 8);
      return Error::Of(Code::kUnauthenticated, "invalid token");
    });
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.error().message;
  }
  void TearDown() override {
    server_.reset();
    for (const auto& d : dirs_) std::filesystem::remove_all(d);
  }
  // Opens the stream as `token` with `extra` headers and reads its head.
  Fd OpenStream(const std::string& token, const std::string& extra = "", std::string* got = nullptr) {
    Fd fd = Connect(server_->port());
    const std::string req =
        "GET /api/v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token + "\r\n" + extra + "\r\n";
    EXPECT_EQ(send(fd.get(), req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    std::string head;
    std::string* into = got != nullptr ? got : &head;
    EXPECT_TRUE(ReadUntil(fd, into, "\r\n\r\n"));
    EXPECT_EQ(into->rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << *into;
    EXPECT_NE(into->find("Content-Type: text/event-stream\r\n"), std::string::npos) << *into;
    return fd;
  }
  Reply Get(const std::string& path, const std::string& headers = "") {
    Fd fd = Connect(server_->port());
    return ParseReply(Exchange(fd, HttpRequest("GET", path, "", headers)));
  }

  // The last chunk of a chunked body: the stream ended.
  static constexpr char kEnd[] = "\r\n0\r\n\r\n";

  std::atomic<bool> revoked_{false}, removed_{false};
  EventBus bus_;
  Registry registry_;
  RestApi rest_{registry_, "test"};
  McpServer mcp_{registry_, McpOptions{}};
  std::unique_ptr<HttpServer> server_;
  std::vector<std::string> dirs_;
};

TEST_F(EventsHttpTest, ACreatedEventReachesACallerOfItsOrgAndNotOfAnother) {
  std::string got;
  Fd fd = OpenStream("acme", "", &got);
  bus_.Publish(Ev("created", "other", "sb-other"));
  bus_.Publish(Ev("created", "acme", "sb-mine"));
  ASSERT_TRUE(ReadUntil(fd, &got, Frame(2, "created", "acme", "sb-mine"))) << got;
  // Past the keep-alive: whatever else comes, it is never the other org's event.
  ASSERT_TRUE(ReadUntil(fd, &got, ": keep-alive\n\n")) << got;
  EXPECT_EQ(got.find("sb-other"), std::string::npos) << got;
  EXPECT_EQ(got.find("id: 1\n"), std::string::npos) << got;
}

TEST_F(EventsHttpTest, ResumingWithLastEventIdGivesExactlyTheMissedEvents) {
  for (int i = 1; i <= 5; ++i) bus_.Publish(Ev("started", "acme", "sb-" + std::to_string(i)));
  std::string got;
  Fd fd = OpenStream("acme", "Last-Event-ID: 2\r\n", &got);
  ASSERT_TRUE(ReadUntil(fd, &got, ": keep-alive\n\n")) << got;
  Reply r = ParseReply(got);
  EXPECT_EQ(r.body, Frame(3, "started", "acme", "sb-3") + Frame(4, "started", "acme", "sb-4") +
                        Frame(5, "started", "acme", "sb-5") + ": keep-alive\n\n");
}

TEST_F(EventsHttpTest, TheQueryParameterResumesLikeTheHeader) {
  for (int i = 1; i <= 3; ++i) bus_.Publish(Ev("stopped", "acme", "sb-" + std::to_string(i)));
  Fd fd = Connect(server_->port());
  const std::string req = HttpRequest("GET", "/api/v1/events?last_event_id=2", "", "Authorization: Bearer acme\r\n");
  ASSERT_EQ(send(fd.get(), req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  std::string got;
  ASSERT_TRUE(ReadUntil(fd, &got, ": keep-alive\n\n")) << got;
  EXPECT_EQ(ParseReply(got).body, Frame(3, "stopped", "acme", "sb-3") + ": keep-alive\n\n");
}

TEST_F(EventsHttpTest, AnIdTheRingDoesNotHoldGetsAReset) {
  bus_.Publish(Ev("created", "acme", "sb-1"));
  std::string got;
  Fd fd = OpenStream("acme", "Last-Event-ID: 99\r\n", &got);
  ASSERT_TRUE(ReadUntil(fd, &got, "\n\n", milliseconds(2000)));
  ASSERT_TRUE(ReadUntil(fd, &got, ": keep-alive\n\n")) << got;
  EXPECT_EQ(ParseReply(got).body, "id: 1\nevent: reset\ndata: {\"id\":1}\n\n: keep-alive\n\n");
}

TEST_F(EventsHttpTest, WithoutACredentialTheStreamIs401) {
  Reply r = Get("/api/v1/events");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.body,
            R"({"error":"unauthenticated","message":"missing bearer token: send \"Authorization: Bearer <token>\""})");
}

TEST_F(EventsHttpTest, APostToTheStreamIs405) {
  Fd fd = Connect(server_->port());
  Reply r = ParseReply(Exchange(fd, HttpRequest("POST", "/api/v1/events", "{}", "Authorization: Bearer acme\r\n")));
  EXPECT_EQ(r.status, 405);
  EXPECT_NE(r.head.find("Allow: GET"), std::string::npos);
}

TEST_F(EventsHttpTest, MetricsNeedAPlatformAdminOrTheirMetricsToken) {
  Reply none = Get("/metrics");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.body,
            R"({"error":"unauthenticated","message":"missing bearer token: send \"Authorization: Bearer <token>\""})");
  Reply viewer = Get("/metrics", "Authorization: Bearer acme\r\n");
  EXPECT_EQ(viewer.status, 403);
  EXPECT_EQ(viewer.body, R"({"error":"forbidden","message":"metrics are for platform admins: use a platform admin's )"
                         R"x(token, or one of theirs with the metrics scope (isb token create --scopes metrics)"})x");
  EXPECT_EQ(Get("/metrics", "Authorization: Bearer not-admin-scraper\r\n").status, 403);
  for (const char* token : {"admin", "scraper"}) {
    Reply ok = Get("/metrics", std::string("Authorization: Bearer ") + token + "\r\n");
    EXPECT_EQ(ok.status, 200) << token;
    EXPECT_NE(ok.head.find("Content-Type: text/plain; version=0.0.4; charset=utf-8"), std::string::npos);
    EXPECT_EQ(ok.body, "# HELP isb_up Up.\n# TYPE isb_up gauge\nisb_up 1\n");
  }
  Fd unix_fd = ConnectUnix(dirs_.back() + "/run/isb.sock");
  EXPECT_EQ(ParseReply(Exchange(unix_fd, HttpRequest("GET", "/metrics"))).status, 200);
}

TEST_F(EventsHttpTest, MetricsPublicLetsLoopbackCallersWithoutACredentialIn) {
  Start(true);
  Reply r = Get("/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "# HELP isb_up Up.\n# TYPE isb_up gauge\nisb_up 1\n");
  // A credential that is presented is still judged.
  EXPECT_EQ(Get("/metrics", "Authorization: Bearer acme\r\n").status, 403);
  EXPECT_EQ(Get("/metrics", "Authorization: Bearer wrong\r\n").status, 401);
  // From loopback but naming another host (a page whose name rebinds to 127.0.0.1, a client a tunnel brings): no.
  Fd fd = Connect(server_->port());
  const std::string rebound = "GET /metrics HTTP/1.1\r\nHost: rebind.example:8092\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(ParseReply(Exchange(fd, rebound)).status, 401);
  Fd v6 = Connect(server_->port());
  EXPECT_EQ(ParseReply(Exchange(v6, "GET /metrics HTTP/1.1\r\nHost: [::1]:8092\r\nConnection: close\r\n\r\n")).status,
            200);
}

TEST_F(EventsHttpTest, MetricsPublicAnswersOnlyAHostThatNamesLoopback) {
  Start(true);
  auto status_for = [this](const std::string& host) {
    Fd fd = Connect(server_->port());
    return ParseReply(Exchange(fd, "GET /metrics HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n")).status;
  };
  for (const char* host : {"Host: localhost\r\n", "Host: LOCALHOST:8092\r\n", "Host: 127.0.0.1:8092\r\n",
                           "Host: 127.1.2.3\r\n", "Host: [::1]:8092\r\n"})
    EXPECT_EQ(status_for(host), 200) << host;
  // A name that rebinds to 127.0.0.1, a tunnel's public name, a look-alike, or none at all: a credential is needed.
  for (const char* host : {"Host: rebind.example:8092\r\n", "Host: localhost.evil.example\r\n",
                           "Host: 127.0.0.1.nip.io\r\n", "Host: [::1\r\n", ""})
    EXPECT_EQ(status_for(host), 401) << host;
}

TEST_F(EventsHttpTest, AStreamEndsOnceItsTokenIsRevoked) {
  std::string got;
  Fd fd = OpenStream("revocable", "", &got);
  bus_.Publish(Ev("created", "acme", "sb-1"));
  ASSERT_TRUE(ReadUntil(fd, &got, Frame(1, "created", "acme", "sb-1"))) << got;
  revoked_ = true;
  // Asked again within reauthorize_every (200 ms here): the body ends, and nothing published later comes.
  ASSERT_TRUE(ReadUntil(fd, &got, kEnd, milliseconds(2000))) << got;
  bus_.Publish(Ev("created", "acme", "sb-2"));
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_FALSE(ReadUntil(fd, &got, "sb-2", milliseconds(300))) << got;
  // Coming back is refused.
  EXPECT_EQ(Get("/api/v1/events", "Authorization: Bearer revocable\r\n").status, 401);
}

TEST_F(EventsHttpTest, AStreamEndsOnceItsCallerIsRemovedFromTheOrg) {
  std::string got;
  Fd fd = OpenStream("member", "", &got);
  removed_ = true;
  ASSERT_TRUE(ReadUntil(fd, &got, kEnd, milliseconds(2000))) << got;
  bus_.Publish(Ev("created", "acme", "sb-after"));
  EXPECT_FALSE(ReadUntil(fd, &got, "sb-after", milliseconds(500))) << got;
}

TEST_F(EventsHttpTest, ATerminalIsToldToStopOnceItsTokenIsRevoked) {
  Fd fd = Connect(server_->port());
  const std::string req =
      "GET /api/v1/sandboxes/sb-1/terminal HTTP/1.1\r\nHost: localhost\r\n"
      "Authorization: Bearer revocable\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
  ASSERT_EQ(send(fd.get(), req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  std::string got;
  ASSERT_TRUE(ReadUntil(fd, &got, "\r\n\r\n")) << got;
  EXPECT_EQ(got.rfind("HTTP/1.1 101 Switching Protocols\r\n", 0), 0u) << got;
  // Still let in: the terminal runs on.
  EXPECT_FALSE(ReadUntil(fd, &got, "stopped\n", milliseconds(600))) << got;
  revoked_ = true;
  ASSERT_TRUE(ReadUntil(fd, &got, "stopped\n", milliseconds(2000))) << got;
}

TEST_F(EventsHttpTest, StreamsAreBoundedPerAccountAndInAllWhileOtherCallsGoOn) {
  // Two per account, three in all (set above): a third of ann's is refused, then a second of another account's.
  std::vector<Fd> open;
  for (const char* token : {"acme", "acme", "bob"}) open.push_back(OpenStream(token));
  Reply mine = Get("/api/v1/events", "Authorization: Bearer acme\r\n");
  EXPECT_EQ(mine.status, 429);
  EXPECT_EQ(mine.body, R"({"error":"rate_limited","message":"this account has 2 event streams and terminals open; )"
                       R"x(close one (one events stream serves every tab of a browser)"})x");
  Reply all = Get("/api/v1/events", "Authorization: Bearer cy\r\n");
  EXPECT_EQ(all.status, 429);
  EXPECT_EQ(all.body, R"({"error":"rate_limited","message":"the server has 3 event streams and terminals open; )"
                      R"(try again once one has closed"})");
  // The streams hold 3 of the 8 workers: calls still get theirs.
  EXPECT_EQ(Get("/metrics", "Authorization: Bearer admin\r\n").status, 200);
  // A stream that ends gives its slot back (found gone at its next keep-alive, 300 ms here).
  open.pop_back();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    Fd fd = Connect(server_->port());
    const std::string req = HttpRequest("GET", "/api/v1/events", "", "Authorization: Bearer cy\r\n");
    ASSERT_EQ(send(fd.get(), req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    std::string head;
    ASSERT_TRUE(ReadUntil(fd, &head, "\r\n\r\n")) << head;
    status = ParseReply(head).status;
    if (status == 200) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(status, 200);
}

TEST_F(EventsHttpTest, ACallerTheToolPolicyHidesSandboxListFromGets404AndNoEvents) {
  Reply r = Get("/api/v1/events", "Authorization: Bearer hidden\r\n");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, R"({"error":"not_found","message":"no route for /api/v1/events; see GET /api/v1/openapi.json"})");
}

}  // namespace
}  // namespace isb::api
