// isb setup against a scripted daemon: the calls it makes, what it prints, and when it refuses.
#include "cli/setup_cmd.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/fd.h"
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
    if (path == "/api/v1/tools/user_list")
      SendAll(fd, JsonAnswer(200, json{{"result", {{"users", users}}}}.dump()));
    else if (path == "/api/v1/tools/user_create")
      SendAll(fd, JsonAnswer(200, R"({"result":{"id":1,"name":"alice","platform_admin":true}})"));
    else if (path == "/api/v1/tools/member_add")
      SendAll(fd, JsonAnswer(200, R"({"result":{"user":"alice","role":"owner"}})"));
    else
      SendAll(fd, JsonAnswer(200, R"({"result":{"id":3,"token":"isb_tok_abc"}})"));
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
  EXPECT_EQ(json::parse(BodyOf(seen[1])), (json{{"name", "alice"}, {"first_admin", true}}));
  EXPECT_EQ(PathOf(seen[2]), "/api/v1/tools/member_add");
  EXPECT_EQ(json::parse(BodyOf(seen[2])), (json{{"user", "alice"}, {"role", "owner"}}));
  EXPECT_NE(seen[2].head.find("\r\nX-Isb-Org: default\r\n"), std::string::npos) << seen[2].head;
  EXPECT_EQ(PathOf(seen[3]), "/api/v1/tools/token_create");
  EXPECT_EQ(json::parse(BodyOf(seen[3])), (json{{"name", "alice-cli"}, {"user", "alice"}}));
}

TEST(SetupCommandTest, NextStepsNameTheTokenTheUrlAndTheSocket) {
  EXPECT_EQ(
      SetupNextSteps("alice", "isb_tok_T", "http://127.0.0.1:9000", "/s/isb.sock"),
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
  EXPECT_EQ(r.err,
            "isb: a platform admin exists already (root); mint another token with: isb token create "
            "--for-user NAME TOKEN_NAME\n");
  EXPECT_EQ(server.requests().size(), 1u) << "nothing is made";
}

TEST(SetupCommandTest, ASecondSetupThatLostTheRaceIsRefusedAsIfAnAdminHadBeenThere) {
  // user_list saw no admin, but another setup made one before this one's user_create: the daemon refused it.
  int lists = 0;
  TestServer server([&lists](int fd, const SeenRequest& req) {
    if (PathOf(req) == "/api/v1/tools/user_list") {
      json users = ++lists == 1 ? json::array()
                                : json::array({{{"name", "root"}, {"platform_admin", true}, {"disabled", false}}});
      SendAll(fd, JsonAnswer(200, json{{"result", {{"users", users}}}}.dump()));
    } else {
      SendAll(fd, JsonAnswer(409, R"({"error":"conflict","message":"first_admin: a platform admin exists already"})"));
    }
  });
  CmdRun r = RunIsb({"setup", "--socket", server.socket_path(), "alice"}, {AddSetupCommand});
  EXPECT_EQ(r.exit_code, kExitRefused);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "isb: a platform admin exists already (root); mint another token with: isb token create "
            "--for-user NAME TOKEN_NAME\n");
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(PathOf(seen[1]), "/api/v1/tools/user_create");
}

TEST(SetupCommandTest, OverTcpItNeedsTheSetupTokenFromAFileOrStdinAndAPassword) {
  CmdRun r = RunIsb({"setup", "--url", "http://127.0.0.1:1"}, {AddSetupCommand});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_EQ(r.err,
            "isb: isb setup --url needs the setup token the daemon wrote (<state>/setup-token on its host): "
            "--setup-token-file FILE, or - to read it from stdin; and --password-stdin\n");
  r = RunIsb({"setup", "--url", "http://127.0.0.1:1", "--setup-token-file", "/dev/null"}, {AddSetupCommand});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_EQ(r.err, "isb: isb setup --url needs --password-stdin: the setup route makes an account that signs in\n");
  r = RunIsb({"setup", "--socket", "/nonexistent/isb.sock", "--setup-token-file", "/dev/null"}, {AddSetupCommand});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_EQ(r.err, "isb: --setup-token-file is for --url; over the unix socket the host needs no setup token\n");
}

TEST(SetupCommandTest, OverAUrlTheSetupRouteTakesTheTokenAndPasswordFromStdinAndItsTokenIsPrinted) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, JsonAnswer(200, R"({"user":"alice","platform_admin":true,"token":"isb_tok_remote","token_id":1})"));
  });
  Pipe typed = MakePipe().value();
  const std::string lines = "isb_setup_xyz\r\na long password here\n";
  ASSERT_EQ(::write(typed.write.get(), lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
  typed.write.Reset();
  Fd saved(::dup(STDIN_FILENO));
  ASSERT_EQ(::dup2(typed.read.get(), STDIN_FILENO), STDIN_FILENO);
  std::cin.clear();
  std::clearerr(stdin);
  CmdRun r =
      RunIsb({"setup", "--url", "unix:" + server.socket_path(), "--setup-token-file", "-", "--password-stdin", "alice"},
             {AddSetupCommand}, /*keep_stdin=*/true);
  ::dup2(saved.get(), STDIN_FILENO);
  std::cin.clear();
  std::clearerr(stdin);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "isb_tok_remote\n");
  EXPECT_EQ(r.err, SetupNextSteps("alice", "isb_tok_remote", "unix:" + server.socket_path(), ""));
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(PathOf(seen[0]), "/api/v1/auth/setup");
  EXPECT_EQ(json::parse(BodyOf(seen[0])), (json{{"setup_token", "isb_setup_xyz"},
                                                {"user", "alice"},
                                                {"password", "a long password here"},
                                                {"token_name", "alice-cli"}}));
  EXPECT_EQ(seen[0].head.find("Authorization"), std::string::npos) << "the setup token is the credential";
}

TEST(SetupCommandTest, ASetupOverPlainHttpBeyondLoopbackAndTailnetIsWarnedAbout) {
  for (const char* quiet : {"http://127.0.0.1:8092", "http://localhost:8092", "http://[::1]:8092",
                            "http://100.101.102.103:8092", "http://[fd7a:115c:a1e0::1]:8092", "unix:/run/isb.sock"}) {
    auto endpoint = ParseUrl(quiet);
    ASSERT_TRUE(endpoint.ok()) << quiet;
    EXPECT_EQ(PlainHttpWarning(*endpoint), "") << quiet;
  }
  auto lan = ParseUrl("http://192.168.1.20:8092");
  ASSERT_TRUE(lan.ok());
  EXPECT_EQ(PlainHttpWarning(*lan),
            "isb: warning: the setup token and the new admin's password go to http://192.168.1.20:8092 over plain "
            "HTTP, which anyone on the way can read; run isb setup on the daemon's host, or reach it over loopback (an "
            "SSH tunnel) or a tailnet");
  auto outside_tailnet = ParseUrl("http://100.128.0.1:8092");  // just past 100.64.0.0/10
  ASSERT_TRUE(outside_tailnet.ok());
  EXPECT_NE(PlainHttpWarning(*outside_tailnet), "");
}

TEST(SetupCommandTest, NextStepsFromElsewhereLeaveTheSocketOut) {
  const std::string steps = SetupNextSteps("alice", "isb_tok_T", "http://isb.example:8092", "");
  EXPECT_EQ(steps.find("--socket"), std::string::npos) << steps;
  EXPECT_TRUE(steps.ends_with("\"env\": {\"ISB_TOKEN\": \"isb_tok_T\"}}\n")) << steps;
}

}  // namespace
}  // namespace isb::cli
