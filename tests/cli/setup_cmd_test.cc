// isb setup against a scripted daemon: the calls it makes, what it prints, and when it refuses.
#include "cli/setup_cmd.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/run_isb.h"
#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {
namespace {

using testing::BodyOf;
using testing::CmdRun;
using testing::JsonAnswer;
using testing::PathOf;
using testing::RunIsb;
using testing::SeenRequest;
using testing::SendAll;
using testing::TestServer;

// A daemon with no platform admin yet: user_list answers `users`, the rest succeed.
TestServer::Responder FreshDaemon(json users) {
  return [users](int fd, const SeenRequest& req) {
    const std::string path = PathOf(req);
    if (path == "/api/v1/tools/user_list") SendAll(fd, JsonAnswer(200, json{{"result", {{"users", users}}}}.dump()));
    else if (path == "/api/v1/tools/user_create")
      SendAll(fd, JsonAnswer(200, R"({"result":{"id":1,"name":"alice","platform_admin":true}})"));
    else if (path == "/api/v1/tools/member_add")
      SendAll(fd, JsonAnswer(200, R"({"result":{"user":"alice","role":"owner"}})"));
    else SendAll(fd, JsonAnswer(200, R"({"result":{"id":3,"token":"isb_tok_abc"}})"));
  };
}

TEST(SetupCommandTest, MakesTheAdminOwnerOfDefaultAndPrintsTheirTokenAndWhatToDoNext) {
  TestServer server(FreshDaemon(json::array()));
  CmdRun r = RunIsb({"setup", "--socket", server.socket_path(), "alice"}, {AddSetupCommand});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "isb_tok_abc\n");
  EXPECT_EQ(r.err, SetupNextSteps("alice", "isb_tok_abc", "http://127.0.0.1:8092", server.socket_path()) +
                       "The web UI's sign-in needs a password; this account has none (isb setup --password-stdin "
                       "sets one).\n");
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(PathOf(seen[0]), "/api/v1/tools/user_list");
  EXPECT_EQ(PathOf(seen[1]), "/api/v1/tools/user_create");
  EXPECT_EQ(json::parse(BodyOf(seen[1])), (json{{"name", "alice"}, {"platform_admin", true}}));
  EXPECT_EQ(PathOf(seen[2]), "/api/v1/tools/member_add");
  EXPECT_EQ(json::parse(BodyOf(seen[2])), (json{{"user", "alice"}, {"role", "owner"}}));
  EXPECT_NE(seen[2].head.find("\r\nX-Isb-Org: default\r\n"), std::string::npos) << seen[2].head;
  EXPECT_EQ(PathOf(seen[3]), "/api/v1/tools/token_create");
  EXPECT_EQ(json::parse(BodyOf(seen[3])), (json{{"name", "alice-cli"}, {"user", "alice"}}));
}

TEST(SetupCommandTest, NextStepsNameTheTokenTheUrlAndTheSocket) {
  EXPECT_EQ(SetupNextSteps("alice", "isb_tok_T", "http://127.0.0.1:9000", "/s/isb.sock"),
            "isb: alice is a platform admin and owner of org default; the line above is their API token (shown "
            "once).\n"
            "Next, from any shell:\n"
            "  export ISB_URL=http://127.0.0.1:9000 ISB_TOKEN=isb_tok_T\n"
            "  isb create --name demo\n"
            "  isb exec demo -- uname -a\n"
            "  isb rm demo\n"
            "REST: curl -s -X POST -H \"Authorization: Bearer $ISB_TOKEN\" "
            "http://127.0.0.1:9000/api/v1/tools/sandbox_list -d '{}'\n"
            "MCP:  http://127.0.0.1:9000/mcp with the header \"Authorization: Bearer $ISB_TOKEN\", or a local "
            "client's config:\n"
            "      {\"command\": \"isb\", \"args\": [\"mcp\", \"--url\", \"http://127.0.0.1:9000\"], \"env\": "
            "{\"ISB_TOKEN\": \"isb_tok_T\"}}\n"
            "      (not --socket /s/isb.sock: over the socket isb mcp acts as the host, beyond every role, approval and "
            "tool policy)\n");
}

TEST(SetupCommandTest, StateDirNamesTheSocketUnderIt) {
  TestServer server(FreshDaemon(json::array()));
  // The test server's socket lives at <dir>/<name>; a state dir's is <dir>/api/isb.sock, which does not exist here.
  CmdRun r = RunIsb({"setup", "--state-dir", "/nonexistent-isb-state"}, {AddSetupCommand});
  EXPECT_EQ(r.exit_code, kExitIsbFailed);
  EXPECT_NE(r.err.find("/nonexistent-isb-state/api/isb.sock"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(SetupCommandTest, RefusesWhenAPlatformAdminExistsAndSaysHowToMintAnotherToken) {
  TestServer server(FreshDaemon(json::array({{{"name", "root"}, {"platform_admin", true}, {"disabled", false}},
                                             {{"name", "bob"}, {"platform_admin", false}, {"disabled", false}}})));
  CmdRun r = RunIsb({"setup", "--socket", server.socket_path()}, {AddSetupCommand});
  EXPECT_EQ(r.exit_code, kExitRefused);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "isb: a platform admin exists already (root); mint another token with: isb token create "
                   "--for-user NAME TOKEN_NAME\n");
  EXPECT_EQ(server.requests().size(), 1u) << "nothing is made";
}

TEST(SetupCommandTest, OverTcpItSaysToUseTheSocketOrTheSetupRoute) {
  CmdRun r = RunIsb({"setup", "--url", "http://127.0.0.1:1"}, {AddSetupCommand});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_EQ(r.err, "isb: isb setup runs on the daemon's host over its unix socket (--socket or --state-dir); from "
                   "elsewhere, POST /api/v1/auth/setup with the setup token, a user, a password and a token_name\n");
}

}  // namespace
}  // namespace isb::cli
