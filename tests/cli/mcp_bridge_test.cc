// isb mcp's bridge against a scripted daemon: what goes out on each POST, what comes back on stdout, line by line.
#include "cli/mcp_bridge.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <chrono>
#include <thread>

#include "base/fd.h"
#include "base/mutex.h"
#include "cli/run_isb.h"
#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {
namespace {

using testing::JsonAnswer;
using testing::PathOf;
using testing::SeenRequest;
using testing::SendAll;
using testing::TestServer;

struct BridgeRun {
  int exit_code = -1;
  std::string out;
};

// Feeds `input` to a bridge to `ep` on a pipe, closes it, and returns everything the bridge wrote.
BridgeRun RunBridge(const Endpoint& ep, const std::string& input, const std::string& token = "") {
  Pipe in = MakePipe().value();
  Pipe out = MakePipe().value();
  BridgeRun run;
  std::string collected;
  std::thread reader([&] {
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(out.read.get(), buf, sizeof buf);
      if (n <= 0) break;
      collected.append(buf, static_cast<size_t>(n));
    }
  });
  EXPECT_EQ(::write(in.write.get(), input.data(), input.size()), static_cast<ssize_t>(input.size()));
  in.write.Reset();
  McpBridge bridge{HttpClient(ep), token, ""};
  run.exit_code = bridge.Run(in.read.get(), out.write.get());
  out.write.Reset();
  reader.join();
  run.out = collected;
  return run;
}

Endpoint Unix(const std::string& path) {
  Endpoint ep;
  ep.unix_path = path;
  return ep;
}

bool HasHeader(const SeenRequest& r, const std::string& line) {
  return r.head.find("\r\n" + line + "\r\n") != std::string::npos;
}

TEST(McpBridgeTest, InitializeOpensTheSessionThatEveryLaterMessageCarriesAndAnswersComeBackALineEach) {
  TestServer server(
      [](int fd, const SeenRequest& req) {
        json m = json::parse(req.body, nullptr, false);
        if (req.head.starts_with("DELETE")) {
          SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        } else if (m.value("method", "") == "initialize") {
          std::string body = R"({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}})";
          SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body);
        } else if (m.value("method", "") == "tools/call") {
          SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
          SendAll(fd,
                  "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\n"
                  "data: \"params\":{\"progress\":1}}\n\n");
          SendAll(fd, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n");
        } else {
          SendAll(fd, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
        }
      },
      true, true);
  BridgeRun r = RunBridge(Unix(server.socket_path()),
                          R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})"
                          "\n"
                          R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
                          "\r\n"
                          "\n"
                          R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_list"}})");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, R"({"id":1,"jsonrpc":"2.0","result":{"protocolVersion":"2025-11-25"}})"
                   "\n"
                   R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}})"
                   "\n"
                   R"({"id":2,"jsonrpc":"2.0","result":{"content":[]}})"
                   "\n");
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_TRUE(seen[0].head.starts_with("POST /mcp HTTP/1.1\r\n")) << seen[0].head;
  EXPECT_FALSE(seen[0].head.find("Mcp-Session-Id") != std::string::npos) << seen[0].head;
  EXPECT_TRUE(HasHeader(seen[0], "Accept: application/json, text/event-stream")) << seen[0].head;
  EXPECT_TRUE(HasHeader(seen[0], "Mcp-Method: initialize")) << seen[0].head;
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_TRUE(HasHeader(seen[i], "Mcp-Session-Id: s1")) << seen[i].head;
    EXPECT_TRUE(HasHeader(seen[i], "MCP-Protocol-Version: 2025-11-25")) << seen[i].head;
  }
  // The two after initialize went concurrently; whichever came first, the call names its tool.
  const SeenRequest& call = seen[1].body.find("tools/call") != std::string::npos ? seen[1] : seen[2];
  EXPECT_TRUE(HasHeader(call, "Mcp-Name: sandbox_list")) << call.head;
  EXPECT_TRUE(seen[3].head.starts_with("DELETE /mcp HTTP/1.1\r\n")) << seen[3].head;
  EXPECT_TRUE(HasHeader(seen[3], "Mcp-Session-Id: s1")) << seen[3].head;
  // The unix socket needs no token.
  for (const SeenRequest& s : seen) EXPECT_EQ(s.head.find("Authorization"), std::string::npos) << s.head;
}

TEST(McpBridgeTest, ARequestThatCannotBeDeliveredIsAnsweredWithAnErrorANotificationIsNot) {
  BridgeRun r = RunBridge(Unix("/nonexistent/isb.sock"), R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
                                                         "\n"
                                                         R"({"jsonrpc":"2.0","id":"a","method":"tools/list"})"
                                                         "\n");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, R"x({"error":{"code":-32603,"message":"isb mcp: cannot reach the isb daemon at )x"
                   R"x(unix:/nonexistent/isb.sock: No such file or directory; is `isb serve` running? (or set )x"
                   R"x(ISB_URL/--url)"},"id":"a","jsonrpc":"2.0"})x"
                   "\n");
}

