// Malformed input on every surface gets the exact 4xx and error code, and the daemon keeps serving.
#include <thread>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

class MalformedTest : public E2eTest {
 protected:
  // The daemon still answers, on both listeners, and still runs tools.
  void StillServing() {
    EXPECT_EQ(Http(tcp_endpoint(), "GET", "/healthz").status, 200);
    EXPECT_EQ(Http(unix_endpoint(), "GET", "/healthz").status, 200);
    EXPECT_EQ(Tool("sandbox_list", json::object()).status, 200);
  }

  // Sends `raw` as is, then ends the write side; the whole response comes back.
  HttpResponse Raw(const Endpoint& ep, const std::string& raw) {
    RawConnection c(ep);
    EXPECT_TRUE(c.ok()) << c.error();
    c.Send(raw);
    c.ShutdownWrite();
    HttpResponse r = ParseHttpResponse(c.ReadAll(15s));
    return r;
  }

  void ExpectError(const HttpResponse& r, int status, const std::string& code, const std::string& in_message = "") {
    EXPECT_EQ(r.status, status) << r.Describe();
    EXPECT_EQ(r.j.value("error", ""), code) << r.Describe();
    EXPECT_NE(r.j.value("message", "").find(in_message), std::string::npos)
        << "the message should mention '" << in_message << "': " << r.Describe();
  }
};

TEST_F(MalformedTest, RestAnswersEachBadRequestWithItsExactError) {
  std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  for (const Endpoint& ep : {unix_endpoint(), tcp_endpoint()}) {
    SCOPED_TRACE(ep.Describe());
    std::vector<std::string> auth;
    if (ep.unix_path.empty()) auth.push_back("Authorization: Bearer " + token());
    auto post = [&](const std::string& tool, const std::string& body) {
      return Request(ep, "POST", "/api/v1/tools/" + tool, body, auth);
    };
    ExpectError(post("sandbox_exec", R"({"sandbox": ")" + id + R"(", "argv": ["true"])"), 400, "invalid_argument",
                "not valid JSON");
    ExpectError(post("sandbox_exec", "not json at all"), 400, "invalid_argument", "not valid JSON");
    ExpectError(post("sandbox_exec", json({{"sandbox", id}, {"argv", "ls -l"}}).dump()), 400, "invalid_argument",
                "argv");
    ExpectError(post("sandbox_exec", json({{"sandbox", id}, {"argv", {"ls", 7}}}).dump()), 400, "invalid_argument",
                "argv");
    ExpectError(post("sandbox_exec", json({{"sandbox", id}, {"argv", json::array()}}).dump()), 400, "invalid_argument",
                "argv");
    ExpectError(post("sandbox_exec", json({{"sandbox", id}, {"argv", {"true"}}, {"timeout", "10s"}}).dump()), 400,
                "invalid_argument", "timeout");
    ExpectError(post("sandbox_exec", json({{"sandbox", id}, {"argv", {"true"}}, {"bogus", 1}}).dump()), 400,
                "invalid_argument", "bogus");
    ExpectError(post("sandbox_exec", json({{"argv", {"true"}}}).dump()), 400, "invalid_argument", "sandbox");
    ExpectError(post("sandbox_exec", "[1,2]"), 400, "invalid_argument", "expected object");
    ExpectError(post("sandbox_create", json({{"mem_limit", true}}).dump()), 400, "invalid_argument", "mem_limit");
    ExpectError(post("sandbox_create", json({{"cpus", "lots"}}).dump()), 400, "invalid_argument", "cpus");
    ExpectError(post("sandbox_file_read", json({{"sandbox", id}, {"path", "/proc/self/environ"}}).dump()), 400,
                "invalid_argument", "/proc");
    ExpectError(post("sandbox_no_such_tool", "{}"), 404, "not_found", "sandbox_no_such_tool");
    ExpectError(post("sandbox_get", json({{"sandbox", "sb-0123456789abcdef"}}).dump()), 404, "not_found");
    ExpectError(Http(ep, "GET", "/api/v1/tools/sandbox_list", "", auth), 405, "method_not_allowed");
    ExpectError(Http(ep, "GET", "/api/v2/nothing", "", auth), 404, "not_found");
    // Deeply nested JSON is refused, not recursed into.
    ExpectError(post("sandbox_list", std::string(10000, '[') + std::string(10000, ']')), 400, "invalid_argument");

    // 9 MiB: over the 8 MiB body limit.
    std::string big = R"({"sandbox":")" + id + R"(","argv":["true"],"stdin":")" + std::string(9 << 20, 'x') + "\"}";
    HttpResponse too_big = Raw(ep, BuildRequest("POST", "/api/v1/tools/sandbox_exec", big, auth));
    ExpectError(too_big, 413, "too_large");

    // Headers promise 100 bytes; 10 come, then the client hangs up its side.
    std::string head = "POST /api/v1/tools/sandbox_list HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
    for (const auto& h : auth) head += h + "\r\n";
    HttpResponse truncated = Raw(ep, head + "Content-Length: 100\r\n\r\n{\"labels\":");
    ExpectError(truncated, 400, "invalid_argument", "truncated");
    // Not HTTP at all.
    HttpResponse garbage = Raw(ep, "HELLO THERE\r\n\r\n");
    EXPECT_EQ(garbage.status, 400) << garbage.Describe();
    // Headers that never end, then close: no answer is owed, but the daemon must not mind.
    {
      RawConnection c(ep);
      c.Send("POST /api/v1/tools/sandbox_list HTTP/1.1\r\nHost: x\r\nContent-Le");
      c.Close();
    }
    StillServing();
  }
  // Without the token, even a malformed body gets 401 first: nothing is parsed for strangers.
  ExpectError(Request(tcp_endpoint(), "POST", "/api/v1/tools/sandbox_exec", "{bad"), 401, "unauthenticated");
  // The sandbox was never disturbed.
  json ok = Exec(id, {"echo", "fine"});
  EXPECT_EQ(ok["stdout"], "fine\n") << ok.dump();
  StillServing();
}

