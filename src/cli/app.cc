// The isb command line: the commands in the order `isb --help` lists them.
#include "cli/app.h"

#include "cli/audit_cmd.h"
#include "cli/egress_cmd.h"
#include "cli/events_cmd.h"
#include "cli/logs_cmd.h"
#include "cli/identity_cmds.h"
#include "cli/image_cmds.h"
#include "cli/mcp_bridge.h"
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

}  // namespace isb::cli
