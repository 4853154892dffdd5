// isb logs: how a detached command's end is told.
#include "cli/logs_cmd.h"

#include <gtest/gtest.h>

namespace isb::cli {
namespace {

using nlohmann::json;

TEST(ExitLine, TellsTheCodeTheSignalOrWhyThereIsNone) {
  EXPECT_EQ(ExitLine(json{{"stream", "exit"}, {"log_id", 1}, {"exit_code", 0}, {"signal", 0}}),
            "isb: detached command 1 exited with code 0\n");
  EXPECT_EQ(ExitLine(json{{"stream", "exit"}, {"log_id", 3}, {"exit_code", 137}, {"signal", 9}}),
            "isb: detached command 3 was killed by signal 9 (exit code 137)\n");
  EXPECT_EQ(ExitLine(json{{"stream", "exit"}, {"log_id", 2}, {"exit_code", -1}, {"signal", 0},
                          {"error", "the sandbox stopped during the exec"}}),
            "isb: detached command 2 ended: the sandbox stopped during the exec\n");
}

}  // namespace
}  // namespace isb::cli
