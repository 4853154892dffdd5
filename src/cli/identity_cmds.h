// `isb whoami`, `isb user create|ls`, `isb token create|ls|revoke`: callers and credentials, through the daemon's
// identity tools (on the unix socket the caller is the host).
#pragma once

#include <CLI/CLI.hpp>

namespace isb::cli {

void AddIdentityCommands(CLI::App& app, int* exit_code);

}  // namespace isb::cli
