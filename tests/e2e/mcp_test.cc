// MCP: the official TypeScript SDK client end to end, and the transport's rules checked byte by byte with curl.
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "e2e/daemon_fixture.h"
#include "e2e/mcp_sdk.h"

namespace isb::e2e {
namespace {

const std::string kNodeDir = NodeDir();

class McpTest : public E2eTest {
 protected:
  // A JSON-RPC message to /mcp over TCP with the token; `headers` are added as given.
  CurlResult Rpc(const json& message, const std::vector<std::string>& headers = {}) {
    std::vector<std::string> h = {"Accept: application/json, text/event-stream"};
    h.insert(h.end(), headers.begin(), headers.end());
    return CurlTcp("POST", "/mcp", message.dump(), h);
  }
};

TEST_F(McpTest, TypeScriptSdkClientCreatesAndExecs) {
  std::string why = EnsureSdk();
  ASSERT_TRUE(why.empty()) << why;
  ProcResult node = RunProcess({"node", kNodeDir + "/mcp_client.mjs", base_url() + "/mcp", token()}, "", 60s);
  json obs = json::parse(node.out, nullptr, false);
  ASSERT_TRUE(obs.is_object()) << node.Describe();
  ASSERT_EQ(obs["ok"], true) << "the SDK client failed after steps " << obs["steps"].dump() << ": "
                             << obs.value("error", "") << "\n"
                             << node.Describe();
  EXPECT_EQ(node.exit_status, 0) << node.Describe();
  TrackFrom(obs);
  if (obs["create"]["id"].is_string()) Track(obs["create"]["id"].get<std::string>());
  // The client's calls, in its order; the terminal's input went in while its exec streamed.
  ExpectAudit("node: create", {ByToken("mcp", "sandbox_create")});
  ExpectAudit("node: exec", {ByToken("mcp", "sandbox_exec")});
  ExpectAudit("node: streamed exec", {ByToken("mcp", "sandbox_exec")});
  ExpectAudit("node: terminal exec and its input",
              {ByToken("mcp", "sandbox_exec"), ByToken("mcp", "sandbox_exec_input")});
  ExpectAudit("node: bad input", {ByToken("mcp", "sandbox_exec", "invalid_argument")});
  ExpectAudit("node: unknown tool", {ByToken("mcp", "sandbox_no_such_tool", "not_found")});
  ExpectAudit("node: remove", {ByToken("mcp", "sandbox_remove")});

  // initialize: a session, the protocol version the SDK asked for, the server's name and the tools capability.
  ASSERT_TRUE(obs["sessionId"].is_string()) << obs.dump();
  EXPECT_TRUE(std::regex_match(obs["sessionId"].get<std::string>(), std::regex("[0-9a-f]{32}"))) << obs["sessionId"];
  EXPECT_EQ(obs["protocolVersion"], "2025-11-25") << obs.dump();
  EXPECT_EQ(obs["serverInfo"]["name"], "isb");
  EXPECT_TRUE(obs["capabilities"].contains("tools")) << obs["capabilities"];

  // tools/list: the twelve tools with their annotations.
  const json& tools = obs["tools"];
  EXPECT_EQ(tools.size(), kAllTools.size()) << tools.dump();
  for (const char* t : {"sandbox_create", "sandbox_exec", "sandbox_exec_input", "sandbox_exec_resize",
                        "sandbox_file_read", "sandbox_file_write", "sandbox_list", "sandbox_get", "sandbox_stop",
                        "sandbox_start", "sandbox_extend", "sandbox_remove"})
    EXPECT_TRUE(tools.contains(t) && tools[t].is_object()) << t << " missing or without annotations: " << tools.dump();
  EXPECT_EQ(tools["sandbox_remove"]["destructiveHint"], true);
  EXPECT_EQ(tools["sandbox_remove"]["readOnlyHint"], false);
  EXPECT_EQ(tools["sandbox_list"]["readOnlyHint"], true);
  EXPECT_EQ(tools["sandbox_list"]["destructiveHint"], false);
  EXPECT_EQ(tools["sandbox_get"]["readOnlyHint"], true);
  EXPECT_EQ(tools["sandbox_file_read"]["readOnlyHint"], true);
  EXPECT_EQ(tools["sandbox_exec"]["readOnlyHint"], false);
  EXPECT_EQ(tools["sandbox_exec"]["destructiveHint"], true);
  EXPECT_EQ(tools["sandbox_stop"]["destructiveHint"], true);
  EXPECT_EQ(tools["sandbox_create"]["destructiveHint"], false);
  EXPECT_EQ(obs["toolsWithoutOutputSchema"], json::array());

  // tools/call: create, exec with structuredContent (validated by the SDK against the output schema).
  EXPECT_EQ(obs["create"]["isError"], false) << obs["create"];
  EXPECT_EQ(obs["create"]["state"], "running") << obs["create"];
  EXPECT_EQ(obs["exec"], json({{"isError", false},
                               {"stdout", "hello mcp"},
                               {"stderr", "oops"},
                               {"exit_code", 7},
                               {"textHasResult", true}}));
  EXPECT_EQ(obs["streamed"]["stdout"], "one\ntwo\n");
  EXPECT_EQ(obs["streamed"]["exit_code"], 0);
  EXPECT_EQ(obs["streamed"]["progress"], json({"one\n", "two\n"})) << "output as progress notifications";

  // A terminal exec: the session first, input from a second call, the output of a pty, the exit code.
  const json& tty = obs["tty"];
  ASSERT_TRUE(tty["session"].is_string()) << tty.dump();
  const std::string session = tty["session"].get<std::string>();
  EXPECT_TRUE(std::regex_match(session, std::regex("ts-[0-9a-f]{32}"))) << session;
  EXPECT_EQ(tty["input"], json({{"session", session}, {"written", 23}, {"eof", false}})) << tty.dump();
  EXPECT_EQ(tty["exit_code"], 4) << tty.dump();
  EXPECT_EQ(tty["resultSession"], session) << tty.dump();
  std::string streamed;
  for (const json& m : tty["progress"]) streamed += m.get<std::string>();
  EXPECT_EQ(tty["stdout"], streamed) << tty.dump();
  EXPECT_NE(streamed.find("\r\n10 33\r\n/dev/pts/0\r\n"), std::string::npos) << tty.dump();

  // A bad input is a tool error naming the field; an unknown tool is a JSON-RPC error.
  EXPECT_EQ(obs["badInput"]["isError"], true) << obs["badInput"];
  EXPECT_NE(obs["badInput"]["text"].get<std::string>().find("argv"), std::string::npos) << obs["badInput"];
  EXPECT_EQ(obs["unknownTool"]["threw"], true) << obs["unknownTool"];
  EXPECT_EQ(obs["unknownTool"]["code"], -32602) << obs["unknownTool"];

  // The removal, destructive, ran once the client's person approved it: the SDK's elicitation handler was asked
  // once, about it, and nothing before it was asked about (exec is pre-approved).
  ASSERT_EQ(obs["asked"].size(), 1u) << obs["asked"].dump();
  EXPECT_EQ(obs["asked"][0]["message"], "Approve sandbox_remove {\"sandbox\":\"" +
                                            obs["create"]["id"].get<std::string>() +
                                            "\"}? Remove a sandbox: it cannot be undone.");
  EXPECT_EQ(obs["asked"][0]["schema"]["properties"]["approve"]["type"], "boolean");
  EXPECT_EQ(obs["remove"]["isError"], false) << obs["remove"];
  EXPECT_EQ(obs["remove"]["structured"]["removed"], true) << obs["remove"];
  EXPECT_TRUE(obs["sessionAfterTerminate"].is_null()) << obs.dump();

  // The daemon agrees: the sandbox is gone and so is the session.
  EXPECT_EQ(Tool("sandbox_list", json::object()).j["result"]["sandboxes"], json::array());
  CurlResult after =
      Rpc({{"jsonrpc", "2.0"}, {"id", 9}, {"method", "tools/list"}},
          {"Mcp-Session-Id: " + obs["sessionId"].get<std::string>(), "MCP-Protocol-Version: 2025-11-25"});
  EXPECT_EQ(after.http.status, 404) << after.Describe();
}

TEST_F(McpTest, StreamableHttpRulesWithCurl) {
  // initialize -> a session id header
  CurlResult init = Rpc({{"jsonrpc", "2.0"},
                         {"id", 1},
                         {"method", "initialize"},
                         {"params",
                          {{"protocolVersion", "2025-11-25"},
                           {"capabilities", json::object()},
                           {"clientInfo", {{"name", "curl"}, {"version", "1"}}}}}});
  ASSERT_EQ(init.http.status, 200) << init.Describe();
  EXPECT_EQ(init.http.j["id"], 1);
  EXPECT_EQ(init.http.j["result"]["protocolVersion"], "2025-11-25") << init.Describe();
  const std::string sid = init.http.Header("mcp-session-id");
  ASSERT_FALSE(sid.empty()) << init.Describe();
  const std::vector<std::string> session = {"Mcp-Session-Id: " + sid, "MCP-Protocol-Version: 2025-11-25"};

  // notifications/initialized -> 202, no body
  CurlResult note = Rpc({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, session);
  EXPECT_EQ(note.http.status, 202) << note.Describe();
  EXPECT_EQ(note.http.body, "");

  // tools/list in the session
  CurlResult list = Rpc({{"jsonrpc", "2.0"}, {"id", "two"}, {"method", "tools/list"}}, session);
  ASSERT_EQ(list.http.status, 200) << list.Describe();
  EXPECT_EQ(list.http.j["id"], "two");
  EXPECT_EQ(list.http.j["result"]["tools"].size(), kAllTools.size()) << list.Describe();

  // ping
  CurlResult ping = Rpc({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "ping"}}, session);
  EXPECT_EQ(ping.http.status, 200) << ping.Describe();
  EXPECT_EQ(ping.http.j, json({{"jsonrpc", "2.0"}, {"id", 3}, {"result", json::object()}})) << ping.Describe();

  // GET -> 405 (no server-initiated stream)
  CurlResult get = CurlTcp("GET", "/mcp", "", {"Accept: text/event-stream", session[0]});
  EXPECT_EQ(get.http.status, 405) << get.Describe();
  EXPECT_EQ(get.http.Header("allow"), "POST, DELETE") << get.Describe();

  // A foreign Origin -> 403, before anything else is looked at; loopback origins pass.
  CurlResult evil = Rpc({{"jsonrpc", "2.0"}, {"id", 4}, {"method", "tools/list"}},
                        {session[0], session[1], "Origin: http://evil.example"});
  EXPECT_EQ(evil.http.status, 403) << evil.Describe();
  EXPECT_EQ(evil.http.j.value("error", ""), "forbidden") << evil.Describe();
  CurlResult evil_delete = CurlTcp("DELETE", "/mcp", "", {session[0], "Origin: https://localhost.evil.example"});
  EXPECT_EQ(evil_delete.http.status, 403) << evil_delete.Describe();
  CurlResult local = Rpc({{"jsonrpc", "2.0"}, {"id", 5}, {"method", "ping"}},
                         {session[0], session[1], "Origin: http://localhost:" + std::to_string(port())});
  EXPECT_EQ(local.http.status, 200) << local.Describe();

  // Without a session (and not stateless) -> 400; an unknown session -> 404.
  CurlResult none = Rpc({{"jsonrpc", "2.0"}, {"id", 6}, {"method", "tools/list"}});
  EXPECT_EQ(none.http.status, 400) << none.Describe();
  EXPECT_EQ(none.http.j["error"]["code"], -32600) << none.Describe();
  CurlResult unknown = Rpc({{"jsonrpc", "2.0"}, {"id", 7}, {"method", "tools/list"}},
                           {"Mcp-Session-Id: " + std::string(32, '0'), session[1]});
  EXPECT_EQ(unknown.http.status, 404) << unknown.Describe();

  // DELETE ends the session (204); afterwards the session is unknown (404), and so is a second DELETE.
  CurlResult del = CurlTcp("DELETE", "/mcp", "", {session[0]});
  EXPECT_EQ(del.http.status, 204) << del.Describe();
  CurlResult after = Rpc({{"jsonrpc", "2.0"}, {"id", 8}, {"method", "tools/list"}}, session);
  EXPECT_EQ(after.http.status, 404) << after.Describe();
  EXPECT_EQ(CurlTcp("DELETE", "/mcp", "", {session[0]}).http.status, 404);

  // The stateless revision (2026-07-28): no session; version in the header and in _meta.
  json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
               {"io.modelcontextprotocol/clientCapabilities", json::object()}};
  CurlResult discover =
      Rpc({{"jsonrpc", "2.0"}, {"id", 10}, {"method", "server/discover"}, {"params", {{"_meta", meta}}}},
          {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: server/discover"});
  EXPECT_EQ(discover.http.status, 200) << discover.Describe();
  EXPECT_EQ(discover.http.j["result"]["supportedVersions"], json({"2026-07-28"})) << discover.Describe();
  EXPECT_TRUE(discover.http.Header("mcp-session-id").empty()) << "stateless requests get no session";
  CurlResult stateless_call =
      Rpc({{"jsonrpc", "2.0"},
           {"id", 11},
           {"method", "tools/call"},
           {"params", {{"name", "sandbox_list"}, {"arguments", json::object()}, {"_meta", meta}}}},
          {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: sandbox_list"});
  EXPECT_EQ(stateless_call.http.status, 200) << stateless_call.Describe();
  EXPECT_EQ(stateless_call.http.j["result"]["structuredContent"], json({{"sandboxes", json::array()}}))
      << stateless_call.Describe();
  EXPECT_EQ(stateless_call.http.j["result"]["resultType"], "complete") << stateless_call.Describe();
  CurlResult mismatch = Rpc({{"jsonrpc", "2.0"}, {"id", 12}, {"method", "tools/list"}, {"params", {{"_meta", meta}}}},
                            {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call"});
  EXPECT_EQ(mismatch.http.status, 400) << "Mcp-Method must match the body's method: " << mismatch.Describe();
}

// Over 2026-07-28 a destructive call is approved by calling again: the first call's result asks (input_required),
// the second carries the person's answer and the state it was given; a state answers one call only.
TEST_F(McpTest, StatelessApprovalByCallingAgainWithCurl) {
  const std::string box = CreateSandbox();
  int id = 20;
  auto remove = [&](const json& state, const json& answer) {
    json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                 {"io.modelcontextprotocol/clientCapabilities", {{"elicitation", json::object()}}}};
    json params = {{"name", "sandbox_remove"}, {"arguments", {{"sandbox", box}}}, {"_meta", meta}};
    if (!state.is_null()) params["requestState"] = state;
    if (!answer.is_null()) params["inputResponses"] = {{"approval", answer}};
    CurlResult r = Rpc({{"jsonrpc", "2.0"}, {"id", ++id}, {"method", "tools/call"}, {"params", params}},
                       {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: sandbox_remove"});
    EXPECT_EQ(r.http.status, 200) << r.Describe();
    EXPECT_EQ(r.http.j["id"], id) << r.Describe();
    return r.http.j["result"];
  };
  auto ask = [&] {
    json asked = remove(nullptr, nullptr);
    EXPECT_EQ(asked["resultType"], "input_required") << asked.dump();
    EXPECT_EQ(asked["inputRequests"]["approval"]["method"], "elicitation/create") << asked.dump();
    EXPECT_EQ(asked["inputRequests"]["approval"]["params"]["requestedSchema"]["required"], json({"approve"}));
    return asked.value("requestState", "");
  };
  const json accept = {{"action", "accept"}, {"content", {{"approve", true}}}};

  json declined = remove(ask(), {{"action", "decline"}});
  EXPECT_EQ(declined["isError"], true) << declined.dump();
  EXPECT_EQ(declined["content"][0]["text"],
            "forbidden: sandbox_remove was not approved: the person asked did not approve it");
  EXPECT_EQ(MustTool("sandbox_get", {{"sandbox", box}})["id"], box) << "a declined removal removed the sandbox";

  const std::string state = ask();
  json removed = remove(state, accept);
  EXPECT_EQ(removed["resultType"], "complete") << removed.dump();
  EXPECT_EQ(removed["isError"], false) << removed.dump();
  EXPECT_EQ(removed["structuredContent"], json({{"sandbox", box}, {"removed", true}})) << removed.dump();
  EXPECT_EQ(MustTool("sandbox_list", json::object())["sandboxes"], json::array());

  json replayed = remove(state, accept);
  EXPECT_EQ(replayed["isError"], true) << replayed.dump();
  EXPECT_EQ(replayed["content"][0]["text"],
            "forbidden: requestState was used already: an approval answers one call; call the tool again without it "
            "to be asked anew");
}

}  // namespace
}  // namespace isb::e2e
