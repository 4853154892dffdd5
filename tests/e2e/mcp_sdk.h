// The official MCP TypeScript SDK for the e2e suite's node clients: installed once into the build tree's e2e-node/.
#pragma once

#include <string>

namespace isb::e2e {

// Where the SDK and the suite's .mjs clients are (ISB_E2E_NODE_DIR).
const std::string& NodeDir();
// Installs @modelcontextprotocol/sdk there once; "" on success, else why not.
std::string EnsureSdk();

}  // namespace isb::e2e
