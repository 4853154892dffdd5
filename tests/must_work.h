// Tests that need root, namespaces or cgroups: skipped on a machine without them, FAILED when ISB_MUST_WORK=1.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace isb::testing {

inline bool MustWork() {
  const char* v = std::getenv("ISB_MUST_WORK");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace isb::testing

// Use at the top of a test body: what the test needs of the machine (`why` says what); without it the test is
// skipped, or FAILED when ISB_MUST_WORK=1.
#define ISB_REQUIRE_MACHINE(condition, why)                                    \
  do {                                                                         \
    if (!(condition)) {                                                        \
      if (::isb::testing::MustWork()) FAIL() << why << " and ISB_MUST_WORK=1"; \
      GTEST_SKIP() << why << " (set ISB_MUST_WORK=1 to make this a failure)";  \
    }                                                                          \
  } while (0)

#define ISB_REQUIRE_ROOT() ISB_REQUIRE_MACHINE(::geteuid() == 0, "this test needs root")
