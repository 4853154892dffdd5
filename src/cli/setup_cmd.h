// `isb setup`: the first platform admin and their first API token in one step, on the daemon's host.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/client.h"

namespace isb::cli {

void AddSetupCommand(CLI::App& app, int* exit_code);

// What `isb setup --url` says before it sends the setup token and a password to `endpoint` over plain HTTP: "" for
// a unix socket, loopback or a tailnet address (the tailnet encrypts), else a warning naming the endpoint.
std::string PlainHttpWarning(const Endpoint& endpoint);

// What `isb setup` says after making `user`, on stderr: the commands that work next, with `token` for the daemon at
// `url` (its HTTP address) and `socket` (its unix socket; "" after a setup from elsewhere, which names none).
std::string SetupNextSteps(const std::string& user, const std::string& token, const std::string& url,
                           const std::string& socket);

}  // namespace isb::cli
