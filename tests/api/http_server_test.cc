// The real server on 127.0.0.1:0 and a unix socket, driven by a raw blocking client: auth, routing, streaming,
// and malformed HTTP that must get a 4xx and leave the server serving.
#include "api/http_server.h"
#include "api/principals.h"
#include "api/raw_http.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>
#include <filesystem>

#include <gtest/gtest.h>
#include <mutex>
#include <condition_variable>

#include "api/fake_sandboxes.h"
#include "api/json_util.h"
#include "api/preview_host.h"
#include "api/sandbox_tools.h"
#include "base/fd.h"

namespace isb::api {
namespace {

const char* kAuth = "Authorization: Bearer s3cret\r\n";

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb_api_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_path_ = dir_ + "/run/isb.sock";
    ASSERT_TRUE(AddSandboxTools(registry_, fake_).ok());
    HttpServerOptions opts;
    opts.port = 0;
    opts.unix_socket_path = socket_path_;
    opts.io_threads = 2;
    opts.worker_threads = 8;
    opts.max_calls_per_account = 2;
    Configure(opts);
    server_ = std::make_unique<HttpServer>(opts, rest_, mcp_, [](const Request& req, bool) -> Result<Identity> {
      if (req.headers.Get("Authorization") == "Bearer s3cret") return UserIn("test");
      return Error::Of(Code::kUnauthenticated, "invalid token");
    });
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_NE(server_->port(), 0);
  }
  virtual void Configure(HttpServerOptions&) {}
  void TearDown() override {
    JoinExecs();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Starts `n` TCP sandbox_execs, each blocked in the fake until JoinExecs, which returns their statuses.
  void BlockExecs(size_t n) {
    fake_.exec_fn = [this](const ExecRequest&, const OutputSink&) -> Result<ExecResult> {
      std::unique_lock lock(exec_mu_);
      ++execs_blocked_;
      exec_cv_.notify_all();
      exec_cv_.wait(lock, [this] { return execs_released_; });
      return ExecResult{};
    };
    const std::string id = fake_.Create({})->id;
    const std::string exec = HttpRequest("POST", "/api/v1/tools/sandbox_exec",
                                         json({{"sandbox", id}, {"argv", {"sleep", "900"}}}).dump(), kAuth);
    exec_statuses_.assign(n, 0);
    for (size_t i = 0; i < n; ++i) exec_calls_.emplace_back([this, exec, i] { exec_statuses_[i] = Tcp(exec).status; });
  }
  bool WaitForBlockedExecs(int n) {
    std::unique_lock lock(exec_mu_);
    return exec_cv_.wait_for(lock, std::chrono::seconds(10), [&] { return execs_blocked_ == n; });
  }
  std::vector<int> JoinExecs() {
    {
      std::lock_guard lock(exec_mu_);
      execs_released_ = true;
    }
    exec_cv_.notify_all();
    for (auto& t : exec_calls_) t.join();
    exec_calls_.clear();
    return exec_statuses_;
  }

  Reply Tcp(const std::string& request, bool half_close = false) {
    Fd fd = Connect(server_->port());
    return ParseReply(Exchange(fd, request, half_close));
  }
  void ExpectHealthy() {
    Reply r = Tcp(HttpRequest("GET", "/healthz"));
    EXPECT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body, R"({"ok":true})");
  }

  std::string dir_, socket_path_;
  FakeSandboxes fake_;
  Registry registry_;
  RestApi rest_{registry_, "test"};
  McpServer mcp_{registry_, McpOptions{}};
  std::unique_ptr<HttpServer> server_;
  std::mutex exec_mu_;
  std::condition_variable exec_cv_;
  int execs_blocked_ = 0;
  bool execs_released_ = false;
  std::vector<std::thread> exec_calls_;
  std::vector<int> exec_statuses_;
};

