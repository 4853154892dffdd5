// The registry every fuzz target drives: the real sandbox tools over the in-memory fake.
#pragma once

#include "api/fake_sandboxes.h"
#include "api/registry.h"
#include "api/sandbox_tools.h"

inline isb::api::Registry& FuzzRegistry() {
  static isb::api::FakeSandboxes sandboxes;
  static isb::api::Registry registry;
  static bool wired = isb::api::AddSandboxTools(registry, sandboxes).ok();
  (void)wired;
  return registry;
}
