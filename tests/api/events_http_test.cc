// GET /api/v1/events and GET /metrics on the real server: what each caller gets, byte for byte.
#include <poll.h>
#include <sys/socket.h>

#include <filesystem>

#include <gtest/gtest.h>

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
    opts.events = [this](const Request& req, const Identity& who) {
      return ServeEvents(bus_, req, who, {.keep_alive = milliseconds(300), .poll = milliseconds(50)});
    };
    opts.metrics = [] { return std::string("# HELP isb_up Up.\n# TYPE isb_up gauge\nisb_up 1\n"); };
    opts.metrics_public = metrics_public;
    server_ = std::make_unique<HttpServer>(opts, rest_, mcp_, [](const Request& req, bool) -> Result<Identity> {
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
    const std::string req = "GET /api/v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token +
                            "\r\n" + extra + "\r\n";
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
  EXPECT_EQ(r.body, R"({"error":"unauthenticated","message":"missing bearer token: send \"Authorization: Bearer <token>\""})");
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
  EXPECT_EQ(none.body, R"({"error":"unauthenticated","message":"missing bearer token: send \"Authorization: Bearer <token>\""})");
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

TEST_F(EventsHttpTest, ACallerHasAtMostFourStreamsOpen) {
  // Streams of earlier tests end at their next keep-alive (300 ms here), when they find their client gone.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  // Four streams of one caller: the fifth is refused until one ends.
  std::vector<Fd> open;
  for (int i = 0; i < 4; ++i) {
    std::string got;
    open.push_back(OpenStream("acme", "", &got));
  }
  Reply fifth = Get("/api/v1/events", "Authorization: Bearer acme\r\n");
  EXPECT_EQ(fifth.status, 429);
  EXPECT_EQ(fifth.body, R"({"error":"rate_limited","message":"too many event streams open (at most 4 per caller): )"
                        R"(close one, or share one between tabs"})");
}

}  // namespace
}  // namespace isb::api
