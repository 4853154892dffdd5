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

void BuildApp(CLI::App& app, int* exit_code) {
  app.require_subcommand(1);
  AddRunCommand(app, exit_code);
  AddServeCommand(app, exit_code);
  AddAuditCommand(app, exit_code);
  AddSandboxCommands(app, exit_code);
  AddIdentityCommands(app, exit_code);
  AddSecretCommands(app, exit_code);
  AddImageCommands(app, exit_code);
  AddEventsCommand(app, exit_code);
  AddLogsCommand(app, exit_code);
  AddEgressCommand(app, exit_code);
  AddSetupCommand(app, exit_code);
  AddMcpCommand(app, exit_code);
}

}  // namespace isb::cli
