// isb logs: how a detached command's end is told.
#include "cli/logs_cmd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
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
using testing::SeenRequest;
using testing::SendAll;
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

TEST(ShowControls, WritesOutControlCharactersAndBytesThatAreNotUtf8) {
  EXPECT_EQ(ShowControls("plain text, \xE2\x82\xAC and tabs\there\n"), "plain text, \xE2\x82\xAC and tabs\there\n");
  EXPECT_EQ(ShowControls("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(ShowControls("\x1b]52;c;Zm9v\x07"), "\\x1b]52;c;Zm9v\\x07");  // a clipboard write
  EXPECT_EQ(ShowControls(std::string("nul\0del\x7f", 8)), "nul\\x00del\\x7f");
  EXPECT_EQ(ShowControls("line\r\nover\rwrite\r"), "line\r\nover\\x0dwrite\\x0d");
  EXPECT_EQ(ShowControls("c1 \xC2\x9B, \xC2\x85; not c1 \xC2\xA0"), "c1 \\u009b, \\u0085; not c1 \xC2\xA0");
  EXPECT_EQ(ShowControls("raw \x9B, cut \xE2\x82"), "raw \\x9b, cut \\xe2\\x82");
}

TEST(TerminalText, HoldsACharacterSplitBetweenPiecesUntilItsRestComes) {
  TerminalText t;
  EXPECT_EQ(t.Next("a\xE2"), "a");
  EXPECT_EQ(t.Next("\x82"), "");
  EXPECT_EQ(t.Next("\xAC\x1b"), "\xE2\x82\xAC\\x1b");
  EXPECT_EQ(t.Next("\xF0\x9F"), "");
  EXPECT_EQ(t.Rest(), "\\xf0\\x9f");  // it never came whole
  EXPECT_EQ(t.Rest(), "");
  // A CR at a piece's end waits to see whether an LF follows: CRLF passes, a lone CR is shown.
  EXPECT_EQ(t.Next("line\r"), "line");
  EXPECT_EQ(t.Next("\nnext\r"), "\r\nnext");
  EXPECT_EQ(t.Next("over"), "\\x0dover");
  EXPECT_EQ(t.Next("end\r"), "end");
  EXPECT_EQ(t.Rest(), "\\x0d");
}

TEST(ExitLine, TellsTheCodeTheSignalOrWhyThereIsNone) {
  EXPECT_EQ(ExitLine(json{{"stream", "exit"}, {"log_id", 1}, {"exit_code", 0}, {"signal", 0}}),
            "isb: detached command 1 exited with code 0\n");
  EXPECT_EQ(ExitLine(json{{"stream", "exit"}, {"log_id", 3}, {"exit_code", 137}, {"signal", 9}}),
            "isb: detached command 3 was killed by signal 9 (exit code 137)\n");
  EXPECT_EQ(ExitLine(json{{"stream", "exit"},
                          {"log_id", 2},
                          {"exit_code", -1},
                          {"signal", 0},
                          {"error", "the sandbox stopped during the exec"}}),
            "isb: detached command 2 ended: the sandbox stopped during the exec\n");
  EXPECT_EQ(ExitLine(json{{"stream", "exit"}, {"log_id", 4}, {"exit_code", 124}, {"signal", 9}, {"timed_out", true}}),
            "isb: detached command 4 timed out and was killed (exit code 124)\n");
}

// A sandbox's output with escape sequences, a carriage return, a character split between chunks and a byte that is
// not UTF-8.
class LogsOnATerminalTest : public LogsCommandTest {
 protected:
  void SetUp() override {
    log = {{{"cursor", 0}, {"log_id", 1}, {"stream", "stdout"}, {"data", "red \x1b[31mX\x1b[0m\r\n"}},
           {{"cursor", 16}, {"log_id", 1}, {"stream", "stdout"}, {"data", "a\xE2\x82"}},
           {{"cursor", 19}, {"log_id", 1}, {"stream", "stdout"}, {"data", "\xAC\r\xFF\n"}},
           {{"cursor", 23}, {"log_id", 1}, {"stream", "stderr"}, {"data", "\x1b]0;pwned\x07\n"}},
           {{"cursor", 34}, {"log_id", 1}, {"stream", "exit"}, {"exit_code", 0}, {"signal", 0}}};
    end = 35;
  }

  // Runs `isb logs ARGS` with its stdout and stderr on a terminal (a pty of the test's, raw so that it adds no
  // carriage returns); returns what the terminal received.
  std::string OnATerminal(std::vector<std::string> args) {
    const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    EXPECT_GE(master, 0);
    EXPECT_EQ(::grantpt(master), 0);
    EXPECT_EQ(::unlockpt(master), 0);
    const int tty = ::open(::ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
    EXPECT_GE(tty, 0);
    struct termios mode {};
    EXPECT_EQ(::tcgetattr(tty, &mode), 0);
    ::cfmakeraw(&mode);
    EXPECT_EQ(::tcsetattr(tty, TCSANOW, &mode), 0);
    std::fflush(stdout);
    std::fflush(stderr);
    const int saved_out = ::dup(STDOUT_FILENO), saved_err = ::dup(STDERR_FILENO);
    ::dup2(tty, STDOUT_FILENO);
    ::dup2(tty, STDERR_FILENO);
    CLI::App app{"isb"};
    int exit_code = -1;
    AddLogsCommand(app, &exit_code);
    args.insert(args.begin(), {"isb", "logs", "--socket", server.socket_path()});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    app.parse(static_cast<int>(argv.size()), argv.data());
    std::fflush(stdout);
    std::fflush(stderr);
    ::dup2(saved_out, STDOUT_FILENO);
    ::dup2(saved_err, STDERR_FILENO);
    ::close(saved_out);
    ::close(saved_err);
    ::close(tty);
    EXPECT_EQ(exit_code, 0);
    std::string shown;
    ::fcntl(master, F_SETFL, O_NONBLOCK);
    char buf[4096];
    for (ssize_t got; (got = ::read(master, buf, sizeof buf)) > 0;) shown.append(buf, static_cast<size_t>(got));
    ::close(master);
    return shown;
  }
};

TEST_F(LogsOnATerminalTest, ATerminalIsShownTheControlCharactersWrittenOut) {
  EXPECT_EQ(OnATerminal({"sb"}),
            "red \\x1b[31mX\\x1b[0m\r\na\xE2\x82\xAC\\x0d\\xff\n\\x1b]0;pwned\\x07\n"
            "isb: detached command 1 exited with code 0\n");
}

TEST_F(LogsOnATerminalTest, RawGivesATerminalTheBytesAsTheyAre) {
  EXPECT_EQ(OnATerminal({"--raw", "sb"}),
            "red \x1b[31mX\x1b[0m\r\na\xE2\x82\xAC\r\xFF\n\x1b]0;pwned\x07\n"
            "isb: detached command 1 exited with code 0\n");
}

TEST_F(LogsOnATerminalTest, APipeGetsTheBytesAsTheyAre) {
  CmdRun r = Logs({"sb"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "red \x1b[31mX\x1b[0m\r\na\xE2\x82\xAC\r\xFF\n");
  EXPECT_EQ(r.err, "\x1b]0;pwned\x07\nisb: detached command 1 exited with code 0\n");
}

}  // namespace
}  // namespace isb::cli
