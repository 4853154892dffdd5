// `isb logs SANDBOX`: the output of the sandbox's detached commands (`isb exec -d`), read from sandbox_logs.
#pragma once

#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace isb::cli {

void AddLogsCommand(CLI::App& app, int* exit_code);

// How one exit chunk of sandbox_logs is told on stderr: "isb: detached command 1 exited with code 0".
std::string ExitLine(const nlohmann::json& chunk);

}  // namespace isb::cli
