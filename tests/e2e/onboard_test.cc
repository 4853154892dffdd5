// From a fresh state dir to a working token and an MCP client: `isb setup`, the setup route as one call, `isb mcp`
// driven by the official SDK's stdio client, and the CLI's messages against a real daemon.
#include <filesystem>
#include <regex>

#include "e2e/daemon_fixture.h"
#include "e2e/mcp_sdk.h"

namespace isb::e2e {
namespace {

class OnboardTest : public E2eTest {};

TEST_F(OnboardTest, IsbSetupOnAFreshStateDirGivesATokenThatWorksForARealCall) {
  ProcResult setup = Isb({"setup", "alice"});
  ExpectAudit("isb setup", {Unix("user_create"), Unix("member_add"), Unix("token_create")});
  ASSERT_EQ(setup.exit_status, 0) << setup.Describe();
  std::smatch m;
  ASSERT_TRUE(std::regex_match(setup.out, m, std::regex("(isb_tok_[A-Za-z0-9_-]{43})\n"))) << setup.Describe();
  const std::string token = m[1].str();
  const std::string url = "http://127.0.0.1:8092";
  EXPECT_EQ(
      setup.err,
      "isb: alice is a platform admin and owner of org default; the line above is their API token (shown "
      "once).\n"
      "Next, from any shell:\n"
      "  export ISB_URL=" +
          url + " ISB_TOKEN=" + token +
          "\n"
          "  isb create --name demo\n"
          "  isb exec demo -- uname -a\n"
          "  isb rm demo\n"
          "REST: curl -s -X POST -H \"Authorization: Bearer $ISB_TOKEN\" " +
          url +
          "/api/v1/tools/sandbox_list -d '{}'\n"
          "MCP:  " +
          url +
          "/mcp with the header \"Authorization: Bearer $ISB_TOKEN\", or a local client's config:\n"
          "      {\"command\": \"isb\", \"args\": [\"mcp\", \"--url\", \"" +
          url + "\"], \"env\": {\"ISB_TOKEN\": \"" + token +
          "\"}}\n"
          "      (not --socket " +
          socket_path() +
          ": over the socket isb mcp acts as the host, beyond every role, "
          "approval and tool policy)\n"
          "The web UI's sign-in needs a password; this account has none (isb setup --password-stdin sets one).\n");

  // The token, over TCP, as the printed commands use it: a real call, as alice.
  CurlResult who = CurlTcp("POST", "/api/v1/tools/whoami", "{}", {}, token);
  ASSERT_EQ(who.http.status, 200) << who.Describe();
  json answer = json::parse(who.http.body, nullptr, false);
  EXPECT_EQ(answer["result"]["platform_admin"], true) << who.Describe();
  EXPECT_EQ(answer["result"]["roles"]["default"], "owner") << who.Describe();
  ProcResult listed =
      RunProcess({ISB_BINARY, "ls", "--json"}, "", 60s, {"ISB_URL=" + base_url(), "ISB_TOKEN=" + token, "ISB_SOCKET"});
  EXPECT_EQ(listed.exit_status, 0) << listed.Describe();
  EXPECT_EQ(json::parse(listed.out, nullptr, false)["sandboxes"], json::array()) << listed.Describe();

  // Once is all: a second setup makes nothing and says how to get another token.
  ProcResult again = Isb({"setup", "bob"});
  EXPECT_EQ(again.exit_status, 1) << again.Describe();
  EXPECT_EQ(again.out, "");
  EXPECT_EQ(again.err,
            "isb: a platform admin exists already (alice); mint another token with: isb token create "
            "--for-user NAME TOKEN_NAME\n");
}

TEST_F(OnboardTest, TheSetupRouteIsOneCallWithNoHeaderButContentTypeAndItsTokenWorks) {
  const std::string setup_token = ReadFileOrEmpty(state_dir() + "/setup-token");
  ASSERT_EQ(setup_token.rfind("isb_setup_", 0), 0u) << "the daemon writes a setup token while there is no admin";
  const json body = {{"setup_token", setup_token.substr(0, setup_token.find_first_of("\r\n"))},
                     {"user", "carol"},
                     {"password", "a long password for carol"},
                     {"token_name", "laptop"}};
  // A page of another site, in a browser (which always sends Origin on a POST), is refused before anything is made.
  CurlResult foreign = CurlTcp("POST", "/api/v1/auth/setup", body.dump(),
                               {"Content-Type: application/json", "Origin: http://evil.example"}, "");
  EXPECT_EQ(foreign.http.status, 403) << foreign.Describe();
  EXPECT_EQ(json::parse(foreign.http.body, nullptr, false)["message"],
            "Origin 'http://evil.example' is not this daemon's")
      << foreign.Describe();
  CurlResult made = CurlTcp("POST", "/api/v1/auth/setup", body.dump(), {"Content-Type: application/json"}, "");
  // One row for the setup, its token with it; the refused page left none (turned away before the setup token was read).
  ExpectAudit("the setup route",
              {ExpectedRow{.action = "setup", .surface = "rest", .outcome = "ok", .actor_kind = "user", .org = ""}});
  ASSERT_EQ(made.http.status, 200) << made.Describe();
  json answer = json::parse(made.http.body, nullptr, false);
  EXPECT_EQ(answer["user"], "carol");
  EXPECT_EQ(answer["platform_admin"], true);
  ASSERT_TRUE(answer["token"].is_string()) << made.Describe();
  EXPECT_TRUE(std::regex_match(answer["token"].get<std::string>(), std::regex("isb_tok_[A-Za-z0-9_-]{43}")));
  EXPECT_EQ(made.http.Header("cache-control"), "no-store");
  CurlResult listed = CurlTcp("POST", "/api/v1/tools/sandbox_list", "{}", {}, answer["token"].get<std::string>());
  EXPECT_EQ(listed.http.status, 200) << listed.Describe();
}

TEST_F(OnboardTest, IsbSetupFromElsewhereTakesTheSetupTokenFromAFileAndUsesItUp) {
  const std::string token_file = state_dir() + "/setup-token";
  // From elsewhere: no --socket (the fixture's Isb adds one), nothing from the environment.
  ProcResult setup = RunProcess(
      {ISB_BINARY, "setup", "--url", base_url(), "--setup-token-file", token_file, "--password-stdin", "dana"},
      "a long password for dana\n", 60s, {"ISB_URL", "ISB_TOKEN", "ISB_SOCKET"});
  ExpectAudit("isb setup --url",
              {ExpectedRow{.action = "setup", .surface = "rest", .outcome = "ok", .actor_kind = "user", .org = ""}});
  ASSERT_EQ(setup.exit_status, 0) << setup.Describe();
  std::smatch m;
  ASSERT_TRUE(std::regex_match(setup.out, m, std::regex("(isb_tok_[A-Za-z0-9_-]{43})\n"))) << setup.Describe();
  EXPECT_EQ(setup.err.find("--socket"), std::string::npos)
      << "from elsewhere, no socket is named: " << setup.Describe();
  CurlResult who = CurlTcp("POST", "/api/v1/tools/whoami", "{}", {}, m[1].str());
  ASSERT_EQ(who.http.status, 200) << who.Describe();
  EXPECT_EQ(json::parse(who.http.body, nullptr, false)["result"]["platform_admin"], true) << who.Describe();
  EXPECT_EQ(json::parse(who.http.body, nullptr, false)["result"]["roles"]["default"], "owner") << who.Describe();
  EXPECT_FALSE(std::filesystem::exists(token_file)) << "the setup token is used up";
  ProcResult again = Isb({"setup", "erin"});
  EXPECT_EQ(again.exit_status, 1) << again.Describe();
  EXPECT_EQ(again.err,
            "isb: a platform admin exists already (dana); mint another token with: isb token create "
            "--for-user NAME TOKEN_NAME\n");
}

TEST_F(OnboardTest, IsbMcpDrivenByTheSdksStdioClientReachesTheSameToolsApprovalsAndAudit) {
  std::string why = EnsureSdk();
  ASSERT_TRUE(why.empty()) << why;
  ProcResult node =
      RunProcess({"node", NodeDir() + "/mcp_stdio_client.mjs", ISB_BINARY, "mcp", "--socket", socket_path()}, "", 90s);
  json obs = json::parse(node.out, nullptr, false);
  ASSERT_TRUE(obs.is_object()) << node.Describe();
  if (obs["id"].is_string()) Track(obs["id"].get<std::string>());
  ASSERT_EQ(obs["ok"], true) << "after steps " << obs["steps"].dump() << ": " << obs.value("error", "") << "\n"
                             << obs.value("stderr", "") << node.Describe();
  ExpectAudit(
      "isb mcp: create, exec, remove",
      {ExpectedRow{
           .action = "sandbox_create", .surface = "mcp", .outcome = "ok", .actor_kind = "superadmin", .org = "default"},
       ExpectedRow{
           .action = "sandbox_exec", .surface = "mcp", .outcome = "ok", .actor_kind = "superadmin", .org = "default"},
       ExpectedRow{.action = "sandbox_remove",
                   .surface = "mcp",
                   .outcome = "ok",
                   .actor_kind = "superadmin",
                   .org = "default"}});
  EXPECT_EQ(obs["serverInfo"]["name"], "isb");
  EXPECT_EQ(obs["toolCount"], kAllTools.size());
  EXPECT_EQ(obs["exec"], json({{"stdout", "via stdio"}, {"exit_code", 3}}));
  ASSERT_EQ(obs["asked"].size(), 1u) << obs.dump();
  EXPECT_EQ(obs["asked"][0], "Approve sandbox_remove {\"sandbox\":\"" + obs["id"].get<std::string>() +
                                 "\"}? Remove a sandbox: it cannot be undone.");
  EXPECT_EQ(obs["removed"], json({{"isError", false}, {"removed", true}}));
  EXPECT_EQ(obs["stderr"], "") << "the bridge said nothing of its own";
}

}  // namespace
}  // namespace isb::e2e
