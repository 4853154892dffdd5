// Placeholder until the sandbox commands land.
#include "cli/sandbox_cmds.h"

namespace isb::cli {

void AddSandboxCommands(CLI::App&, int*) {}

}  // namespace isb::cli
