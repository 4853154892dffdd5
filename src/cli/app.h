// The isb command line as one CLI11 app: every command and its flags, for main.cc to parse and isb_docs to describe.
#pragma once

#include <CLI/CLI.hpp>

namespace isb::cli {

// The app's description, as `isb --help` prints it.
inline constexpr const char* kAppDescription =
    "isb: run other people's and agents' code in sandboxes on your own Linux machines";

// Adds every command to `app` (made with kAppDescription). A command that runs sets *exit_code.
void BuildApp(CLI::App& app, int* exit_code);

}  // namespace isb::cli
