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

// Use at the top of a test body.
#define ISB_REQUIRE_ROOT()                                                                      \
  do {                                                                                          \
    if (::geteuid() != 0) {                                                                     \
      if (::isb::testing::MustWork()) FAIL() << "this test needs root and ISB_MUST_WORK=1";     \
      GTEST_SKIP() << "needs root (set ISB_MUST_WORK=1 to make this a failure)";                \
    }                                                                                           \
  } while (0)
