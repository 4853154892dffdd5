// isb logs: how a detached command's end is told.
#include "cli/logs_cmd.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/base64.h"
#include "cli/run_isb.h"

namespace isb::cli {
namespace {

using nlohmann::json;
using testing::CmdRun;
using testing::JsonAnswer;
using testing::RunIsb;
using testing::SendAll;
using testing::SeenRequest;
using testing::TestServer;

// The daemon's sandbox_logs answer (base64, no limit) over a fixed log whose chunks carry their output as "data":
// what lies at or after `after`, a chunk it falls inside cut to its rest.
std::string LogsAnswer(const std::vector<json>& log, uint64_t end, uint64_t after) {
  json chunks = json::array();
  for (json c : log) {
    const uint64_t cursor = c["cursor"].get<uint64_t>();
    if (c["stream"] == "exit") {
      if (cursor >= after) chunks.push_back(c);
      continue;
    }
    std::string data = c["data"].get<std::string>();
    c.erase("data");
    if (cursor + data.size() <= after) continue;
    if (cursor < after) {
      data.erase(0, after - cursor);
      c["cursor"] = after;
    }
    c["data_base64"] = Base64Encode(data);
    chunks.push_back(c);
  }
  json r = {{"chunks", chunks}, {"next", end}, {"start", 0}, {"end", end}, {"dropped", 0}, {"running", 0}};
  return JsonAnswer(200, json{{"result", r}}.dump());
}

// A daemon whose sandbox "sb" has `log`; runs `isb logs ARGS` against it.
class LogsCommandTest : public ::testing::Test {
 protected:
  CmdRun Logs(std::vector<std::string> args) {
    args.insert(args.begin(), {"--socket", server.socket_path(), "logs"});
    return RunIsb(args, {AddLogsCommand});
  }

  std::vector<json> log;
  uint64_t end = 0;
  TestServer server{[this](int fd, const SeenRequest& req) {
    SendAll(fd, LogsAnswer(log, end, json::parse(req.body).value("after", uint64_t{0})));
  }};
};

// "abc", its exit, "de" on stderr, its exit: 7 positions, 5 output bytes.
TEST_F(LogsCommandTest, TailCountsOnlyOutputBytesAndTellsTheExitsAfterThem) {
  log = {{{"cursor", 0}, {"log_id", 1}, {"stream", "stdout"}, {"data", "abc"}},
         {{"cursor", 3}, {"log_id", 1}, {"stream", "exit"}, {"exit_code", 0}, {"signal", 0}},
         {{"cursor", 4}, {"log_id", 2}, {"stream", "stderr"}, {"data", "de"}},
         {{"cursor", 6}, {"log_id", 2}, {"stream", "exit"}, {"exit_code", 3}, {"signal", 0}}};
  end = 7;
  const std::string exit1 = "isb: detached command 1 exited with code 0\n";
  const std::string exit2 = "isb: detached command 2 exited with code 3\n";
  CmdRun r = Logs({"--tail", "3", "sb"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "c");
  EXPECT_EQ(r.err, exit1 + "de" + exit2);
  r = Logs({"--tail", "2", "sb"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "de" + exit2);
  r = Logs({"--tail", "5", "sb"});
  EXPECT_EQ(r.out, "abc");
  EXPECT_EQ(r.err, exit1 + "de" + exit2);
  r = Logs({"--tail", "64K", "sb"});
  EXPECT_EQ(r.out, "abc");
  EXPECT_EQ(r.err, exit1 + "de" + exit2);
  r = Logs({"--tail", "0", "sb"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
}

TEST(ExitLine, TellsTheCodeTheSignalOrWhyThereIsNone) {
  EXPECT_EQ(ExitLine(json{{"stream", "exit"}, {"log_id", 1}, {"exit_code", 0}, {"signal", 0}}),
            "isb: detached command 1 exited with code 0\n");
  EXPECT_EQ(ExitLine(json{{"stream", "exit"}, {"log_id", 3}, {"exit_code", 137}, {"signal", 9}}),
            "isb: detached command 3 was killed by signal 9 (exit code 137)\n");
  EXPECT_EQ(ExitLine(json{{"stream", "exit"}, {"log_id", 2}, {"exit_code", -1}, {"signal", 0},
                          {"error", "the sandbox stopped during the exec"}}),
            "isb: detached command 2 ended: the sandbox stopped during the exec\n");
  EXPECT_EQ(ExitLine(json{{"stream", "exit"}, {"log_id", 4}, {"exit_code", 124}, {"signal", 9}, {"timed_out", true}}),
            "isb: detached command 4 timed out and was killed (exit code 124)\n");
}

}  // namespace
}  // namespace isb::cli
