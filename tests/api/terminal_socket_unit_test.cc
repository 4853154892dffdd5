// TerminalSocket driven over a socketpair, and behind a real HTTP server, with a registry of its own: a shell whose
// connection ends is let go by its session whatever message ended the connection, and one caller's shells left
// waiting for a reattach are bounded.
#include "api/terminal_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "api/http_server.h"
#include "api/mcp.h"
#include "api/principals.h"
#include "api/rest.h"
#include "net/websocket_frame.h"

namespace isb::api {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

struct Shell {
  std::atomic<bool> cancelled{false};
};

// A terminal socket over a sandbox_exec that announces a session and runs until it is cancelled.
struct Terminals {
  Registry registry;
  std::unique_ptr<TerminalSocket> socket;  // before the registry goes: its sessions' threads call it
  ~Terminals() { socket.reset(); }
};

std::unique_ptr<Terminals> NewSocket(Shell* shell) {
  auto t = std::make_unique<Terminals>();
  Registry* registry = &t->registry;
  Tool exec;
  exec.name = "sandbox_exec";
  exec.input_schema = {{"type", "object"}};
  exec.output_schema = {{"type", "object"}};
  exec.streams = true;
  exec.handler = [shell](const json&, const CallContext& ctx) -> Result<json> {
    ctx.progress("session", "ts-0123");
    while (!ctx.cancelled()) std::this_thread::sleep_for(10ms);
    shell->cancelled = true;
    return json{{"exit_code", 0}};
  };
  EXPECT_TRUE(registry->Add(std::move(exec)).ok());
  TerminalOptions options;
  options.reattach_grace = 0s;  // the shell ends with its connection
  t->socket = std::make_unique<TerminalSocket>(*registry, options);
  return t;
}

Request Upgrade() {
  Request req;
  req.method = "GET";
  req.target = "/api/v1/sandboxes/box/terminal";
  req.headers.Add("Host", "localhost");
  req.headers.Add("Upgrade", "websocket");
  req.headers.Add("Connection", "Upgrade");
  req.headers.Add("Sec-WebSocket-Version", "13");
  req.headers.Add("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==");
  return req;
}

// Runs the upgraded connection on a thread; the test's end of the socketpair reads until the session message, then
// sends `frame` and closes. Returns what the connection's thread threw ("" when nothing).
std::string Connect(TerminalSocket& socket, const std::string& frame) {
  Response r = socket.Handle(Upgrade(), Identity::Host());
  EXPECT_EQ(r.status, 101);
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  ::fcntl(sv[0], F_SETFL, O_NONBLOCK);
  std::string thrown;
  std::thread server([&] {
    try {
      r.upgraded(sv[0], "", [] { return false; });
    } catch (const std::exception& e) {
      thrown = e.what();
    }
  });
  std::string got;
  char buf[4096];
  while (got.find("ts-0123") == std::string::npos) {
    ssize_t n = ::read(sv[1], buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_NE(got.find("\"session\":\"ts-0123\""), std::string::npos);
  if (!frame.empty()) {
    EXPECT_EQ(::write(sv[1], frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
  }
  ::shutdown(sv[1], SHUT_RDWR);
  server.join();
  ::close(sv[0]);
  ::close(sv[1]);
  return thrown;
}

bool CancelledWithin(const Shell& shell, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!shell.cancelled && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(20ms);
  return shell.cancelled;
}

TEST(TerminalSocketUnitTest, AConnectionThatGoesAwayEndsAShellWithNoGrace) {
  Shell shell;
  std::unique_ptr<Terminals> t = NewSocket(&shell);
  EXPECT_EQ(Connect(*t->socket, ""), "");
  EXPECT_TRUE(CancelledWithin(shell, 3000ms));
}

// {"type":1} once threw out of the connection's loop before the session let its screen go: the shell stayed
// attached to a screen that no longer existed. It is refused as any message not understood, and the shell goes.
TEST(TerminalSocketUnitTest, AControlMessageWithANumericTypeStillLetsTheShellGo) {
  Shell shell;
  std::unique_ptr<Terminals> t = NewSocket(&shell);
  std::string frame = net::EncodeFrame(
      net::WsFrameHeader{.fin = true, .opcode = net::ws_opcode::kText, .masked = true, .mask = {1, 2, 3, 4}},
      R"({"type":1})");
  EXPECT_EQ(Connect(*t->socket, frame), "");
  EXPECT_TRUE(CancelledWithin(shell, 3000ms));
}

// A shell left detached by a dropped connection holds no connection, so the account's stream limit does not count it:
// one caller keeps at most kMaxDetachedTerminals of them waiting, and the longest-waiting go first, or one account
// would hold shells (a daemon thread, a pty and a shell each) past every limit but the sandboxes' 8 each.
TEST(TerminalSocketUnitTest, OneCallerKeepsAtMostFourShellsWaitingForAReattach) {
  std::atomic<int> live{0};
  Registry registry;
  Tool exec;
  exec.name = "sandbox_exec";
  exec.input_schema = {{"type", "object"}};
  exec.output_schema = {{"type", "object"}};
  exec.streams = true;
  exec.handler = [&live](const json&, const CallContext& ctx) -> Result<json> {
    ++live;
    ctx.progress("session", "ts-" + std::to_string(live.load()));
    while (!ctx.cancelled()) std::this_thread::sleep_for(10ms);
    --live;
    return json{{"exit_code", 0}};
  };
  ASSERT_TRUE(registry.Add(std::move(exec)).ok());
  TerminalSocket terminals(registry);  // reattach_grace 60 s
  RestApi rest{registry, "test"};
  McpServer mcp{registry, McpOptions{}};
  HttpServerOptions opts;
  opts.port = 0;
  opts.io_threads = 2;
  opts.worker_threads = 8;
  opts.max_streams_per_account = 1;
  opts.terminal = [&terminals](const Request& req, const Identity& who) { return terminals.Handle(req, who); };
  auto server = std::make_unique<HttpServer>(opts, rest, mcp,
                                             [](const Request&, bool) -> Result<Identity> { return UserIn("test"); });
  ASSERT_TRUE(server->Start().ok());
  const std::string upgrade =
      "GET /api/v1/sandboxes/box/terminal HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer s3cret\r\n"
      "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
  int upgraded = 0;
  constexpr int kDrops = static_cast<int>(kMaxDetachedTerminals) + 2;
  for (int i = 0; i < kDrops; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server->port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::write(fd, upgrade.data(), upgrade.size()), static_cast<ssize_t>(upgrade.size()));
    std::string got;
    char buf[4096];
    while (got.find("\"type\":\"session\"") == std::string::npos && got.find("\r\n\r\n{") == std::string::npos) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    if (got.rfind("HTTP/1.1 101", 0) == 0) ++upgraded;
    ::close(fd);                         // dropped: no close frame
    std::this_thread::sleep_for(300ms);  // the server notices, and gives the stream back
  }
  // Each connection had the account's one stream while it lasted; of the shells they left, the newest four wait.
  EXPECT_EQ(upgraded, kDrops);
  for (int i = 0; i < 200 && live.load() > static_cast<int>(kMaxDetachedTerminals); ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(live.load(), static_cast<int>(kMaxDetachedTerminals));
  server.reset();
  terminals.Stop();
  EXPECT_EQ(live.load(), 0);
}

}  // namespace
}  // namespace isb::api
