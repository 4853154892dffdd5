// `isb serve`: the daemon.
#pragma once

#include <CLI/CLI.hpp>

namespace isb::cli {

void AddServeCommand(CLI::App& app, int* exit_code);

}  // namespace isb::cli
