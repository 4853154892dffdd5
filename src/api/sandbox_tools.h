// The sandbox_* tools: schemas, limits and handlers over the Sandboxes interface.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "api/registry.h"
#include "api/spec_policy.h"
#include "api/sandboxes.h"
#include "identity/orgs.h"

namespace isb::api {

// Limits the tools enforce before calling Sandboxes (the numbers).
inline constexpr size_t kMaxStdinBytes = 1 << 20;
inline constexpr size_t kMaxOutputBytes = 256 << 10;      // per stream, in an exec result
inline constexpr size_t kMaxFileReadBytes = 4 << 20;
inline constexpr size_t kMaxFileWriteBytes = 2 << 20;
inline constexpr int kDefaultExecTimeoutS = 60;
inline constexpr int kMaxExecTimeoutS = 15 * 60;
inline constexpr int kDefaultExpiresS = 24 * 3600;
inline constexpr int kMaxExpiresS = 30 * 24 * 3600;
inline constexpr int kDefaultIdleTimeoutS = 2 * 3600;
inline constexpr int kDefaultRows = 24;
inline constexpr int kDefaultCols = 80;
inline constexpr int kMaxTerminalSide = 1000;  // rows or columns

// Registers sandbox_create, sandbox_exec, sandbox_exec_input, sandbox_exec_resize, sandbox_file_read, sandbox_file_write, sandbox_list, sandbox_get,
// sandbox_stop, sandbox_start, sandbox_extend and sandbox_remove. `sandboxes` must outlive `registry`.
// Durations in these tools are whole seconds (JSON integers).
struct SandboxToolOptions {
  // sandbox_create holds every caller but the host and superadmins to it (CheckRemoteSpec); it must outlive the
  // registry. nullptr: no remote-spec policy.
  const RemoteSpecPolicy* remote = nullptr;
  // An org's quota (sandbox_create checks it, for every caller); empty: no quotas.
  std::function<Result<identity::Quota>(const std::string& org)> quota;
};

Status AddSandboxTools(Registry& registry, Sandboxes& sandboxes, SandboxToolOptions options = {});

// A SandboxInfo as the tools return it.
nlohmann::json SandboxInfoJson(const SandboxInfo& info);

}  // namespace isb::api
