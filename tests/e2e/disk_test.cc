// A sandbox's disk: the size of the filesystem its writable layer lives in, full from inside at exactly that size.
#include <chrono>
#include <filesystem>
#include <thread>

#include "daemon/mount_table.h"
#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

class DiskLimitTest : public E2eTest {};

TEST_F(DiskLimitTest, WritingBeyondTheDiskIsENOSPCAndRemovalLeavesNoLoopDevice) {
  std::string id = CreateSandbox({{"disk", "64m"}});
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(MustTool("sandbox_get", {{"sandbox", id}})["spec"]["disk"], 64 << 20);
  const std::string image = std::filesystem::canonical(state_dir() + "/sandboxes/" + id + "/layer.img").string();
  ASSERT_EQ(isb::testing::LoopsOf(image).size(), 1u);

  json dd = Exec(id, {"dd", "if=/dev/zero", "of=/big", "bs=1M", "count=100"});
  EXPECT_EQ(dd["exit_code"], 1) << dd.dump();
  const std::string err = dd["stderr"];
  EXPECT_EQ(err.substr(0, err.find('\n')), "dd: error writing '/big': No space left on device") << dd.dump();
  // The sandbox lives on, and the space is its own to free.
  EXPECT_EQ(Exec(id, {"rm", "/big"})["exit_code"], 0);
  EXPECT_EQ(Exec(id, {"echo", "still here"})["stdout"], "still here\n");

  MustTool("sandbox_remove", {{"sandbox", id}});
  // The layer's unmount, loop detach and image go after the removal returns (the daemon's teardown queue).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((!isb::testing::LoopsOf(image).empty() || std::filesystem::exists(image)) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(isb::testing::LoopsOf(image).empty());
  EXPECT_FALSE(std::filesystem::exists(image));
}

}  // namespace
}  // namespace isb::e2e
