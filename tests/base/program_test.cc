// RunProgram: a host program's input, output, status and time limit.
#include "base/program.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <string>

namespace isb {
namespace {

using namespace std::chrono_literals;

// No child of this process is left, running or unwaited for.
void ExpectNoChildLeft() {
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

// cat writes its input back as it reads it: a mebibyte in, read while written, comes back whole (written whole
// before any of it was read, both pipes would fill and neither side go on).
TEST(RunProgramTest, InputAndOutputGoAtOnceSoAProgramThatAnswersAsItReadsCannotStall) {
  std::string input;
  for (int i = 0; input.size() < (1u << 20); ++i) input += "line " + std::to_string(i) + "\n";
  auto r = RunProgram({"cat"}, input, 2u << 20, 30s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->ok());
  input.pop_back();  // the trailing newline is trimmed
  EXPECT_EQ(r->stdout_text.size(), input.size());
  EXPECT_EQ(r->stdout_text, input);
  ExpectNoChildLeft();
}

TEST(RunProgramTest, StatusAndStderrComeBackAndStdoutIsKeptOnlyUpToItsLimit) {
  auto r = RunProgram({"sh", "-c", "printf 0123456789; echo oops >&2; echo >&2; exit 3"}, {}, 4);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->ok());
  EXPECT_TRUE(WIFEXITED(r->status));
  EXPECT_EQ(WEXITSTATUS(r->status), 3);
  EXPECT_EQ(r->stdout_text, "0123");
  EXPECT_EQ(r->stderr_text, "oops");
  ExpectNoChildLeft();
}

TEST(RunProgramTest, AProgramPastItsTimeIsKilledAndWaitedFor) {
  const auto started = std::chrono::steady_clock::now();
  auto r = RunProgram({"sleep", "30"}, {}, 0, 200ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTimeout);
  EXPECT_EQ(r.error().message, "sleep did not finish within 200 ms and was killed");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 20s);
  ExpectNoChildLeft();
}

// Its output closed, it still runs: the time limit holds there too.
TEST(RunProgramTest, AProgramThatClosedItsOutputButRunsOnIsKilledAtItsTime) {
  auto r = RunProgram({"sh", "-c", "exec >/dev/null 2>&1 </dev/null; exec sleep 30"}, {}, 0, 300ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTimeout);
  EXPECT_EQ(r.error().message, "sh did not finish within 300 ms and was killed");
  ExpectNoChildLeft();
}

// A program that keeps its output busy does not keep poll from timing out.
TEST(RunProgramTest, AProgramFloodingItsOutputIsKilledAtItsTime) {
  const auto started = std::chrono::steady_clock::now();
  auto r = RunProgram({"sh", "-c", "exec yes >&2"}, {}, 0, 200ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "sh did not finish within 200 ms and was killed");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  ExpectNoChildLeft();
}

// One that exits without reading its input: the write's SIGPIPE is taken back, though this test binary leaves the
// signal fatal, and none is left pending; over and over, since whether the write comes before the exit is a race.
TEST(RunProgramTest, AProgramThatLeavesItsInputUnreadRaisesNoSigpipe) {
  const std::string input(1 << 20, 'x');
  for (int i = 0; i < 50; ++i) {
    auto r = RunProgram({"true"}, input, 0, 10s);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r->ok());
  }
  sigset_t pending;
  sigemptyset(&pending);
  ASSERT_EQ(::sigpending(&pending), 0);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);
  ExpectNoChildLeft();
}

TEST(RunProgramTest, AProgramThatCannotStartIsAnError) {
  auto r = RunProgram({"isb-no-such-program"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err, ENOENT);
  EXPECT_EQ(r.error().message, "start isb-no-such-program: No such file or directory");
  ExpectNoChildLeft();
}

}  // namespace
}  // namespace isb
