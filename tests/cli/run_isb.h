// Whole CLI commands in the test process: parsed by CLI11 as main() parses them, stdout and stderr captured.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "cli/test_server.h"

namespace isb::cli::testing {

struct CmdRun {
  int exit_code = -1;
  std::string out, err;
};

using AddCommands = std::function<void(CLI::App&, int*)>;

// Parses and runs `args` (without "isb") with the sandbox commands and `more`, capturing stdout and stderr. Their
// stdin is /dev/null unless `keep_stdin` (a test that made stdin a pipe of its own to type into).
CmdRun RunIsb(std::vector<std::string> args, const std::vector<AddCommands>& more = {}, bool keep_stdin = false);

// The request target ("/api/v1/tools/x?stream=1") and body of a request the test server saw.
std::string PathOf(const SeenRequest& r);
std::string BodyOf(const SeenRequest& r);

}  // namespace isb::cli::testing