TEST_F(HttpServerTest, AuthenticatesTcpRequests) {
  ExpectHealthy();  // no token needed
  Reply none = Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_list", "{}"));
  EXPECT_EQ(none.status, 401);
  EXPECT_NE(none.head.find("WWW-Authenticate: Bearer"), std::string::npos);
  EXPECT_EQ(json::parse(none.body)["error"], "unauthenticated");
  EXPECT_EQ(Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_list", "{}", "Authorization: Bearer nope\r\n")).status, 401);
  EXPECT_EQ(Tcp(HttpRequest("POST", "/mcp", "{}")).status, 401);
  Reply ok = Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_create", R"({"name":"a"})", kAuth));
  ASSERT_EQ(ok.status, 200) << ok.raw;
  EXPECT_EQ(json::parse(ok.body)["result"]["name"], "a");
}

TEST_F(HttpServerTest, UnixSocketIsSuperadminAndPrivate) {
  struct stat st {};
  ASSERT_EQ(stat(socket_path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((dir_ + "/run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  Fd fd = ConnectUnix(socket_path_);
  Reply r = ParseReply(Exchange(fd, HttpRequest("POST", "/api/v1/tools/sandbox_create", R"({"name":"u"})")));
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(json::parse(r.body)["result"]["name"], "u");
}

TEST_F(HttpServerTest, MalformedRequestsGet4xxAndTheServerKeepsServing) {
  Reply truncated = Tcp("POST /api/v1/tools/sandbox_list HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", true);
  EXPECT_EQ(truncated.status, 400) << truncated.raw;
  ExpectHealthy();

  std::string big(9 << 20, 'a');
  Reply too_big = Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_list", big, kAuth));
  EXPECT_EQ(too_big.status, 413) << too_big.raw.substr(0, 200);
  EXPECT_EQ(json::parse(too_big.body)["error"], "too_large");
  ExpectHealthy();

  EXPECT_EQ(Tcp("NOT HTTP AT ALL\r\n\r\n").status, 400);
  EXPECT_EQ(Tcp("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n").status, 400);
  EXPECT_EQ(Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_exec", "{bad json", kAuth)).status, 400);
  Reply wrong = Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_exec", R"({"sandbox":"a","argv":"ls"})", kAuth));
  EXPECT_EQ(wrong.status, 400);
  EXPECT_EQ(json::parse(wrong.body)["message"], "argv: expected array, got string");
  EXPECT_EQ(Tcp(HttpRequest("POST", "/api/v1/tools/nope", "{}", kAuth)).status, 404);
  // A client that connects and goes away mid-header.
  {
    Fd fd = Connect(server_->port());
    ASSERT_GT(send(fd.get(), "GET /hea", 8, MSG_NOSIGNAL), 0);
  }
  ExpectHealthy();
}

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  std::string two = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + HttpRequest("GET", "/healthz");
  Fd fd = Connect(server_->port());
  std::string raw = Exchange(fd, two);
  size_t first = raw.find("HTTP/1.1 200");
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(raw.find("HTTP/1.1 200", first + 1), std::string::npos) << raw;
}

TEST_F(HttpServerTest, HeadGetsHeadersOnly) {
  std::string two = "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + HttpRequest("GET", "/healthz");
  Fd fd = Connect(server_->port());
  std::string raw = Exchange(fd, two);
  size_t second = raw.find("HTTP/1.1 200", 1);
  ASSERT_NE(second, std::string::npos) << raw;
  EXPECT_EQ(raw.substr(second - 4, 4), "\r\n\r\n");  // no body between the two responses
  EXPECT_EQ(ParseReply(raw.substr(second)).body, R"({"ok":true})");
}

TEST_F(HttpServerTest, ClientLeavingMidStreamDoesNotHurt) {
  fake_.exec_fn = [](const ExecRequest&, const OutputSink& sink) -> Result<ExecResult> {
    for (int i = 0; i < 200; ++i) {
      if (sink) sink(1, std::string(4096, 'x'));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return ExecResult{};
  };
  ASSERT_EQ(Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_create", R"({"name":"s"})", kAuth)).status, 200);
  {
    Fd fd = Connect(server_->port());
    std::string req =
        HttpRequest("POST", "/api/v1/tools/sandbox_exec?stream=1", R"({"sandbox":"s","argv":["x"]})", kAuth);
    ASSERT_EQ(send(fd.get(), req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    char buf[256];
    ASSERT_GT(recv(fd.get(), buf, sizeof buf, 0), 0);
  }  // closed while output is still coming
  ExpectHealthy();
}

TEST_F(HttpServerTest, StreamsExecOverSse) {
  ASSERT_EQ(Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_create", R"({"name":"s"})", kAuth)).status, 200);
  Reply r = Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_exec?stream=1", R"({"sandbox":"s","argv":["ls"]})", kAuth));
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_NE(r.head.find("Content-Type: text/event-stream"), std::string::npos);
  EXPECT_NE(r.body.find("event: stdout\ndata: {\"data\":\"out:\"}\n\n"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("event: result\ndata: {\"result\":"), std::string::npos) << r.body;
}

TEST_F(HttpServerTest, ServesMcp) {
  std::string init = R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",
                        "capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";
  Reply r = Tcp(HttpRequest("POST", "/mcp", init, kAuth));
  ASSERT_EQ(r.status, 200) << r.raw;
  size_t at = r.head.find("Mcp-Session-Id: ");
  ASSERT_NE(at, std::string::npos);
  std::string sid = r.head.substr(at + 16, 32);
  Reply list =
      Tcp(HttpRequest("POST", "/orgs/default/mcp", R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})",
                      std::string(kAuth) + "Mcp-Session-Id: " + sid + "\r\nMCP-Protocol-Version: 2025-11-25\r\n"));
  ASSERT_EQ(list.status, 200) << list.raw;
  EXPECT_EQ(json::parse(list.body)["result"]["tools"].size(), 15u);
  EXPECT_EQ(Tcp(HttpRequest("GET", "/mcp", "", kAuth)).status, 405);
  EXPECT_EQ(Tcp(HttpRequest("POST", "/mcp", init, std::string(kAuth) + "Origin: http://evil.example\r\n")).status, 403);
}

TEST_F(HttpServerTest, ExpectContinue) {
  Fd fd = Connect(server_->port());
  std::string body = "{}";
  std::string head = "POST /api/v1/tools/sandbox_list HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
                     std::string(kAuth) + "Expect: 100-continue\r\nContent-Length: 2\r\n\r\n";
  std::string raw = Exchange(fd, head + body);
  EXPECT_EQ(raw.rfind("HTTP/1.1 100 Continue", 0), 0u) << raw;
  EXPECT_NE(raw.find("HTTP/1.1 200"), std::string::npos);
}

// One account's calls in flight are bounded: past the limit (2 here) it gets 429 at once, while the server answers
// everyone else (and the host on the unix socket), and once a call returns the account is served again.
TEST_F(HttpServerTest, AnAccountsCallsInFlightAreBounded) {
  BlockExecs(2);
  ASSERT_TRUE(WaitForBlockedExecs(2));
  Reply third = Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_list", "{}", kAuth));
  EXPECT_EQ(third.status, 429) << third.raw;
  EXPECT_NE(third.head.find("Retry-After: 1"), std::string::npos) << third.head;
  EXPECT_EQ(json::parse(third.body)["message"], "this account has 2 calls running; try again once one has returned");
  ExpectHealthy();
  Fd host = ConnectUnix(socket_path_);
  EXPECT_EQ(ParseReply(Exchange(host, HttpRequest("POST", "/api/v1/tools/sandbox_list", "{}"))).status, 200);
  EXPECT_EQ(JoinExecs(), (std::vector<int>{200, 200}));
  EXPECT_EQ(Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_list", "{}", kAuth)).status, 200);
}

// A preview's requests go to the preview's handler, including heads too malformed or too large for the server to
// parse: those are answered there (by the preview proxy's own minimal page), never by isb's 400 or 431.
class HttpServerPreviewTest : public HttpServerTest {
 protected:
  void Configure(HttpServerOptions& opts) override {
    opts.preview_takes = [](std::string_view host, std::string_view target) {
      return ParsePreviewOfRequest(host, target, "localhost").has_value();
    };
    opts.preview = [this](int fd, std::string pending) { Hand(fd, "taken " + pending); };
    opts.preview_refused = [this](int fd, int status) { Hand(fd, "refused " + std::to_string(status)); };
    opts.on_refused = [this](const Request&, const Identity*, std::string_view surface, const Error& error) {
      std::lock_guard lock(mu_);
      told_.push_back(std::string(surface) + " " + std::string(CodeName(error.code)) + " " + error.message);
    };
  }
  std::vector<std::string> Told() {
    std::lock_guard lock(mu_);
    return told_;
  }
  std::vector<std::string> told_;
  // What the preview's side was given, noted; the connection answered "preview" and closed.
  void Hand(int fd, const std::string& what) {
    {
      std::lock_guard lock(mu_);
      handed_.push_back(what);
    }
    Fd owned(fd);
    ::send(owned.get(), "preview\n", 8, MSG_NOSIGNAL);
    ::shutdown(owned.get(), SHUT_RDWR);
  }
  std::vector<std::string> Handed() {
    std::lock_guard lock(mu_);
    return handed_;
  }
  std::mutex mu_;
  std::vector<std::string> handed_;
};

constexpr char kPreviewHostLine[] = "Host: 8080-sb-0123456789abcdef-acme.localhost:8092\r\n";

TEST_F(HttpServerPreviewTest, AWellFormedHeadNamingAPreviewGoesToThePreviewAsRead) {
  const std::string head = std::string("GET / HTTP/1.1\r\n") + kPreviewHostLine + "\r\n";
  Fd fd = Connect(server_->port());
  EXPECT_EQ(Exchange(fd, head), "preview\n");
  EXPECT_EQ(Handed(), std::vector<std::string>{"taken " + head});
}

TEST_F(HttpServerPreviewTest, AMalformedFieldAfterAPreviewsHostIsThePreviewsToRefuse400) {
  Fd fd = Connect(server_->port());
  EXPECT_EQ(Exchange(fd, std::string("GET / HTTP/1.1\r\n") + kPreviewHostLine + "Bad Field\r\n\r\n"), "preview\n");
  EXPECT_EQ(Handed(), std::vector<std::string>{"refused 400"});
}

TEST_F(HttpServerPreviewTest, AMalformedRequestLineBeforeAPreviewsHostIsThePreviewsToRefuse400) {
  Fd fd = Connect(server_->port());
  EXPECT_EQ(Exchange(fd, std::string("GET / HTTP/9\r\n") + kPreviewHostLine + "\r\n"), "preview\n");
  EXPECT_EQ(Handed(), std::vector<std::string>{"refused 400"});
}

TEST_F(HttpServerPreviewTest, AHeadTooLargeNamingAPreviewIsThePreviewsToRefuse431) {
  Fd fd = Connect(server_->port());
  EXPECT_EQ(Exchange(fd, std::string("GET / HTTP/1.1\r\n") + kPreviewHostLine + "X-Big: " + std::string(70000, 'a') +
                             "\r\n\r\n"),
            "preview\n");
  EXPECT_EQ(Handed(), std::vector<std::string>{"refused 431"});
}

TEST_F(HttpServerPreviewTest, AHeadWithABodyOverIsbsLimitNamingAPreviewGoesToThePreviewAsRead) {
  const std::string head =
      std::string("POST /upload HTTP/1.1\r\n") + kPreviewHostLine + "Content-Length: 9000000\r\n\r\n";
  Fd fd = Connect(server_->port());
  EXPECT_EQ(Exchange(fd, head), "preview\n");
  EXPECT_EQ(Handed(), std::vector<std::string>{"taken " + head});
  EXPECT_TRUE(Told().empty());
}

TEST_F(HttpServerPreviewTest, AHeadWithABodyOverIsbsLimitForIsbItselfIsStill413) {
  Fd fd = Connect(server_->port());
  const Reply r = ParseReply(Exchange(fd,
                                      "POST /api/v1/tools/sandbox_list HTTP/1.1\r\nHost: localhost\r\n"
                                      "Content-Length: 9000000\r\n\r\n"));
  EXPECT_EQ(r.status, 413) << r.raw;
  EXPECT_TRUE(Handed().empty());
  EXPECT_EQ(Told(), std::vector<std::string>{"http too_large request body is larger than 8388608 bytes"});
}

TEST_F(HttpServerPreviewTest, AMalformedHeadNamingAPreviewIsToldForTheAuditLogBeforeItIsHanded) {
  Fd fd = Connect(server_->port());
  EXPECT_EQ(Exchange(fd, std::string("GET / HTTP/1.1\r\n") + kPreviewHostLine + "Bad Field\r\n\r\n"), "preview\n");
  EXPECT_EQ(Handed(), std::vector<std::string>{"refused 400"});
  EXPECT_EQ(Told(), std::vector<std::string>{"http invalid_argument malformed HTTP request: bad field"});
}

TEST_F(HttpServerPreviewTest, ASecondHeadSmuggledAfterABadLineEndingIsIsbs400NotThePreviews) {
  Fd fd = Connect(server_->port());
  const Reply r = ParseReply(Exchange(fd,
                                      "GET / HTTP/1.1\r\nHost: localhost\r\n\rXGET / HTTP/1.1\r\n"
                                      "Host: 8080-sb-0123456789abcdef-acme.localhost\r\n\r\n"));
  EXPECT_EQ(r.status, 400) << r.raw;
  EXPECT_TRUE(Handed().empty());
}

TEST_F(HttpServerPreviewTest, ABadFieldLineWithAnAbsoluteUrlBeforeAPreviewsHostIsThePreviewsToRefuse400) {
  Fd fd = Connect(server_->port());
  EXPECT_EQ(Exchange(fd, std::string("GET / HTTP/1.1\r\nX http://isb.example/ y\r\n") + kPreviewHostLine + "\r\n"),
            "preview\n");
  EXPECT_EQ(Handed(), std::vector<std::string>{"refused 400"});
}

TEST_F(HttpServerPreviewTest, AMalformedHeadForIsbItselfIsStillIsbs400) {
  Fd fd = Connect(server_->port());
  EXPECT_EQ(ParseReply(Exchange(fd, "GET / HTTP/1.1\r\nHost: localhost\r\nBad Field\r\n\r\n")).status, 400);
  EXPECT_TRUE(Handed().empty());
}

// Requests turned away before any tool saw them are told for the audit log: one with no credential (no caller),
// one past the account's calls in flight (the caller), each with its surface; at most kRefusalRowsPerMinute a minute
// per address or account, the rest refused alike.
class HttpServerRefusalsTest : public HttpServerTest {
 protected:
  void Configure(HttpServerOptions& opts) override {
    opts.on_refused = [this](const Request& req, const Identity* who, std::string_view surface, const Error& error) {
      std::lock_guard lock(mu_);
      told_.push_back(std::string(req.Path()) + " " + (who ? who->Subject() : "-") + " " + std::string(surface) + " " +
                      std::string(CodeName(error.code)));
    };
  }
  std::vector<std::string> Told() {
    std::lock_guard lock(mu_);
    return told_;
  }
  std::mutex mu_;
  std::vector<std::string> told_;
};

TEST_F(HttpServerRefusalsTest, RequestsTurnedAwayBeforeAnyToolAreToldWithinABudget) {
  EXPECT_EQ(Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_list", "{}")).status, 401);
  EXPECT_EQ(Tcp(HttpRequest("POST", "/mcp", "{}")).status, 401);
  // Another app's cookie on this host is no credential either.
  EXPECT_EQ(Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_list", "{}", "Cookie: theme=dark\r\n")).status, 401);
  EXPECT_EQ(Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_list", "{}", kAuth)).status, 200);  // not told
  BlockExecs(2);
  ASSERT_TRUE(WaitForBlockedExecs(2));
  EXPECT_EQ(Tcp(HttpRequest("POST", "/api/v1/tools/sandbox_list", "{}", kAuth)).status, 429);
  EXPECT_EQ(JoinExecs(), (std::vector<int>{200, 200}));
  const std::string user = UserIn("test").Subject();
  EXPECT_EQ(Told(),
            (std::vector<std::string>{"/api/v1/tools/sandbox_list - rest unauthenticated", "/mcp - mcp unauthenticated",
                                      "/api/v1/tools/sandbox_list - rest unauthenticated",
                                      "/api/v1/tools/sandbox_list " + user + " rest rate_limited"}));
  // The address has 3 of its kRefusalRowsPerMinute spent: the rest of them are told, and no more.
  for (int i = 0; i < kRefusalRowsPerMinute; ++i) ASSERT_EQ(Tcp(HttpRequest("GET", "/api/v1/tools")).status, 401);
  EXPECT_EQ(Told().size(), 4u + kRefusalRowsPerMinute - 3);
}

class HttpServerWorkersTest : public HttpServerTest {
 protected:
  void Configure(HttpServerOptions& opts) override {
    opts.worker_threads = 2;
    opts.max_calls_per_account = 8;
  }
};

// TCP calls that hold every worker (two here, each blocked in an exec) leave the host's caller on the unix socket
// served: its calls have workers of their own.
TEST_F(HttpServerWorkersTest, TheHostsCallsHaveWorkersOfTheirOwn) {
  BlockExecs(2);
  ASSERT_TRUE(WaitForBlockedExecs(2));
  Fd host = ConnectUnix(socket_path_);
  Reply listed = ParseReply(Exchange(host, HttpRequest("POST", "/api/v1/tools/sandbox_list", "{}")));
  EXPECT_EQ(listed.status, 200) << listed.raw;
  EXPECT_EQ(JoinExecs(), (std::vector<int>{200, 200}));
}

TEST(HttpServerStartTest, RefusesPublicAddressesAndLiveSockets) {
  FakeSandboxes fake;
  Registry registry;
  RestApi rest(registry, "t");
  McpServer mcp(registry, McpOptions{});
  HttpServerOptions opts;
  opts.host = "0.0.0.0";
  opts.port = 0;
  HttpServer open(opts, rest, mcp, nullptr);
  Status s = open.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("reverse proxy"), std::string::npos);

  char tmpl[] = "/tmp/isb_api_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  HttpServerOptions u;
  u.listen_tcp = false;
  u.unix_socket_path = dir + "/isb.sock";
  {
    // A stale socket file (nobody listening) is replaced.
    Fd stale(socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, u.unix_socket_path.c_str(), u.unix_socket_path.size() + 1);
    ASSERT_EQ(bind(stale.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  }
  HttpServer first(u, rest, mcp, nullptr);
  Status started = first.Start();
  ASSERT_TRUE(started.ok()) << started.error().message;
  HttpServer second(u, rest, mcp, nullptr);
  Status clash = second.Start();
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().message.find("another server"), std::string::npos);
  first.Stop();
  EXPECT_FALSE(std::filesystem::exists(u.unix_socket_path));
  std::filesystem::remove_all(dir);
}

class HttpServerConnectionsTest : public HttpServerTest {
 protected:
  void Configure(HttpServerOptions& opts) override {
    opts.max_connections = 5;
    opts.max_connections_per_address = 3;
    opts.limit_loopback_peers = true;  // the test's peers are loopback addresses
  }
  // The status of /healthz from `source`, once it is not 503 (slots come back when the server sees a close), or
  // 503 after 10 s.
  int HealthFrom(const char* source) {
    int status = 0;
    for (int i = 0; i < 500; ++i) {
      status = ParseReply(Exchange(Connect(server_->port(), source), HttpRequest("GET", "/healthz"))).status;
      if (status != 503) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return status;
  }
};

TEST_F(HttpServerConnectionsTest, OneAddressCannotTakeEverySlotAndTheUnixSocketHasItsOwn) {
  // Connections that send nothing, as a slow client's: three from one address, two from another fill the server.
  std::vector<Fd> first, second;
  for (int i = 0; i < 3; ++i) first.push_back(Connect(server_->port(), "127.0.0.1"));
  for (int i = 0; i < 2; ++i) second.push_back(Connect(server_->port(), "127.0.0.2"));
  // The refusal reaches a client that has sent a large request already: the server reads what it sends.
  Reply full =
      ParseReply(Exchange(Connect(server_->port(), "127.0.0.3"),
                          HttpRequest("POST", "/api/v1/tools/sandbox_list", std::string(1 << 20, ' '), kAuth)));
  EXPECT_EQ(full.status, 503) << full.raw;
  EXPECT_NE(full.head.find("Retry-After: 1"), std::string::npos) << full.head;
  EXPECT_EQ(json::parse(full.body),
            json({{"error", "unavailable"},
                  {"message", "the server has 5 connections open; try again once one has closed"}}));
  // The host's caller is not locked out by TCP clients.
  Fd host = ConnectUnix(socket_path_);
  EXPECT_EQ(ParseReply(Exchange(host, HttpRequest("GET", "/healthz"))).status, 200);

  second.pop_back();
  EXPECT_EQ(HealthFrom("127.0.0.3"), 200);
  // Four open, one slot free (once the server has seen the last check's connection close), but not for the
  // address that holds three.
  Reply crowded;
  for (int i = 0; i < 500; ++i) {
    crowded = ParseReply(Exchange(Connect(server_->port(), "127.0.0.1"), HttpRequest("GET", "/healthz")));
    if (crowded.body.find("the server has 5 connections open") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(crowded.status, 503) << crowded.raw;
  EXPECT_EQ(json::parse(crowded.body)["message"], "this address has 3 connections open; close one first");

  first.clear();
  EXPECT_EQ(HealthFrom("127.0.0.1"), 200);
}

// Loopback peers are not held to the per-address limit by default: a tunnel or reverse proxy in front of isb brings
// every user from one.
class HttpServerLoopbackTest : public HttpServerTest {
 protected:
  void Configure(HttpServerOptions& opts) override {
    opts.max_connections = 5;
    opts.max_connections_per_address = 3;
  }
};

TEST_F(HttpServerLoopbackTest, LoopbackPeersShareOnlyTheServersLimit) {
  std::vector<Fd> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(Connect(server_->port()));
  ExpectHealthy();
}

}  // namespace
}  // namespace isb::api
