// EnsureSdk: npm installs the pinned SDK on first use; later calls and later runs find it in place.
#include "e2e/mcp_sdk.h"

#include <unistd.h>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {

const std::string& NodeDir() {
  static const std::string dir = ISB_E2E_NODE_DIR;
  return dir;
}

std::string EnsureSdk() {
  static const std::string why = [] {
    const std::string& dir = NodeDir();
    if (FindProgram("node").empty() || FindProgram("npm").empty()) return std::string("node and npm must be in PATH");
    if (::access((dir + "/mcp_client.mjs").c_str(), R_OK) != 0)
      return dir + "/mcp_client.mjs is missing: re-run cmake (e2e.cmake copies it there)";
    if (::access((dir + "/node_modules/@modelcontextprotocol/sdk/package.json").c_str(), R_OK) == 0)
      return std::string();
    ProcResult npm =
        RunProcess({"npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "@modelcontextprotocol/sdk@1.32.2"},
                   "", std::chrono::seconds(240));
    if (npm.exit_status != 0) return "npm install @modelcontextprotocol/sdk failed: " + npm.Describe();
    return std::string();
  }();
  return why;
}

}  // namespace isb::e2e
