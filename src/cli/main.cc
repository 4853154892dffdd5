// The isb binary: every command of the CLI.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/parse_errors.h"
#include "engine/contain.h"

int main(int argc, char** argv) {
  isb::engine::RememberProcessArgs(argc, argv);
  CLI::App app{isb::cli::kAppDescription};
  int exit_code = 0;
  isb::cli::BuildApp(app, &exit_code, argc > 1 ? argv[1] : "");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const std::string message = isb::cli::ParseErrorMessage(app, e, std::vector<std::string>(argv + 1, argv + argc));
    if (message.empty()) return app.exit(e);
    std::fprintf(stderr, "%s\n", message.c_str());
    // For `run`, a usage error is isb failing before the command ran: 125, like every other such failure.
    for (const auto* sub : app.get_subcommands())
      if (sub->get_name() == "run") return 125;
    return 2;
  } catch (const std::exception& e) {
    // A failure no command expected: isb failed, said so, and exits like any other failure of its own.
    std::fprintf(stderr, "isb: internal error: %s\n", e.what());
    return 125;
  }
  return exit_code;
}
