// The isb binary: every command of the CLI.
#include <CLI/CLI.hpp>

#include "cli/run_cmd.h"

int main(int argc, char** argv) {
  CLI::App app{"isb: run other people's and agents' code in sandboxes on your own Linux machines"};
  app.require_subcommand(1);
  int exit_code = 0;
  isb::cli::AddRunCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return exit_code;
}
