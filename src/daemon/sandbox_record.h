// The manager's own record of a sandbox, shared by the files that implement SandboxManager (not an interface).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "base/random.h"
#include "base/result.h"
#include "daemon/sandbox_manager.h"

namespace isb::daemon {

struct SandboxManager::Record {
  std::string id, name, state;
  api::SandboxSpec spec;
  // The runtime that runs it and its record there (engine::RuntimeHandle); both empty while it does not run.
  std::string runtime, runtime_record;
  uint32_t uid_base = 0;
  int64_t created_at = 0, expires_at = 0, last_active_at = 0;
};

struct SandboxManager::Pooled {
  Record rec;
  std::optional<SandboxNet> net;  // the net pool's: what its network gave it
};

// The runtime and handle columns of a sandboxes row, for a SELECT. A daemon from before runtime handles (migration 9)
// may still be serving beside a newer binary that migrated the database (`isb audit verify` opens it with every
// migration): it writes only pid, start_time and lease_index, leaving the runtime empty or the handle of an earlier
// start. Those columns are what the host shows of a namespaces sandbox, and this daemon writes them with every
// handle, so a running row with a pid is read from them; otherwise its live sandbox would be found "died" and killed.
inline constexpr const char* kRuntimeHandleColumns =
    "CASE WHEN state = 'running' AND pid > 0 AND runtime IN ('', 'namespaces') THEN 'namespaces' ELSE runtime END, "
    "CASE WHEN state = 'running' AND pid > 0 AND runtime IN ('', 'namespaces') "
    "THEN 'pid=' || pid || ' start=' || start_time || ' lease=' || lease_index ELSE handle END";

inline Error Invalid(const std::string& m) { return Error::Of(Code::kInvalidArgument, m); }

// A new sandbox id: "sb-" and 16 hex digits; empty when there is no randomness.
inline std::string NewId() {
  auto hex = RandomHex(8);
  return hex.ok() ? "sb-" + *hex : "";
}

inline double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace isb::daemon
