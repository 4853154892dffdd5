// MCP flows for both protocol revisions, headers, origins, errors and progress streaming, without a socket.
#include "api/mcp.h"
#include "api/principals.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <thread>
#include <atomic>

#include "api/fake_sandboxes.h"
#include "api/json_util.h"
#include "api/sandbox_tools.h"
#include "base/base64.h"

namespace isb::api {
namespace {

using Hdrs = std::vector<std::pair<std::string, std::string>>;

class McpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(AddSandboxTools(registry, fake).ok());
    registry.SetOrgCheck([](std::string_view org) { return org == "default"; });
  }

  Response Send(const std::string& method, const std::string& body, const Hdrs& headers = {},
                const std::string& path = "/mcp", const Identity& who = Identity::Host()) {
    Request req;
    req.method = method;
    req.target = path;
    req.body = body;
    for (auto& [n, v] : headers) req.headers.Add(n, v);
    return mcp.Handle(req, who);
  }
  Response Post(const json& msg, const Hdrs& headers = {}, const std::string& path = "/mcp") {
    return Send("POST", Dump(msg), headers, path);
  }
  std::string Initialize(const std::string& path = "/mcp") {
    Response r = Post({{"jsonrpc", "2.0"},
                       {"id", 1},
                       {"method", "initialize"},
                       {"params",
                        {{"protocolVersion", "2025-11-25"},
                         {"capabilities", json::object()},
                         {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}},
                      {}, path);
    EXPECT_EQ(r.status, 200);
    return r.headers.Get("Mcp-Session-Id");
  }
  Hdrs Session(const std::string& sid) { return {{"Mcp-Session-Id", sid}, {"MCP-Protocol-Version", "2025-11-25"}}; }
  static json Rpc(int id, const std::string& method, json params = json::object()) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
  }
  static json Meta() {
    return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities", json::object()},
            {"io.modelcontextprotocol/clientInfo", {{"name", "t"}, {"version", "1"}}}};
  }
  static Hdrs Stateless(const std::string& method) {
    return {{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", method}};
  }
  static json Body(const Response& r) { return json::parse(r.body); }

  FakeSandboxes fake;
  Registry registry;
  McpServer mcp{registry, McpOptions{.server_version = "9.9"}};
};

TEST_F(McpTest, SessionFlow) {
  Response init = Post(Rpc(1, "initialize",
                           {{"protocolVersion", "2025-11-25"},
                            {"capabilities", json::object()},
                            {"clientInfo", {{"name", "t"}, {"version", "1"}}}}));
  ASSERT_EQ(init.status, 200);
  json result = Body(init)["result"];
  EXPECT_EQ(result["protocolVersion"], "2025-11-25");
  EXPECT_EQ(result["capabilities"]["tools"]["listChanged"], false);
  EXPECT_EQ(result["serverInfo"]["name"], "isb");
  EXPECT_EQ(result["serverInfo"]["version"], "9.9");
  std::string sid = init.headers.Get("Mcp-Session-Id");
  ASSERT_EQ(sid.size(), 32u);

  Response note = Post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, Session(sid));
  EXPECT_EQ(note.status, 202);
  EXPECT_TRUE(note.body.empty());

  json tools = Body(Post(Rpc(2, "tools/list"), Session(sid)))["result"]["tools"];
  ASSERT_EQ(tools.size(), 15u);
  for (const json& t : tools) {
    for (const char* key : {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}) {
      EXPECT_TRUE(t.contains(key)) << t["name"] << " lacks " << key;
    }
  }

  json created =
      Body(Post(Rpc(3, "tools/call", {{"name", "sandbox_create"}, {"arguments", {{"name", "m"}}}}), Session(sid)));
  EXPECT_EQ(created["id"], 3);
  EXPECT_EQ(created["result"]["isError"], false);
  EXPECT_EQ(created["result"]["structuredContent"]["name"], "m");
  EXPECT_EQ(json::parse(created["result"]["content"][0]["text"].get<std::string>())["name"], "m");
  EXPECT_EQ(created["result"]["content"][0]["type"], "text");

  json exec =
      Body(Post(Rpc(4, "tools/call", {{"name", "sandbox_exec"}, {"arguments", {{"sandbox", "m"}, {"argv", {"id"}}}}}),
                Session(sid)));
  EXPECT_EQ(exec["result"]["structuredContent"]["stdout"], "out: id");

  EXPECT_EQ(Body(Post(Rpc(5, "ping"), Session(sid)))["result"], json::object());
  EXPECT_EQ(mcp.session_count(), 1u);
  EXPECT_EQ(Send("DELETE", "", Session(sid)).status, 204);
  EXPECT_EQ(Post(Rpc(6, "tools/list"), Session(sid)).status, 404);
  EXPECT_EQ(Send("DELETE", "", Session(sid)).status, 404);
  EXPECT_EQ(mcp.session_count(), 0u);
}

// One caller opening sessions without end loses its own oldest, never another caller's; a full table is made room
// in by whoever holds the most.
TEST_F(McpTest, OneCallersSessionsNeverEndAnothers) {
  McpServer small{registry, McpOptions{.max_sessions = 8, .max_sessions_per_account = 3}};
  auto init = [&](const Identity& who) {
    Request req;
    req.method = "POST";
    req.target = "/mcp";
    req.body = Dump({{"jsonrpc", "2.0"},
                     {"id", 1},
                     {"method", "initialize"},
                     {"params",
                      {{"protocolVersion", "2025-11-25"},
                       {"capabilities", json::object()},
                       {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}});
    Response r = small.Handle(req, who);
    EXPECT_EQ(r.status, 200);
    return r.headers.Get("Mcp-Session-Id");
  };
  auto alive = [&](const std::string& sid, const Identity& who) {
    Request req;
    req.method = "POST";
    req.target = "/mcp";
    req.body = Dump(Rpc(2, "tools/list"));
    req.headers.Add("Mcp-Session-Id", sid);
    req.headers.Add("MCP-Protocol-Version", "2025-11-25");
    return small.Handle(req, who).status == 200;
  };
  Identity bob = UserIn("bob", "default", identity::Role::kOwner, 2);
  Identity carol = UserIn("carol", "default", identity::Role::kViewer, 3);
  std::string bobs = init(bob);
  for (int i = 0; i < 20; ++i) init(carol);
  EXPECT_TRUE(alive(bobs, bob));
  EXPECT_EQ(small.session_count(), 4u);  // bob's one and carol's last three
  // Every credential of one user counts as that user: carol's tokens share her three.
  Identity carol_token = carol;
  carol_token.kind = identity::PrincipalKind::kToken;
  carol_token.credential_id = 40;
  for (int i = 0; i < 5; ++i) init(carol_token);
  EXPECT_EQ(small.session_count(), 4u);
  // Four more users with one each fill the table (8); for one more, carol, holding the most, gives one up.
  for (int u = 10; u < 14; ++u) init(UserIn("u" + std::to_string(u), "default", identity::Role::kViewer, u));
  EXPECT_EQ(small.session_count(), 8u);
  std::string late = init(UserIn("late", "default", identity::Role::kViewer, 20));
  EXPECT_EQ(small.session_count(), 8u);
  EXPECT_TRUE(alive(bobs, bob));
  EXPECT_TRUE(alive(late, UserIn("late", "default", identity::Role::kViewer, 20)));
}

// notifications/cancelled stops the call it names, in its own session only: the exec sees its cancel and returns.
TEST_F(McpTest, ACancelledCallStopsItsCommand) {
  const std::string sid = Initialize(), other = Initialize();
  const std::string box = fake.Create({})->id;
  std::atomic<bool> entered{false}, cancelled{false};
  fake.exec_fn = [&](const ExecRequest& req, const OutputSink&) -> Result<ExecResult> {
    entered = true;
    for (int i = 0; i < 1000 && !(req.cancelled && req.cancelled()); ++i) ::usleep(10000);
    cancelled = req.cancelled && req.cancelled();
    return ExecResult{};
  };
  std::atomic<bool> done{false};
  Response answer;
  std::thread call([&] {
    const json args = {{"sandbox", box}, {"argv", {"sleep", "600"}}};
    answer = Post(Rpc(7, "tools/call", {{"name", "sandbox_exec"}, {"arguments", args}}), Session(sid));
    done = true;
  });
  for (int i = 0; i < 500 && !entered; ++i) ::usleep(10000);
  EXPECT_TRUE(entered);  // (no ASSERT: the call's thread is joined below either way)
  const json cancel = {{"jsonrpc", "2.0"},
                       {"method", "notifications/cancelled"},
                       {"params", {{"requestId", 7}, {"reason", "the user stopped it"}}}};
  EXPECT_EQ(Post(cancel, Session(other)).status, 202);  // another session's call 7: none
  ::usleep(200000);
  EXPECT_FALSE(done.load());
  EXPECT_EQ(Post(cancel, Session(sid)).status, 202);
  for (int i = 0; i < 300 && !done; ++i) ::usleep(10000);
  EXPECT_TRUE(done.load()) << "the cancelled call went on";
  call.join();
  EXPECT_TRUE(cancelled.load());
  EXPECT_EQ(answer.status, 200);
}

TEST_F(McpTest, SessionAndVersionHeaders) {
  EXPECT_EQ(Post(Rpc(1, "tools/list")).status, 400);  // no session
  EXPECT_EQ(Post(Rpc(1, "tools/list"), Session("deadbeef")).status, 404);
  std::string sid = Initialize();
  EXPECT_EQ(Post(Rpc(1, "tools/list"), {{"Mcp-Session-Id", sid}, {"MCP-Protocol-Version", "1999-01-01"}}).status, 400);
  EXPECT_EQ(Post(Rpc(1, "tools/list"), {{"Mcp-Session-Id", sid}}).status, 200);  // absent: 2025-03-26 assumed
  // A version this server speaks, but not the one this session negotiated (2025-11-25).
  Response other_version =
      Post(Rpc(1, "tools/list"), {{"Mcp-Session-Id", sid}, {"MCP-Protocol-Version", "2025-06-18"}});
  EXPECT_EQ(other_version.status, 400);
  EXPECT_EQ(json::parse(other_version.body)["error"]["message"],
            "MCP-Protocol-Version '2025-06-18' is not this session's, which negotiated 2025-11-25");
  // A session is bound to who opened it and where.
  Request other;
  other.method = "POST";
  other.target = "/mcp";
  other.body = Dump(Rpc(1, "tools/list"));
  other.headers.Add("Mcp-Session-Id", sid);
  EXPECT_EQ(mcp.Handle(other, UserIn("mallory", "default", identity::Role::kMember, 2)).status, 404);
  // An unknown requested version is answered with ours.
  Response init = Post(Rpc(1, "initialize", {{"protocolVersion", "2099-01-01"}}));
  EXPECT_EQ(Body(init)["result"]["protocolVersion"], "2025-11-25");
  Response older = Post(Rpc(1, "initialize", {{"protocolVersion", "2025-06-18"}}));
  EXPECT_EQ(Body(older)["result"]["protocolVersion"], "2025-06-18");
}

// 2025-03-26 batches: each message is served in order, requests are answered in one array, and a batch of nothing
// but notifications gets 202. Outside a session of that revision a batch is refused.
TEST_F(McpTest, ABatchIsServedInASessionOf20250326Only) {
  Response init = Post(Rpc(1, "initialize",
                           {{"protocolVersion", "2025-03-26"},
                            {"capabilities", json::object()},
                            {"clientInfo", {{"name", "t"}, {"version", "1"}}}}));
  ASSERT_EQ(Body(init)["result"]["protocolVersion"], "2025-03-26");
  std::string sid = init.headers.Get("Mcp-Session-Id");
  Hdrs session = {{"Mcp-Session-Id", sid}, {"MCP-Protocol-Version", "2025-03-26"}};

  json notification = {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}};
  Response batch =
      Post(json::array({Rpc(1, "ping"), notification,
                        Rpc(2, "tools/call", {{"name", "sandbox_list"}, {"arguments", json::object()}}),
                        Rpc(3, "initialize", {{"protocolVersion", "2025-03-26"}}), Rpc(4, "nope"), json(5)}),
           session);
  ASSERT_EQ(batch.status, 200);
  EXPECT_EQ(batch.headers.Get("Content-Type"), "application/json");
  json answers = Body(batch);
  ASSERT_TRUE(answers.is_array());
  ASSERT_EQ(answers.size(), 5u);
  EXPECT_EQ(answers[0], json({{"jsonrpc", "2.0"}, {"id", 1}, {"result", json::object()}}));
  EXPECT_EQ(answers[1]["id"], 2);
  EXPECT_EQ(answers[1]["result"]["isError"], false);
  EXPECT_EQ(answers[1]["result"]["structuredContent"]["sandboxes"], json::array());
  EXPECT_EQ(answers[2]["id"], 3);
  EXPECT_EQ(answers[2]["error"]["code"], -32600);
  EXPECT_EQ(answers[2]["error"]["message"], "initialize must not be part of a JSON-RPC batch");
  EXPECT_EQ(answers[3]["id"], 4);
  EXPECT_EQ(answers[3]["error"]["code"], -32601);
  EXPECT_TRUE(answers[4]["id"].is_null());
  EXPECT_EQ(answers[4]["error"]["code"], -32600);

  // A call that would stream its progress answers inside the array instead.
  Post(Rpc(5, "tools/call", {{"name", "sandbox_create"}, {"arguments", {{"name", "s"}}}}), session);
  Response exec = Post(json::array({Rpc(6, "tools/call",
                                        {{"name", "sandbox_exec"},
                                         {"arguments", {{"sandbox", "s"}, {"argv", {"ls"}}}},
                                         {"_meta", {{"progressToken", "tok"}}}})}),
                       session);
  ASSERT_FALSE(exec.stream);
  ASSERT_EQ(exec.status, 200);
  EXPECT_EQ(Body(exec)[0]["result"]["structuredContent"]["stdout"], "out: ls");

  Response notes = Post(json::array({notification, notification}), session);
  EXPECT_EQ(notes.status, 202);
  EXPECT_TRUE(notes.body.empty());
  Response many = Post(json(std::vector<json>(101, Rpc(1, "ping"))), session);
  EXPECT_EQ(many.status, 400);
  EXPECT_EQ(Body(many)["error"]["message"], "a batch of more than 100 messages");
  EXPECT_EQ(Body(Post(json(std::vector<json>(100, Rpc(1, "ping"))), session)).size(), 100u);
  // An element that is itself an array is no message.
  Response nested = Post(json::array({json::array({Rpc(1, "ping")})}), session);
  ASSERT_EQ(nested.status, 200);
  EXPECT_EQ(Body(nested)[0]["error"]["code"], -32600);
  Response empty = Post(json::array(), session);
  EXPECT_EQ(empty.status, 400);
  EXPECT_EQ(Body(empty)["error"]["message"], "an empty batch");
  Response sessionless = Post(json::array({Rpc(1, "ping")}));
  EXPECT_EQ(sessionless.status, 400);
  EXPECT_EQ(Body(sessionless)["error"]["message"],
            "JSON-RPC batches belong to protocol 2025-03-26 only (removed in 2025-06-18), and a batch needs a session "
            "that negotiated it; send one message per POST");
  EXPECT_EQ(Post(json::array({Rpc(1, "ping")}), {{"Mcp-Session-Id", "0123"}}).status, 404);
  // A session's version header must still be its own.
  Response wrong =
      Post(json::array({Rpc(1, "ping")}), {{"Mcp-Session-Id", sid}, {"MCP-Protocol-Version", "2025-11-25"}});
  ASSERT_EQ(wrong.status, 200);
  EXPECT_EQ(Body(wrong)[0]["error"]["message"],
            "MCP-Protocol-Version '2025-11-25' is not this session's, which negotiated 2025-03-26");
}

TEST_F(McpTest, JsonRpcErrors) {
  std::string sid = Initialize();
  Response parse = Send("POST", "{oops", Session(sid));
  EXPECT_EQ(parse.status, 400);
  EXPECT_EQ(Body(parse)["error"]["code"], -32700);
  EXPECT_TRUE(Body(parse)["id"].is_null());
  Response batch = Post(json::array({Rpc(1, "ping"), Rpc(2, "ping")}), Session(sid));
  EXPECT_EQ(batch.status, 400);
  EXPECT_EQ(Body(batch)["error"]["code"], -32600);
  EXPECT_EQ(Body(batch)["error"]["message"],
            "JSON-RPC batches belong to protocol 2025-03-26 only (removed in 2025-06-18), and this session negotiated "
            "2025-11-25; send one message per POST");
  EXPECT_EQ(Body(Post({{"jsonrpc", "1.0"}, {"id", 1}, {"method", "ping"}}, Session(sid)))["error"]["code"], -32600);
  EXPECT_EQ(Body(Post(Rpc(7, "nope/nope"), Session(sid)))["error"]["code"], -32601);
  json unknown_tool = Body(Post(Rpc(8, "tools/call", {{"name", "nope"}}), Session(sid)));
  EXPECT_EQ(unknown_tool["error"]["code"], -32602);
  EXPECT_EQ(unknown_tool["id"], 8);
  EXPECT_EQ(Body(Post(Rpc(9, "tools/call", {{"arguments", json::object()}}), Session(sid)))["error"]["code"], -32602);
  EXPECT_EQ(
      Body(Post(Rpc(9, "tools/call", {{"name", "sandbox_list"}, {"arguments", 5}}), Session(sid)))["error"]["code"],
      -32602);
  // A tool failure or a schema violation is a tool result with isError, not a protocol error.
  json failed =
      Body(Post(Rpc(10, "tools/call", {{"name", "sandbox_get"}, {"arguments", {{"sandbox", "zz"}}}}), Session(sid)));
  EXPECT_EQ(failed["result"]["isError"], true);
  EXPECT_NE(failed["result"]["content"][0]["text"].get<std::string>().find("not_found"), std::string::npos);
  json invalid =
      Body(Post(Rpc(11, "tools/call", {{"name", "sandbox_exec"}, {"arguments", {{"sandbox", "x"}, {"argv", "ls"}}}}),
                Session(sid)));
  EXPECT_EQ(invalid["result"]["isError"], true);
  EXPECT_NE(invalid["result"]["content"][0]["text"].get<std::string>().find("argv: expected array, got string"),
            std::string::npos);
}

TEST_F(McpTest, MethodsPathsAndOrigins) {
  Response get = Send("GET", "");
  EXPECT_EQ(get.status, 405);
  EXPECT_FALSE(get.headers.Get("Allow").empty());
  EXPECT_EQ(Send("DELETE", "").status, 400);
  std::string sid = Initialize("/orgs/default/mcp");
  EXPECT_FALSE(sid.empty());
  EXPECT_EQ(Post(Rpc(2, "tools/list"), Session(sid), "/orgs/default/mcp").status, 200);
  // An org the caller does not reach: 404 as for a missing one, and the attempt is reported as a refused "mcp" call.
  std::vector<std::string> refused;
  registry.SetObserver([&](std::string_view name, const Tool* tool, const nlohmann::json&, const CallContext& ctx,
                           const Result<nlohmann::json>& result) -> Status {
    refused.push_back(std::string(name) + " " + ctx.surface + " " + ctx.org + " " + (tool ? "tool" : "-") + " " +
                      std::string(result.ok() ? "ok" : CodeName(result.error().code)));
    return {};
  });
  EXPECT_EQ(Post(Rpc(1, "initialize"), {}, "/orgs/acme/mcp").status, 404);
  EXPECT_EQ(refused, std::vector<std::string>{"mcp mcp acme - not_found"});
  refused.clear();
  for (const char* ok : {"http://localhost", "http://localhost:5173", "http://127.0.0.1:8092", "http://[::1]:3000"}) {
    EXPECT_EQ(Post(Rpc(1, "initialize"), {{"Origin", ok}}).status, 200) << ok;
  }
  EXPECT_EQ(refused, std::vector<std::string>{});
  for (const char* bad : {"http://evil.example", "http://localhost.evil.example", "null", "http://127.0.0.1:80x",
                          "http://127.0.0.1.nip.io"}) {
    EXPECT_EQ(Post(Rpc(1, "initialize"), {{"Origin", bad}}).status, 403) << bad;
  }
  // Each refused origin is a refusal the audit log hears of.
  EXPECT_EQ(refused, std::vector<std::string>(5, "mcp mcp default - forbidden"));
  registry.SetObserver(nullptr);
  EXPECT_EQ(McpOrgFromPath("/mcp"), "default");
  EXPECT_EQ(McpOrgFromPath("/orgs/x/mcp"), "x");
  EXPECT_FALSE(McpOrgFromPath("/orgs//mcp"));
  EXPECT_FALSE(McpOrgFromPath("/orgs/a/b/mcp"));
  EXPECT_FALSE(McpOrgFromPath("/api/v1/tools"));
}

// A destructive tool over MCP runs only once a person approved it. A client that declared elicitation is asked on
// the call's event stream, and the call runs on "accept" with approve true only; a client that cannot be asked is
// refused with the way around; pre-approved tools (exec, file writes) are not asked about.
TEST_F(McpTest, ADestructiveCallRunsOnlyOnceAPersonApprovedIt) {
  std::vector<std::string> seen;  // "tool outcome" as the audit log hears it
  registry.SetObserver(
      [&](std::string_view name, const Tool*, const json&, const CallContext&, const Result<json>& result) -> Status {
        seen.push_back(std::string(name) + " " + (result.ok() ? "ok" : std::string(CodeName(result.error().code))));
        return {};
      });
  const std::string box = fake.Create({})->id;
  auto remove = [&](int id) {
    return Rpc(id, "tools/call", {{"name", "sandbox_remove"}, {"arguments", {{"sandbox", box}}}});
  };

  // A client that cannot be asked.
  const std::string plain = Initialize();
  Response refused = Post(remove(1), Session(plain));
  EXPECT_FALSE(refused.stream);
  json body = Body(refused);
  EXPECT_EQ(body["result"]["isError"], true) << body.dump();
  EXPECT_EQ(body["result"]["content"][0]["text"].get<std::string>().find(
                "forbidden: sandbox_remove is destructive and runs over MCP only once a person approves it, and this "
                "client cannot be asked (it declared no elicitation capability)"),
            0u)
      << body.dump();
  // Pre-approved: an exec runs without a question.
  EXPECT_EQ(
      Body(Post(Rpc(2, "tools/call", {{"name", "sandbox_exec"}, {"arguments", {{"sandbox", box}, {"argv", {"ls"}}}}}),
                Session(plain)))["result"]["isError"],
      false);

  // A client that can be asked: declined, then approved.
  Response init = Post({{"jsonrpc", "2.0"},
                        {"id", 1},
                        {"method", "initialize"},
                        {"params",
                         {{"protocolVersion", "2025-11-25"},
                          {"capabilities", {{"elicitation", json::object()}}},
                          {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}});
  const std::string asking = init.headers.Get("Mcp-Session-Id");
  // Answers of every shape but the one that approves are no approval, and never break the daemon.
  const json odd_answers[] = {json{{"action", 5}}, json{{"action", "accept"}, {"content", "yes"}},
                              json{{"action", "accept"}, {"content", {{"approve", "true"}}}}, json::array({1}),
                              json(7)};
  int odd_id = 10;
  for (const json& odd : odd_answers) {
    Response r = Post(remove(odd_id++), Session(asking));
    ASSERT_TRUE(r.stream);
    json last;
    r.stream([&](std::string_view chunk) {
      if (chunk.starts_with(":")) return true;
      json e = json::parse(chunk.substr(6));
      if (e.value("method", "") == "elicitation/create")
        Post({{"jsonrpc", "2.0"}, {"id", e["id"]}, {"result", odd}}, Session(asking));
      last = e;
      return true;
    });
    EXPECT_EQ(last["result"]["content"][0]["text"],
              "forbidden: sandbox_remove was not approved: the person asked did not approve it")
        << odd.dump();
  }
  EXPECT_TRUE(fake.Get(box).ok());
  seen.resize(2);  // the odd answers' refusals are checked above

  for (const bool approve : {false, true}) {
    Response r = Post(remove(approve ? 4 : 3), Session(asking));
    ASSERT_TRUE(r.stream);
    std::vector<json> events;
    r.stream([&](std::string_view chunk) {
      if (chunk.starts_with(":")) return true;  // a keep-alive
      events.push_back(json::parse(chunk.substr(6)));
      const json& e = events.back();
      if (e.value("method", "") == "elicitation/create") {
        // The client answers on a request of its own, as Streamable HTTP clients do; a response for an ask of
        // another session, or one that asks nothing, changes nothing.
        const json answer = {{"jsonrpc", "2.0"},
                             {"id", e["id"]},
                             {"result", {{"action", "accept"}, {"content", {{"approve", approve}}}}}};
        EXPECT_EQ(Post(answer, Session(plain)).status, 202);
        EXPECT_EQ(Post(answer, Session(asking)).status, 202);
      }
      return true;
    });
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0]["params"]["message"],
              "Approve sandbox_remove {\"sandbox\":\"" + box + "\"}? Remove a sandbox: it cannot be undone.");
    EXPECT_EQ(events[0]["params"]["requestedSchema"]["required"], json({"approve"}));
    EXPECT_EQ(events[1]["id"], approve ? 4 : 3);
    EXPECT_EQ(events[1]["result"]["isError"], !approve) << events[1].dump();
    if (!approve) {
      EXPECT_EQ(events[1]["result"]["content"][0]["text"],
                "forbidden: sandbox_remove was not approved: the person asked did not approve it");
      EXPECT_TRUE(fake.Get(box).ok()) << "a declined removal removed the sandbox";
    }
  }
  EXPECT_FALSE(fake.Get(box).ok()) << "the approved removal did not run";
  EXPECT_EQ(seen, (std::vector<std::string>{"sandbox_remove forbidden", "sandbox_exec ok", "sandbox_remove forbidden",
                                            "sandbox_remove ok"}));
}

// Over 2026-07-28 a destructive call's approval is asked by the call's result (resultType "input_required"), and the
// client answers by calling again with inputResponses and the requestState it was given: accepted, the tool runs
// once; declined or cancelled, the refusal a session's client gets. A client that cannot be asked is refused.
class StatelessApprovalTest : public McpTest {
 protected:
  // A stateless tools/call of `tool` with `args` at `path` by `who`, from a client with `caps`; `answer` (an
  // ElicitResult) and `state` are sent when not null.
  json Call(int id, const std::string& tool, const json& args, const json& state = nullptr,
            const json& answer = nullptr, const Identity& who = Identity::Host(), const std::string& path = "/mcp",
            json caps = {{"elicitation", json::object()}}, McpServer* server = nullptr) {
    json meta = Meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = std::move(caps);
    json params = {{"name", tool}, {"arguments", args}, {"_meta", meta}};
    if (!state.is_null()) params["requestState"] = state;
    if (!answer.is_null()) params["inputResponses"] = {{"approval", answer}};
    Request req;
    req.method = "POST";
    req.target = path;
    req.body = Dump(Rpc(id, "tools/call", params));
    for (auto& [n, v] : Stateless("tools/call")) req.headers.Add(n, v);
    req.headers.Add("Mcp-Name", tool);
    Response r = (server ? *server : mcp).Handle(req, who);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_FALSE(r.stream) << "a stateless call is answered in one response";
    json body = Body(r);
    EXPECT_EQ(body["id"], id) << r.body;
    return body.contains("result") ? body["result"] : body;
  }
  // Asks about removing `box` and returns the requestState of the question.
  std::string Ask(const std::string& sandbox, const Identity& who = Identity::Host(), McpServer* server = nullptr) {
    json asked = Call(1, "sandbox_remove", {{"sandbox", sandbox}}, nullptr, nullptr, who, "/mcp",
                      {{"elicitation", json::object()}}, server);
    EXPECT_EQ(asked.value("resultType", ""), "input_required") << asked.dump();
    return asked.value("requestState", "");
  }
  static std::string Text(const json& result) { return result["content"][0]["text"].get<std::string>(); }
  static std::string Refusal(const std::string& why) {
    return "forbidden: " + why + "; call the tool again without it to be asked anew";
  }
  void SetUp() override {
    McpTest::SetUp();
    registry.SetOrgCheck([](std::string_view org) { return org == "default" || org == "team"; });
    registry.SetObserver([this](std::string_view name, const Tool*, const json&, const CallContext&,
                                const Result<json>& result) -> Status {
      seen.push_back(std::string(name) + " " + (result.ok() ? "ok" : std::string(CodeName(result.error().code))));
      return {};
    });
    box = fake.Create({})->id;
  }

  std::vector<std::string> seen;  // "tool outcome" as the audit log hears it
  std::string box;
  const json accept = {{"action", "accept"}, {"content", {{"approve", true}}}};
};

TEST_F(StatelessApprovalTest, TheQuestionIsAnInputRequiredResult) {
  json asked = Call(1, "sandbox_remove", {{"sandbox", box}});
  ASSERT_TRUE(asked["requestState"].is_string()) << asked.dump();
  const std::string state = asked["requestState"];
  asked.erase("requestState");
  EXPECT_EQ(asked,
            json({{"resultType", "input_required"},
                  {"inputRequests",
                   {{"approval",
                     {{"method", "elicitation/create"},
                      {"params",
                       {{"mode", "form"},
                        {"message", "Approve sandbox_remove {\"sandbox\":\"" + box +
                                        "\"}? Remove a sandbox: it cannot be undone."},
                        {"requestedSchema",
                         {{"type", "object"},
                          {"properties", {{"approve", {{"type", "boolean"}, {"title", "Approve sandbox_remove"}}}}},
                          {"required", {"approve"}}}}}}}}}}}));
  // Sealed, not secret-bearing: the arguments and the caller are in it as digests only.
  const size_t dot = state.find('.');
  ASSERT_NE(dot, std::string::npos);
  EXPECT_EQ(state.size() - dot - 1, 64u) << "an HMAC-SHA-256 in hex";
  json payload = json::parse(*Base64Decode(state.substr(0, dot)));
  EXPECT_EQ(payload["tool"], "sandbox_remove");
  EXPECT_EQ(payload["org"], "default");
  EXPECT_EQ(payload["args"].get<std::string>().size(), 64u);
  EXPECT_EQ(payload["caller"].get<std::string>().size(), 64u);
  EXPECT_EQ(state.find(box), std::string::npos);
  EXPECT_EQ(payload.dump().find(box), std::string::npos);
  EXPECT_TRUE(fake.Get(box).ok()) << "asking removed nothing";
  EXPECT_EQ(seen, std::vector<std::string>{}) << "a question is no outcome";

  // A client that declared no elicitation, or URL elicitation only, is refused as before.
  for (const json& caps : {json::object(), json{{"elicitation", {{"url", json::object()}}}}}) {
    json refused = Call(2, "sandbox_remove", {{"sandbox", box}}, nullptr, nullptr, Identity::Host(), "/mcp", caps);
    EXPECT_EQ(refused["resultType"], "complete");
    EXPECT_EQ(refused["isError"], true);
    EXPECT_EQ(
        Text(refused).find("forbidden: sandbox_remove is destructive and runs over MCP only once a person "
                           "approves it, and this client cannot be asked (it declared no elicitation capability)"),
        0u)
        << refused.dump();
  }
  // Pre-approved tools are not asked about.
  EXPECT_EQ(Call(3, "sandbox_exec", {{"sandbox", box}, {"argv", {"ls"}}})["isError"], false);
  // A retry that does not answer the question is asked again, under a new state.
  json again = Call(4, "sandbox_remove", {{"sandbox", box}}, state);
  EXPECT_EQ(again["resultType"], "input_required") << again.dump();
  EXPECT_NE(again["requestState"], state);
  // The answer's members must have their types.
  json params_error = Call(5, "sandbox_remove", {{"sandbox", box}}, 7, accept);
  EXPECT_EQ(params_error["error"]["code"], -32602) << params_error.dump();
  EXPECT_EQ(params_error["error"]["message"], "params.requestState: expected the string the server sent");
  EXPECT_TRUE(fake.Get(box).ok());
}

TEST_F(StatelessApprovalTest, AcceptRunsTheToolOnceAndTheStateCannotBeReplayed) {
  const std::string state = Ask(box);
  json ran = Call(2, "sandbox_remove", {{"sandbox", box}}, state, accept);
  EXPECT_EQ(ran["resultType"], "complete") << ran.dump();
  EXPECT_EQ(ran["isError"], false) << ran.dump();
  EXPECT_EQ(ran["structuredContent"], json({{"sandbox", box}, {"removed", true}}));
  EXPECT_FALSE(fake.Get(box).ok()) << "the approved removal did not run";
  json replayed = Call(3, "sandbox_remove", {{"sandbox", box}}, state, accept);
  EXPECT_EQ(replayed["isError"], true);
  EXPECT_EQ(Text(replayed), Refusal("requestState was used already: an approval answers one call"));
  EXPECT_EQ(seen, (std::vector<std::string>{"sandbox_remove ok", "sandbox_remove forbidden"}));
}

TEST_F(StatelessApprovalTest, DeclineOrCancelIsTheSessionsRefusal) {
  const json answers[] = {json{{"action", "decline"}}, json{{"action", "cancel"}},
                          json{{"action", "accept"}, {"content", {{"approve", false}}}},
                          json{{"action", "accept"}, {"content", {{"approve", "true"}}}}, json(7)};
  int id = 2;
  for (const json& answer : answers) {
    json refused = Call(id++, "sandbox_remove", {{"sandbox", box}}, Ask(box), answer);
    EXPECT_EQ(refused["resultType"], "complete") << answer.dump();
    EXPECT_EQ(refused["isError"], true) << answer.dump();
    EXPECT_EQ(Text(refused), "forbidden: sandbox_remove was not approved: the person asked did not approve it");
  }
  EXPECT_TRUE(fake.Get(box).ok()) << "a refused removal removed the sandbox";
  // A declined state is spent: it does not approve later.
  const std::string state = Ask(box);
  Call(20, "sandbox_remove", {{"sandbox", box}}, state, {{"action", "decline"}});
  EXPECT_EQ(Text(Call(21, "sandbox_remove", {{"sandbox", box}}, state, accept)),
            Refusal("requestState was used already: an approval answers one call"));
  EXPECT_TRUE(fake.Get(box).ok());
  EXPECT_EQ(seen, std::vector<std::string>(7, "sandbox_remove forbidden"));
}

TEST_F(StatelessApprovalTest, AStateAnswersOnlyItsOwnCall) {
  const std::string other = fake.Create({})->id;
  const Identity alice = UserIn("alice", "default", identity::Role::kOwner, 1);
  const Identity alices_other_token = UserIn("alice", "default", identity::Role::kOwner, 2);
  const std::string forged = Refusal("requestState is not one this server issued, or it was altered");
  // Presented on another call: other arguments, another tool, another org, another credential.
  std::string state = Ask(box);
  EXPECT_EQ(Text(Call(2, "sandbox_remove", {{"sandbox", other}}, state, accept)),
            Refusal("requestState was issued for other arguments"));
  EXPECT_EQ(Text(Call(3, "sandbox_stop", {{"sandbox", box}}, state, accept)),
            Refusal("requestState was issued for a call of sandbox_remove"));
  EXPECT_EQ(Text(Call(4, "sandbox_remove", {{"sandbox", box}}, state, accept, Identity::Host(), "/orgs/team/mcp")),
            Refusal("requestState was issued in org 'default'"));
  state = Ask(box, alice);
  EXPECT_EQ(Text(Call(5, "sandbox_remove", {{"sandbox", box}}, state, accept, alices_other_token)),
            Refusal("requestState was issued to another caller"));
  EXPECT_EQ(Text(Call(6, "sandbox_remove", {{"sandbox", box}}, state, accept)),
            Refusal("requestState was issued to another caller"));

  // Altered: any field of its payload rewritten (its seal kept), the seal changed, or not a state at all.
  state = Ask(box);
  const size_t dot = state.find('.');
  const json payload = json::parse(*Base64Decode(state.substr(0, dot)));
  const json other_args = {{"sandbox", other}};
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, json>>{{"tool", "sandbox_stop"},
                                                 {"org", "team"},
                                                 {"exp", payload["exp"].get<int64_t>() + 3600},
                                                 {"nonce", std::string(32, '0')},
                                                 {"caller", std::string(64, '0')},
                                                 {"args", std::string(64, 'a')}}) {
    json altered = payload;
    altered[field] = value;
    EXPECT_EQ(
        Text(Call(7, "sandbox_remove", {{"sandbox", box}}, Base64Encode(Dump(altered)) + state.substr(dot), accept)),
        forged)
        << field;
  }
  std::string reseal = state;
  reseal.back() = reseal.back() == '0' ? '1' : '0';
  for (const std::string& bad :
       {reseal, state.substr(0, dot), state.substr(dot), std::string("x.y"), std::string(), state + "0", " " + state}) {
    EXPECT_EQ(Text(Call(8, "sandbox_remove", {{"sandbox", box}}, bad, accept)), forged) << bad;
  }
  EXPECT_TRUE(fake.Get(box).ok()) << "no refused state removed the sandbox";
  EXPECT_TRUE(fake.Get(other).ok());
  // The state itself was never redeemed by the refusals above: it still approves its own call, once.
  EXPECT_EQ(Call(9, "sandbox_remove", {{"sandbox", box}}, state, accept)["isError"], false);
  EXPECT_FALSE(fake.Get(box).ok());
}

// A state whose record was forgotten (it lapsed for a later call) is never redeemed again, even by a call that read
// an earlier time or after the clock was set back.
TEST(ApprovalStatesTest, AForgottenStateHasLapsedForEveryLaterCallWhateverTheClock) {
  int64_t now = 1000;
  ApprovalStates states(std::string(32, 'k'), std::chrono::seconds(300), [&] { return now; });
  const ApprovalCall call{"token/1/7/alice", "default", "sandbox_remove", R"({"sandbox":"web"})"};
  auto first = states.Issue(call);
  ASSERT_TRUE(first.ok());
  now = 1001;
  auto second = states.Issue(call);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(states.Redeem(*first, call).ok());
  now = 1300;  // the first lapses; redeeming the second forgets it
  ASSERT_TRUE(states.Redeem(*second, call).ok());
  now = 1299;  // set back
  Status again = states.Redeem(*first, call);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(
      again.error().message,
      "requestState expired: an approval is answered within 300 s; call the tool again without it to be asked anew");
  // The payload names no caller or arguments a guess could be checked against: both are keyed digests.
  ApprovalStates other_key(std::string(32, 'x'), std::chrono::seconds(300), [&] { return now; });
  auto foreign = other_key.Issue(call);
  ASSERT_TRUE(foreign.ok());
  EXPECT_NE(first->substr(0, first->find('.')).size(), 0u);
  EXPECT_EQ(states.Redeem(*foreign, call).error().message,
            "requestState is not one this server issued, or it was altered; call the tool again without it to be asked "
            "anew");
}

TEST_F(StatelessApprovalTest, AStateLapsesAfterTheApprovalWait) {
  int64_t now = 1'000'000;
  McpServer timed{registry, McpOptions{.now = [&] { return now; }}};
  const std::string late = Ask(box, Identity::Host(), &timed);
  const std::string in_time = Ask(box, Identity::Host(), &timed);
  now += 299;
  // Another daemon's states (another key) are not this one's.
  EXPECT_EQ(Text(Call(2, "sandbox_remove", {{"sandbox", box}}, in_time, accept)),
            Refusal("requestState is not one this server issued, or it was altered"));
  now += 1;
  EXPECT_EQ(Text(Call(3, "sandbox_remove", {{"sandbox", box}}, late, accept, Identity::Host(), "/mcp",
                      {{"elicitation", json::object()}}, &timed)),
            Refusal("requestState expired: an approval is answered within 300 s"));
  EXPECT_TRUE(fake.Get(box).ok());
  now -= 1;
  EXPECT_EQ(Call(4, "sandbox_remove", {{"sandbox", box}}, in_time, accept, Identity::Host(), "/mcp",
                 {{"elicitation", json::object()}}, &timed)["isError"],
            false);
  EXPECT_FALSE(fake.Get(box).ok());
}

TEST_F(McpTest, StreamsProgressNotifications) {
  std::string sid = Initialize();
  Post(Rpc(1, "tools/call", {{"name", "sandbox_create"}, {"arguments", {{"name", "s"}}}}), Session(sid));
  Response r = Post(Rpc(2, "tools/call",
                        {{"name", "sandbox_exec"},
                         {"arguments", {{"sandbox", "s"}, {"argv", {"ls"}}}},
                         {"_meta", {{"progressToken", "tok"}}}}),
                    Session(sid));
  ASSERT_TRUE(r.stream);
  EXPECT_EQ(r.headers.Get("Content-Type"), "text/event-stream");
  std::vector<json> events;
  r.stream([&](std::string_view chunk) {
    EXPECT_TRUE(chunk.starts_with("data: ") && chunk.ends_with("\n\n"));
    events.push_back(json::parse(chunk.substr(6)));
    return true;
  });
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0]["method"], "notifications/progress");
  EXPECT_EQ(events[0]["params"]["progressToken"], "tok");
  EXPECT_EQ(events[0]["params"]["message"], "out:");
  EXPECT_EQ(events[1]["params"]["progress"], 7);
  EXPECT_EQ(events[2]["params"]["_meta"]["isb/stream"], "stderr");
  EXPECT_EQ(events[3]["id"], 2);
  EXPECT_EQ(events[3]["result"]["structuredContent"]["stdout"], "out: ls");
  // Without a progress token the same call answers plain JSON.
  EXPECT_FALSE(
      Post(Rpc(3, "tools/call", {{"name", "sandbox_exec"}, {"arguments", {{"sandbox", "s"}, {"argv", {"ls"}}}}}),
           Session(sid))
          .stream);
}

