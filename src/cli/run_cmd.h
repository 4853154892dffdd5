// `isb run`: one command in a fresh sandbox.
#pragma once

#include <CLI/CLI.hpp>

namespace isb::cli {

// Registers `run` on `app`; the callback stores the exit status in *exit_code.
void AddRunCommand(CLI::App& app, int* exit_code);

}  // namespace isb::cli
