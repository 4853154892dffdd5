// The isb binary: every command of the CLI.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/audit_cmd.h"
#include "cli/egress_cmd.h"
#include "cli/events_cmd.h"
#include "cli/identity_cmds.h"
#include "cli/image_cmds.h"
#include "cli/logs_cmd.h"
#include "cli/mcp_bridge.h"
#include "cli/parse_errors.h"
#include "cli/run_cmd.h"
#include "cli/secret_cmds.h"
#include "cli/sandbox_cmds.h"
#include "cli/serve_cmd.h"
#include "cli/setup_cmd.h"
#include "engine/contain.h"

int main(int argc, char** argv) {
  isb::engine::RememberProcessArgs(argc, argv);
  CLI::App app{"isb: run other people's and agents' code in sandboxes on your own Linux machines"};
  app.require_subcommand(1);
  int exit_code = 0;
  isb::cli::AddRunCommand(app, &exit_code);
  isb::cli::AddServeCommand(app, &exit_code);
  isb::cli::AddAuditCommand(app, &exit_code);
  isb::cli::AddSandboxCommands(app, &exit_code);
  isb::cli::AddIdentityCommands(app, &exit_code);
  isb::cli::AddSecretCommands(app, &exit_code);
  isb::cli::AddImageCommands(app, &exit_code);
  isb::cli::AddEventsCommand(app, &exit_code);
  isb::cli::AddLogsCommand(app, &exit_code);
  isb::cli::AddEgressCommand(app, &exit_code);
  isb::cli::AddSetupCommand(app, &exit_code);
  isb::cli::AddMcpCommand(app, &exit_code);
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
