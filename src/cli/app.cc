// The isb command line: the commands in the order `isb --help` lists them.
#include "cli/app.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/audit_cmd.h"
#include "cli/egress_cmd.h"
#include "cli/events_cmd.h"
#include "cli/logs_cmd.h"
#include "cli/identity_cmds.h"
#include "cli/image_cmds.h"
#include "cli/mcp_bridge.h"
#include "cli/parse_errors.h"
#include "cli/run_cmd.h"
#include "cli/sandbox_cmds.h"
#include "cli/secret_cmds.h"
#include "cli/serve_cmd.h"
#include "cli/setup_cmd.h"

namespace isb::cli {

const std::vector<CommandGroup>& CommandGroups() {
  static const std::vector<CommandGroup> groups = {
      {AddRunCommand, {"run"}},
      {AddServeCommand, {"serve"}},
      {AddAuditCommand, {"audit", "history"}},
      {AddSandboxCommands, {"create", "exec", "ls", "inspect", "rm", "stop", "start", "extend", "cp"}},
      {AddIdentityCommands, {"whoami", "user", "token", "org", "invitation", "member"}},
      {AddSecretCommands, {"secret"}},
      {AddImageCommands, {"image", "snapshot"}},
      {AddEventsCommand, {"events"}},
      {AddLogsCommand, {"logs"}},
      {AddEgressCommand, {"egress"}},
      {AddSetupCommand, {"setup"}},
      {AddMcpCommand, {"mcp"}},
  };
  return groups;
}

void BuildApp(CLI::App& app, int* exit_code, std::string_view command) {
  app.require_subcommand(1);
  for (const CommandGroup& g : CommandGroups())
    for (std::string_view name : g.names)
      if (name == command) return g.add(app, exit_code);
  for (const CommandGroup& g : CommandGroups()) g.add(app, exit_code);
}

namespace {

// Parses argv with `app` built for `command` (every command when empty) and runs what it names.
int ParseAndRun(int argc, char** argv, std::string_view command) {
  CLI::App app{kAppDescription};
  int exit_code = 0;
  BuildApp(app, &exit_code, command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Built for one command, the app knows neither the other commands (which the message may name as taking a flag)
    // nor the flags they add to the root: a usage error is judged again by the whole app, which accepts what it
    // always accepted and words the refusal as it always did. Help and --version (exit code 0) are the command's.
    if (!command.empty() && e.get_exit_code() != 0) return ParseAndRun(argc, argv, {});
    const std::string message = ParseErrorMessage(app, e, std::vector<std::string>(argv + 1, argv + argc));
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

}  // namespace

int RunCommandLine(int argc, char** argv) {
  // The app for the command argv[1] names alone: building every command's flags cost each run 2 ms.
  return ParseAndRun(argc, argv, argc > 1 ? argv[1] : "");
}

}  // namespace isb::cli
