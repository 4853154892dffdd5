// The usage store: its rings, the CPU rate between points, and the network counters at both resolutions.
#include "api/usage_store.h"

#include <gtest/gtest.h>

namespace isb::api {
namespace {

constexpr int64_t kT0 = 1'800'000'000'000;  // a minute's start (unix ms)

UsageSample At(int64_t ms, uint64_t cpu_usec, uint64_t rx, uint64_t tx) {
  return {
      .at_ms = kT0 + ms, .cpu_usec = cpu_usec, .memory_bytes = 4096, .pids = 3, .net_rx_bytes = rx, .net_tx_bytes = tx};
}

TEST(UsageStore, EachFinePointKeepsTheNetworkCountsAsReadAndTheCpuAsARate) {
  UsageStore store;
  store.Add("sb-1", At(0, 0, 0, 0));
  store.Add("sb-1", At(2000, 1'000'000, 5000, 700));
  store.Add("sb-1", At(4000, 1'500'000, 5000, 900));
  std::vector<UsagePoint> fine = store.Series("sb-1", UsageResolution::kFine);
  ASSERT_EQ(fine.size(), 3u);
  EXPECT_EQ(fine[0].cpu_cores, 0.0);
  EXPECT_EQ(fine[1].cpu_cores, 0.5);
  EXPECT_EQ(fine[2].cpu_cores, 0.25);
  EXPECT_EQ(fine[1].net_rx_bytes, 5000u);
  EXPECT_EQ(fine[1].net_tx_bytes, 700u);
  EXPECT_EQ(fine[2].net_rx_bytes, 5000u);
  EXPECT_EQ(fine[2].net_tx_bytes, 900u);
  EXPECT_EQ(fine[2].memory_bytes, 4096u);
  EXPECT_EQ(fine[2].pids, 3u);
  EXPECT_EQ(store.Series("sb-1", UsageResolution::kFine, kT0 + 2000).size(), 2u);
  EXPECT_TRUE(store.Series("sb-2", UsageResolution::kFine).empty());
}

// A minute's point is the minute's first reading: the counts then, so the difference of two coarse points is all
// that moved in the minute between them, and the CPU their average.
TEST(UsageStore, CoarsePointsCarryTheCountsAtEachMinuteSoTheirDifferencesAddUp) {
  UsageStore store;
  uint64_t rx = 0, tx = 0;
  for (int64_t ms = 0; ms < 3 * UsageStore::kCoarseMs; ms += 2000) {
    store.Add("sb-1", At(ms, static_cast<uint64_t>(ms) * 1000, rx, tx));  // a core all the time
    rx += 1000;
    tx += 10;
  }
  std::vector<UsagePoint> coarse = store.Series("sb-1", UsageResolution::kCoarse);
  ASSERT_EQ(coarse.size(), 3u);
  EXPECT_EQ(coarse[0].at_ms, kT0);
  EXPECT_EQ(coarse[1].at_ms, kT0 + 60'000);
  EXPECT_EQ(coarse[2].at_ms, kT0 + 120'000);
  // 30 readings a minute, 1000 and 10 bytes between each.
  EXPECT_EQ(coarse[0].net_rx_bytes, 0u);
  EXPECT_EQ(coarse[1].net_rx_bytes, 30'000u);
  EXPECT_EQ(coarse[2].net_rx_bytes, 60'000u);
  EXPECT_EQ(coarse[1].net_tx_bytes, 300u);
  EXPECT_EQ(coarse[2].net_tx_bytes, 600u);
  EXPECT_EQ(coarse[1].cpu_cores, 1.0);
  EXPECT_EQ(coarse[2].cpu_cores, 1.0);
  EXPECT_EQ(store.Series("sb-1", UsageResolution::kFine).size(), 90u);
}

TEST(UsageStore, TheRingsAreBoundedAndRemovedSandboxesAreForgotten) {
  UsageStore store;
  for (size_t i = 0; i < UsageStore::kFinePoints + 5; ++i)
    store.Add("sb-1", At(static_cast<int64_t>(i) * 2000, 0, i, i));
  std::vector<UsagePoint> fine = store.Series("sb-1", UsageResolution::kFine);
  ASSERT_EQ(fine.size(), UsageStore::kFinePoints);
  EXPECT_EQ(fine.front().net_rx_bytes, 5u);
  EXPECT_EQ(fine.back().net_tx_bytes, UsageStore::kFinePoints + 4);
  store.Add("sb-2", At(0, 0, 1, 1));
  store.Retain({"sb-2"});
  EXPECT_TRUE(store.Series("sb-1", UsageResolution::kFine).empty());
  EXPECT_EQ(store.Series("sb-2", UsageResolution::kFine).size(), 1u);
}

}  // namespace
}  // namespace isb::api
