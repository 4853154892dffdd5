// The exec request's one validator: each refusal exact, the defaults stated once.
#include "spec/exec_request.h"

#include <gtest/gtest.h>

namespace isb::spec {
namespace {

std::string Refusal(const ExecRequest& r) {
  Status st = Validate(r);
  if (st.ok()) return "accepted";
  EXPECT_EQ(st.error().code, Code::kInvalidArgument);
  return st.error().message;
}

ExecRequest Command(std::vector<std::string> argv) {
  ExecRequest r;
  r.argv = std::move(argv);
  return r;
}

TEST(ExecRequestTest, ACommandIsNamedOnceWithOneWording) {
  EXPECT_EQ(Refusal(Command({"true"})), "accepted");
  EXPECT_EQ(Refusal(Command({})), "argv[0]: must name a command");
  EXPECT_EQ(Refusal(Command({""})), "argv[0]: must name a command");
  EXPECT_EQ(Refusal(Command({"echo", std::string("a\0b", 3)})), "argv[1]: must not contain a NUL character");
}

TEST(ExecRequestTest, DefaultsAndBounds) {
  ExecRequest r = Command({"true"});
  EXPECT_EQ(r.timeout, std::chrono::seconds(60));
  EXPECT_EQ(r.rows, 24);
  EXPECT_EQ(r.cols, 80);
  r.stdin_data.assign(kMaxStdinBytes, 'x');
  EXPECT_EQ(Refusal(r), "accepted");
  r.stdin_data.push_back('x');
  EXPECT_EQ(Refusal(r), "stdin: at most 1048576 bytes, got 1048577");
  r = Command({"true"});
  r.timeout = std::chrono::seconds(kMaxExecTimeoutS) + std::chrono::milliseconds(1);
  EXPECT_EQ(Refusal(r), "timeout: must be between 1ms and 15 minutes");
  r.timeout = std::chrono::milliseconds(0);
  EXPECT_EQ(Refusal(r), "timeout: must be between 1ms and 15 minutes");
  r = Command({"true"});
  r.env = {{"", "x"}};
  EXPECT_EQ(Refusal(r), "env: invalid variable name ''");
  r.env = {{"K", std::string("\0", 1)}};
  EXPECT_EQ(Refusal(r), "env.K: must not contain a NUL character");
  r = Command({"true"});
  r.workdir = "rel";
  EXPECT_EQ(Refusal(r), "workdir: must be an absolute path, got 'rel'");
  r.workdir = "/sys/fs";
  EXPECT_EQ(Refusal(r), "workdir: paths under /sys are refused");
  r.workdir = "/a/../b";
  EXPECT_EQ(Refusal(r), "workdir: must be in its normal form, '/b'");
}

TEST(ExecRequestTest, ATerminalHasOneToAThousandRowsAndColumns) {
  ExecRequest r = Command({"sh"});
  r.tty = true;
  EXPECT_EQ(Refusal(r), "accepted");
  for (auto [rows, cols] : {std::pair<uint16_t, uint16_t>{0, 80}, {24, 0}, {1001, 80}, {24, 1001}}) {
    r.rows = rows;
    r.cols = cols;
    EXPECT_EQ(Refusal(r), "rows, cols: a terminal has 1 to 1000 of each") << rows << "x" << cols;
  }
  EXPECT_EQ(ValidateTerminalSize(1000, 1).ok(), true);
}

TEST(ExecRequestTest, AnInteractiveCommandIsATerminalWithAnIdleLimitAndATimeoutOfUpToADay) {
  ExecRequest r = Command({"sh"});
  r.tty = true;
  r.idle_timeout = std::chrono::seconds(kDefaultTerminalIdleS);
  r.timeout = std::chrono::seconds(kMaxInteractiveTimeoutS);
  EXPECT_EQ(Refusal(r), "accepted");
  r.timeout += std::chrono::milliseconds(1);
  EXPECT_EQ(Refusal(r), "timeout: an interactive command's must be between its idle_timeout and 24 hours");
  r.timeout = std::chrono::seconds(kDefaultTerminalIdleS) - std::chrono::milliseconds(1);
  EXPECT_EQ(Refusal(r), "timeout: an interactive command's must be between its idle_timeout and 24 hours");
  r.timeout = std::chrono::seconds(kDefaultTerminalIdleS);
  EXPECT_EQ(Refusal(r), "accepted");
  r.idle_timeout = std::chrono::milliseconds(-1);
  EXPECT_EQ(Refusal(r), "idle_timeout: must be at least 1ms");
  r.idle_timeout = std::chrono::seconds(1);
  r.tty = false;
  EXPECT_EQ(Refusal(r), "idle_timeout: only with \"tty\": true (an interactive command is on a terminal)");
  // Without idle_timeout a terminal keeps the 15 minutes every command has.
  r.tty = true;
  r.idle_timeout = std::chrono::milliseconds(0);
  r.timeout = std::chrono::seconds(kMaxExecTimeoutS) + std::chrono::milliseconds(1);
  EXPECT_EQ(Refusal(r), "timeout: must be between 1ms and 15 minutes");
  EXPECT_EQ(kDefaultTerminalIdleS, 1800);
  EXPECT_EQ(kMaxInteractiveTimeoutS, 86400);
}

}  // namespace
}  // namespace isb::spec
