#include "engine/rlimits.h"

#include <gtest/gtest.h>

#include "engine/child_util.h"

namespace isb::engine {
namespace {

TEST(Rlimits, CoreDumpsOffAndEveryEntryExplained) {
  auto table = SandboxRlimits();
  bool core = false;
  for (const auto& r : table) {
    EXPECT_LE(r.soft, r.hard) << r.name;
    EXPECT_GT(std::string(r.why).size(), 5u) << r.name;
    if (r.resource == RLIMIT_CORE) core = r.soft == 0 && r.hard == 0;
  }
  EXPECT_TRUE(core);
}

TEST(Rlimits, ApplySetsThem) {
  auto table = SandboxRlimits();
  int rc = isb::testing::InChild([&] {
    if (ApplyRlimits(table.data(), table.size()) != 0) return 1;
    for (const auto& r : table) {
      rlimit cur{};
      if (::getrlimit(r.resource, &cur) != 0 || cur.rlim_cur != r.soft || cur.rlim_max != r.hard) return 2;
    }
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace isb::engine