// Requests refused before they could be read (no caller is known) leave rows, so that a flood of them is visible:
// one each, anonymous, with the address, up to the budget of rows one address (loopback counting as one) has a
// minute.
TEST_F(MalformedTest, EachMalformedRequestIsRecordedWithinItsAddresssBudget) {
  const Endpoint ep = tcp_endpoint();
  auto rows = [&] {
    std::string error;
    std::vector<AuditRow> out;
    for (const AuditRow& r : ReadAuditRows(state_dir() + "/isb.db", &error))
      if (r.action == "http_request") out.push_back(r);
    EXPECT_EQ(error, "");
    return out;
  };
  ASSERT_EQ(rows().size(), 0u);
  EXPECT_EQ(Raw(ep, "HELLO THERE\r\n\r\n").status, 400);
  EXPECT_EQ(Raw(ep, "POST /api/v1/tools/sandbox_list HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{").status, 400);
  EXPECT_EQ(Raw(ep, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(70 << 10, 'a') + "\r\n\r\n").status,
            431);
  std::vector<AuditRow> got = rows();
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].surface, "http");
    EXPECT_EQ(got[i].actor_kind, "anonymous");
    EXPECT_EQ(got[i].outcome, i < 2 ? "invalid_argument" : "too_large") << got[i].Describe();
  }
  // Past the address's budget (60 a minute), refused alike but unrecorded.
  for (int i = 0; i < 70; ++i) Raw(ep, "HELLO THERE\r\n\r\n");
  EXPECT_EQ(rows().size(), 60u);
  StillServing();
}

