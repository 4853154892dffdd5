#include "engine/caps.h"

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/prctl.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "engine/child_util.h"
#include "must_work.h"

namespace isb::engine {
namespace {

uint64_t StatusField(const std::string& name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + ":", 0) == 0) return std::stoull(line.substr(name.size() + 1), nullptr, 16);
  return ~0ull;
}

TEST(Caps, KeptListIsDockerDefaultLessRawMknodSetfcap) {
  std::set<int> kept;
  for (const auto& c : KeptCapabilities()) kept.insert(c.cap);
  for (int refused : {CAP_SYS_ADMIN, CAP_NET_RAW, CAP_MKNOD, CAP_SETFCAP, CAP_SYS_PTRACE, CAP_SYS_MODULE, CAP_NET_ADMIN,
                      CAP_SYS_RAWIO, CAP_BPF, CAP_PERFMON, CAP_DAC_READ_SEARCH, CAP_SYS_BOOT})
    EXPECT_EQ(kept.count(refused), 0u) << refused;
  EXPECT_EQ(kept.size(), 11u);
  EXPECT_EQ(KeptCapabilityMask() & (1ull << CAP_SYS_ADMIN), 0u);
}

TEST(Caps, RestrictLeavesExactlyTheKeptSets) {
  ISB_REQUIRE_ROOT();
  const uint64_t mask = KeptCapabilityMask();
  int rc = isb::testing::InChild([mask] {
    if (RestrictCapabilities(mask) != 0) return 1;
    if (StatusField("CapBnd") != mask) return 2;
    if (StatusField("CapEff") != mask) return 3;
    if (StatusField("CapPrm") != mask) return 4;
    if (StatusField("CapAmb") != 0) return 5;
    if (StatusField("CapInh") != 0) return 7;
    // Gone for good: a dropped capability cannot be raised again.
    if (::prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN) != 0) return 6;
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace isb::engine
