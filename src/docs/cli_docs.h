// docs/cli.md: every command and subcommand of a CLI11 app with its arguments and flags, from their definitions.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace isb::docs {

// The whole page for `app` (the isb binary's, as BuildApp makes it): an index, then a section per command.
std::string CliMarkdown(CLI::App& app, const std::string& program);

}  // namespace isb::docs
