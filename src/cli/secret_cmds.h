// `isb secret create|set|get|ls|inspect|rm|import|recipient|reencrypt`: an org's secrets through the daemon's secret
// tools. A value never goes through argv: it comes from stdin or a file, and `get` writes it to stdout only.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "base/result.h"

namespace isb::cli {

void AddSecretCommands(CLI::App& app, int* exit_code);

// A value as read from stdin: the bytes, less one final newline ("\n" or "\r\n") as `echo` and editors add.
std::string ValueFromStdin(std::string bytes);

}  // namespace isb::cli
