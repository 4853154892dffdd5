// `isb audit verify`: walks the audit log's and the sandbox history's hash chains in a state directory.
#pragma once

#include <CLI/CLI.hpp>

namespace isb::cli {

void AddAuditCommand(CLI::App& app, int* exit_code);

}  // namespace isb::cli