TEST_F(MalformedTest, McpAnswersBadMessagesWithJsonRpcErrors) {
  // A session to send in.
  std::vector<std::string> h = {"Authorization: Bearer " + token(), "Accept: application/json, text/event-stream"};
  HttpResponse init = Request(tcp_endpoint(), "POST", "/mcp",
                              json({{"jsonrpc", "2.0"},
                                    {"id", 1},
                                    {"method", "initialize"},
                                    {"params",
                                     {{"protocolVersion", "2025-11-25"},
                                      {"capabilities", json::object()},
                                      {"clientInfo", {{"name", "raw"}, {"version", "1"}}}}}})
                                  .dump(),
                              h);
  ASSERT_EQ(init.status, 200) << init.Describe();
  h.push_back("Mcp-Session-Id: " + init.Header("mcp-session-id"));
  h.push_back("MCP-Protocol-Version: 2025-11-25");
  auto rpc = [&](const std::string& body) { return Request(tcp_endpoint(), "POST", "/mcp", body, h); };
  auto expect_rpc_error = [](const HttpResponse& r, int status, int code, const json& id) {
    EXPECT_EQ(r.status, status) << r.Describe();
    EXPECT_EQ(r.j.value("jsonrpc", ""), "2.0") << r.Describe();
    EXPECT_EQ(r.j["error"]["code"], code) << r.Describe();
    EXPECT_EQ(r.j["id"], id) << r.Describe();
  };

  expect_rpc_error(rpc(R"({"jsonrpc":"2.0","id":2,"method":"tools/list")"), 400, -32700, nullptr);
  expect_rpc_error(rpc("\xff\xfe garbage"), 400, -32700, nullptr);
  expect_rpc_error(rpc(R"([{"jsonrpc":"2.0","id":3,"method":"tools/list"}])"), 400, -32600, nullptr);
  expect_rpc_error(rpc(R"({"jsonrpc":"1.0","id":4,"method":"tools/list"})"), 400, -32600, nullptr);
  expect_rpc_error(rpc(R"({"jsonrpc":"2.0","id":5,"method":42})"), 400, -32600, 5);
  expect_rpc_error(rpc(R"({"jsonrpc":"2.0","id":6,"method":"tools/list","params":[1]})"), 400, -32602, 6);
  expect_rpc_error(rpc(R"({"jsonrpc":"2.0","id":7,"method":"no/such/method"})"), 200, -32601, 7);
  HttpResponse unknown_tool =
      rpc(R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"sandbox_nope","arguments":{}}})");
  expect_rpc_error(unknown_tool, 200, -32602, 8);
  EXPECT_NE(unknown_tool.j["error"].value("message", "").find("sandbox_nope"), std::string::npos)
      << unknown_tool.Describe();
  expect_rpc_error(
      rpc(R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"sandbox_list","arguments":"x"}})"), 200,
      -32602, 9);

  // Wrong types in a tool's arguments: a tool error (isError) naming the field, so a model can correct itself.
  HttpResponse wrong = rpc(
      R"({"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"sandbox_exec","arguments":{"sandbox":"x","argv":"ls"}}})");
  EXPECT_EQ(wrong.status, 200) << wrong.Describe();
  EXPECT_EQ(wrong.j["result"]["isError"], true) << wrong.Describe();
  EXPECT_NE(wrong.j["result"]["content"][0].value("text", "").find("argv"), std::string::npos) << wrong.Describe();
  HttpResponse extra = rpc(
      R"({"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"sandbox_list","arguments":{"bogus":true}}})");
  EXPECT_EQ(extra.j["result"]["isError"], true) << extra.Describe();
  EXPECT_NE(extra.j["result"]["content"][0].value("text", "").find("bogus"), std::string::npos) << extra.Describe();

  // Too big for MCP too.
  RawConnection c(tcp_endpoint());
  std::string big =
      R"({"jsonrpc":"2.0","id":12,"method":"ping","params":{"pad":")" + std::string(9 << 20, 'y') + "\"}}";
  c.Send(BuildRequest("POST", "/mcp", big, h));
  c.ShutdownWrite();
  HttpResponse too_big = ParseHttpResponse(c.ReadAll(15s));
  EXPECT_EQ(too_big.status, 413) << too_big.Describe();

  // The session still works, and so does the daemon.
  HttpResponse ping = rpc(R"({"jsonrpc":"2.0","id":13,"method":"ping"})");
  EXPECT_EQ(ping.status, 200) << ping.Describe();
  EXPECT_EQ(ping.j["result"], json::object()) << ping.Describe();
  StillServing();
}

}  // namespace
}  // namespace isb::e2e
