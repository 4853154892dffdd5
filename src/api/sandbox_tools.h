// The sandbox_* tools: schemas, limits and handlers over the Sandboxes interface.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "api/quota_gate.h"
#include "api/registry.h"
#include "api/spec_policy.h"
#include "api/usage_store.h"
#include "api/sandboxes.h"
#include "identity/orgs.h"

namespace isb::api {

// The spec's and the exec request's defaults and limits (spec/), which the schemas state to callers.
using spec::kDefaultCols;
using spec::kDefaultExecTimeoutS;
using spec::kDefaultExpiresS;
using spec::kDefaultIdleTimeoutS;
using spec::kDefaultRows;
using spec::kMaxExecTimeoutS;
using spec::kMaxExpiresS;
using spec::kMaxStdinBytes;
using spec::kMaxTerminalSide;

// Limits of the tools' own answers and file transfers.
inline constexpr size_t kMaxOutputBytes = 256 << 10;  // per stream, in an exec result
inline constexpr size_t kMaxFileReadBytes = 4 << 20;
inline constexpr size_t kMaxFileWriteBytes = 2 << 20;

// Registers sandbox_create, sandbox_exec, sandbox_exec_input, sandbox_exec_resize, sandbox_logs, sandbox_file_read,
// sandbox_file_write, sandbox_list, sandbox_get, sandbox_usage, sandbox_stop, sandbox_start, sandbox_extend and
// sandbox_remove. `sandboxes` must outlive `registry`. Durations in these tools are whole seconds (JSON integers). An
// image of an org as a sandbox is made from it: its layers' directories (bottom first) and what of its config a sandbox
// takes where the caller gave nothing.
struct ResolvedImage {
  std::string name;    // its normalized reference
  std::string digest;  // its manifest's
  std::vector<std::string> layers;
  std::vector<std::string> env;              // "NAME=value"
  std::string working_dir;                   // "" when the image names none
  std::string user;                          // "UID:GID", "" when the image names none
  std::vector<std::string> entrypoint, cmd;  // the default command: `isb run` without one runs entrypoint + cmd
};

struct SandboxToolOptions {
  // sandbox_create holds every caller but the host and superadmins to it (CheckRemoteSpec); it must outlive the
  // registry. nullptr: no remote-spec policy.
  const RemoteSpecPolicy* remote = nullptr;
  // Org quotas (sandbox_create checks them, for every caller); nullptr: no quotas. Must outlive the registry.
  QuotaGate* quotas = nullptr;
  // Whether the caller may give a sandbox secret files (spec `secrets`): whoever execs in it reads their values, so
  // it needs what secret_get needs (the daemon asks the registry). Unset: secret files are refused.
  std::function<Status(const CallContext& ctx)> may_read_secrets{};
  // Finds the org's image a spec's `image` names by reference (the daemon's image store). `may_flatten` (null: no
  // limit) is asked with the most bytes a flatten of its lowest layers would write before one is made, and may
  // refuse it (QuotaGate::DiskCheck). Unset: references are refused.
  std::function<Result<ResolvedImage>(const std::string& org, const std::string& ref,
                                      const std::function<Status(uint64_t max_bytes)>& may_flatten)>
      resolve_image{};
  // What sandbox_usage reads (usage_tool.h); null: it answers that nothing is sampled. Must outlive the registry.
  const UsageStore* usage = nullptr;
};

Status AddSandboxTools(Registry& registry, Sandboxes& sandboxes, SandboxToolOptions options = {});

// A SandboxInfo as the tools return it.
nlohmann::json SandboxInfoJson(const SandboxInfo& info);

}  // namespace isb::api
