// The sandbox commands of the CLI (create, exec, ls, inspect, rm, stop, start, cp): clients of the daemon's REST API.
#pragma once

#include <CLI/CLI.hpp>

namespace isb::cli {

void AddSandboxCommands(CLI::App& app, int* exit_code);

}  // namespace isb::cli
