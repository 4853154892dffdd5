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