TEST(McpBridgeTest, AnAnswerThatIsNotJsonRpcIsTheRequestsErrorInJsonRpcTerms) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, JsonAnswer(401, R"({"error":"unauthenticated","message":"missing bearer token"})"));
  });
  BridgeRun r = RunBridge(Unix(server.socket_path()), R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})"
                                                      "\n");
  EXPECT_EQ(r.out, R"({"error":{"code":-32603,"message":"isb mcp: the daemon answered HTTP 401: missing bearer )"
                   R"(token; set ISB_TOKEN to a bearer token, or use the unix socket (--socket) as the daemon's )"
                   R"(user"},"id":7,"jsonrpc":"2.0"})"
                   "\n");
}

TEST(McpBridgeTest, ALineThatIsNotJsonIsAParseError) {
  BridgeRun r = RunBridge(Unix("/nonexistent/isb.sock"), "{not json\n");
  EXPECT_EQ(r.out, R"({"error":{"code":-32700,"message":"isb mcp: a line on stdin that is not JSON"},"id":null,)"
                   R"("jsonrpc":"2.0"})"
                   "\n");
}

// A client that sends many requests at once gets kMaxMcpInflight of them sent to the daemon together, the rest as
// those are answered, and every one answered in the end; a notification passes the waiting requests, and a
// cancellation takes its request out of the line (it is never sent, nor answered).
TEST(McpBridgeTest, AtMostSixteenRequestsAreInFlightAndTheRestWaitTheirTurn) {
  Mutex mu;
  CondVar changed;
  int inflight = 0, peak = 0, notifications = 0;
  bool released = false;
  TestServer server(
      [&](int fd, const SeenRequest& req) {
        json m = json::parse(req.body, nullptr, false);
        if (!m.contains("id")) {
          MutexLock lock(mu);
          ++notifications;
          changed.NotifyAll();
          SendAll(fd, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
          return;
        }
        {
          MutexLock lock(mu);
          peak = std::max(peak, ++inflight);
          changed.NotifyAll();
          while (!released) changed.Wait(mu);
          --inflight;
        }
        SendAll(fd, JsonAnswer(200, json{{"jsonrpc", "2.0"}, {"id", m["id"]}, {"result", json::object()}}.dump()));
      },
      true, true);
  std::string input;
  for (int i = 0; i < 40; ++i) input += json{{"jsonrpc", "2.0"}, {"id", i}, {"method", "ping"}}.dump() + "\n";
  input += R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":39}})"
           "\n";
  int peak_before_release = -1, notifications_before_release = -1;
  std::thread releaser([&] {
    MutexLock lock(mu);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((inflight < kMaxMcpInflight || notifications == 0) && changed.WaitUntil(mu, deadline)) {
    }
    // Time for a seventeenth to arrive if the cap let it through.
    changed.WaitUntil(mu, std::chrono::steady_clock::now() + std::chrono::milliseconds(300));
    peak_before_release = peak;
    notifications_before_release = notifications;
    released = true;
    changed.NotifyAll();
  });
  BridgeRun r = RunBridge(Unix(server.socket_path()), input);
  releaser.join();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(kMaxMcpInflight, 16);
  EXPECT_EQ(peak_before_release, kMaxMcpInflight);
  EXPECT_EQ(notifications_before_release, 1) << "the notification went while requests waited";
  EXPECT_EQ(peak, kMaxMcpInflight);
  size_t lines = 0;
  for (size_t at = 0; (at = r.out.find('\n', at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 39u) << r.out;
  EXPECT_EQ(r.out.find(R"("id":39)"), std::string::npos) << r.out;
  EXPECT_EQ(server.requests().size(), 40u);
  for (const SeenRequest& seen : server.requests())
    EXPECT_EQ(seen.body.find(R"("id":39)"), std::string::npos) << seen.body;
}

TEST(McpBridgeTest, UndeliverableAnswersRequestsOnly) {
  EXPECT_EQ(McpBridge::Undeliverable(json{{"jsonrpc", "2.0"}, {"method", "notifications/x"}}, "why"), json());
  EXPECT_EQ(McpBridge::Undeliverable(json{{"jsonrpc", "2.0"}, {"id", 3}, {"result", json::object()}}, "why"), json());
  EXPECT_EQ(McpBridge::Undeliverable(json{{"jsonrpc", "2.0"}, {"id", 3}, {"method", "ping"}}, "why"),
            (json{{"jsonrpc", "2.0"}, {"id", 3}, {"error", {{"code", -32603}, {"message", "why"}}}}));
}

}  // namespace
}  // namespace isb::cli