TEST_F(McpTest, StatelessRevision) {
  Response d = Post(Rpc(1, "server/discover", {{"_meta", Meta()}}), Stateless("server/discover"));
  ASSERT_EQ(d.status, 200) << d.body;
  json disc = Body(d)["result"];
  EXPECT_EQ(disc["supportedVersions"], json::array({"2026-07-28"}));
  EXPECT_EQ(disc["serverInfo"]["name"], "isb");
  EXPECT_EQ(disc["resultType"], "complete");
  EXPECT_TRUE(d.headers.Get("Mcp-Session-Id").empty());

  json list = Body(Post(Rpc(2, "tools/list", {{"_meta", Meta()}}), Stateless("tools/list")))["result"];
  EXPECT_EQ(list["tools"].size(), 15u);
  EXPECT_EQ(list["resultType"], "complete");
  json call =
      Body(Post(Rpc(3, "tools/call", {{"name", "sandbox_create"}, {"arguments", json::object()}, {"_meta", Meta()}}),
                {{"MCP-Protocol-Version", "2026-07-28"},
                 {"Mcp-Method", "tools/call"},
                 {"Mcp-Name", "sandbox_create"}}))["result"];
  EXPECT_EQ(call["isError"], false);
  EXPECT_EQ(call["resultType"], "complete");
  EXPECT_EQ(mcp.session_count(), 0u);

  // Header and body must agree.
  Response wrong_method = Post(Rpc(4, "tools/list", {{"_meta", Meta()}}), Stateless("tools/call"));
  EXPECT_EQ(wrong_method.status, 400);
  EXPECT_EQ(Body(wrong_method)["error"]["code"], kRpcHeaderMismatch);
  Response wrong_name = Post(Rpc(4, "tools/call", {{"name", "sandbox_list"}, {"_meta", Meta()}}),
                             {{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Name", "sandbox_remove"}});
  EXPECT_EQ(wrong_name.status, 400);
  Response no_header = Post(Rpc(5, "tools/list", {{"_meta", Meta()}}));
  EXPECT_EQ(no_header.status, 400);
  EXPECT_EQ(Body(no_header)["error"]["code"], kRpcHeaderMismatch);
  Response no_meta = Post(Rpc(6, "tools/list"), Stateless("tools/list"));
  EXPECT_EQ(no_meta.status, 400);
  EXPECT_EQ(Body(no_meta)["error"]["code"], -32602);
  json no_caps_meta = Meta();
  no_caps_meta.erase("io.modelcontextprotocol/clientCapabilities");
  EXPECT_EQ(Body(Post(Rpc(6, "tools/list", {{"_meta", no_caps_meta}}), Stateless("tools/list")))["error"]["code"],
            -32602);
  json future = Meta();
  future["io.modelcontextprotocol/protocolVersion"] = "2099-01-01";
  Response unsupported = Post(Rpc(7, "tools/list", {{"_meta", future}}), {{"MCP-Protocol-Version", "2099-01-01"}});
  EXPECT_EQ(unsupported.status, 400);
  EXPECT_EQ(Body(unsupported)["error"]["code"], kRpcUnsupportedVersion);
  EXPECT_EQ(Body(unsupported)["error"]["data"]["supported"],
            json::array({"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}));
  EXPECT_EQ(Body(unsupported)["error"]["data"]["requested"], "2099-01-01");
  // The method, and a tool call's name, are mirrored in headers on every stateless request.
  Response no_method = Post(Rpc(7, "tools/list", {{"_meta", Meta()}}), {{"MCP-Protocol-Version", "2026-07-28"}});
  EXPECT_EQ(no_method.status, 400);
  EXPECT_EQ(Body(no_method)["error"]["code"], kRpcHeaderMismatch);
  EXPECT_EQ(Body(no_method)["error"]["message"], "missing Mcp-Method header (required by 2026-07-28)");
  Response no_name = Post(Rpc(7, "tools/call", {{"name", "sandbox_list"}, {"_meta", Meta()}}), Stateless("tools/call"));
  EXPECT_EQ(no_name.status, 400);
  EXPECT_EQ(Body(no_name)["error"]["code"], kRpcHeaderMismatch);
  EXPECT_EQ(Body(no_name)["error"]["message"], "missing Mcp-Name header (required by 2026-07-28 on tools/call)");
  // Removed methods and unknown ones: -32601 with HTTP 404.
  Response ping = Post(Rpc(8, "ping", {{"_meta", Meta()}}), Stateless("ping"));
  EXPECT_EQ(ping.status, 404);
  EXPECT_EQ(Body(ping)["error"]["code"], -32601);
  EXPECT_EQ(Post({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"_meta", Meta()}}}},
                 Stateless("notifications/cancelled"))
                .status,
            202);
}

}  // namespace
}  // namespace isb::api
