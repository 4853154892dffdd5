// What isb exec adds on stderr for exit codes that do not explain themselves, and the input checks of isb's own
// that the daemon's messages would say less well.
#include "cli/exec_outcome.h"

#include <gtest/gtest.h>

#include "cli/run_isb.h"
#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {
namespace {

using testing::CmdRun;
using testing::JsonAnswer;
using testing::RunIsb;
using testing::SeenRequest;
using testing::SendAll;
using testing::TestServer;

json Result(int code, int signal = 0, bool timed_out = false) {
  return {{"exit_code", code}, {"signal", signal}, {"timed_out", timed_out}};
}

TEST(ExplainExitCodeTest, NotFoundNotExecutableAndKilledAreSaid) {
  EXPECT_EQ(ExplainExitCode(Result(127), {"pyhton3", "-V"}, false),
            "isb: exit code 127: 'pyhton3' was not found in the sandbox (not installed, or not on its PATH; give its "
            "full path)\n");
  EXPECT_EQ(ExplainExitCode(Result(126), {"/etc"}, false),
            "isb: exit code 126: '/etc' was found but could not be run (not executable, a directory, or a script "
            "whose interpreter is missing)\n");
  EXPECT_EQ(ExplainExitCode(Result(137, 9), {"big"}, false),
            "isb: exit code 137: the command was killed by SIGKILL, as the OOM killer does when the sandbox reaches "
            "its memory limit (isb inspect shows its memory; isb create --memory gives more)\n");
  EXPECT_EQ(ExplainExitCode(Result(143, 15), {"x"}, false), "isb: exit code 143: the command was killed by SIGTERM\n");
}

TEST(ExplainExitCodeTest, TheDaemonsOomKilledDecidesWhetherTheOomKillerIsNamed) {
  json oom = Result(137);
  oom["oom_killed"] = true;
  EXPECT_EQ(ExplainExitCode(oom, {"big"}, true),
            "isb: exit code 137: the OOM killer killed the command: the sandbox reached its memory limit (isb "
            "inspect shows its memory; isb create --memory gives more)\n")
      << "said even when the shell printed 'Killed'";
  json killed = Result(137, 9);
  killed["oom_killed"] = false;
  EXPECT_EQ(ExplainExitCode(killed, {"sh"}, false), "isb: exit code 137: the command was killed by SIGKILL\n");
}

TEST(ExplainExitCodeTest, SilentWhereTheCommandOrATimeoutAlreadySaidIt) {
  EXPECT_EQ(ExplainExitCode(Result(127), {"sh", "-c", "nope"}, true), "") << "sh said 'nope: not found' itself";
  EXPECT_EQ(ExplainExitCode(Result(137, 9, true), {"sleep"}, false), "") << "the timeout is said on its own";
  EXPECT_EQ(ExplainExitCode(Result(0), {"true"}, false), "");
  EXPECT_EQ(ExplainExitCode(Result(1), {"false"}, false), "");
}

TEST(ExecCommandTest, ExitCode127IsExplainedOnStderr) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
            "event: result\ndata: {\"result\":{\"exit_code\":127,\"signal\":0,\"timed_out\":false}}\n\n");
  });
  CmdRun r = RunIsb({"exec", "--socket", server.socket_path(), "web", "--", "pyhton3"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "isb: exit code 127: 'pyhton3' was not found in the sandbox (not installed, or not on its PATH; "
            "give its full path)\n");
}

TEST(EgressFlagTest, AUrlIsRefusedNamingTheHostToGive) {
  CreateFlags f;
  f.egress = {"https://pypi.org/simple/"};
  auto in = CreateInput(f);
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.error().message,
            "--egress 'https://pypi.org/simple/': give a host name, not a URL: pypi.org (port 443 is the default)");
  f.egress = {"http://localhost:8080"};
  EXPECT_EQ(CreateInput(f).error().message,
            "--egress 'http://localhost:8080': give a host name, not a URL: localhost:8080");
}

TEST(EgressFlagTest, ACommaTypedForADotIsRefusedNotSplitIntoTwoNames) {
  CreateFlags f;
  f.egress = {"pypi,org"};
  auto in = CreateInput(f);
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.error().message,
            "--egress 'pypi,org': a comma separates entries, and 'pypi' alone is no host name; did you mean pypi.org?");
  f.egress = {"pypi.org,files.pythonhosted.org"};
  ASSERT_TRUE(CreateInput(f).ok());
  EXPECT_EQ((*CreateInput(f))["egress"], json({"pypi.org", "files.pythonhosted.org"}));
}

TEST(ExtendCommandTest, TooLongIsSaidInTheUnitGiven) {
  auto in = ExtendInput("web", "60d");
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.error().message, "extend 60d: a sandbox expires at most 30d from now; give at most 30d");
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, JsonAnswer(
                    400, R"({"error":"invalid_argument","message":"by: a sandbox expires at most 30 days from now"})"));
  });
  CmdRun r = RunIsb({"extend", "--socket", server.socket_path(), "web", "29d"});
  EXPECT_EQ(r.exit_code, kExitRefused);
  EXPECT_EQ(r.err, "isb: extend 29d: a sandbox expires at most 30 days from now\n");
}

}  // namespace
}  // namespace isb::cli
