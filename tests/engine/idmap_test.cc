#include "engine/idmap.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

namespace isb::engine {
namespace {

class IdMapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-idmap-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    EXPECT_FALSE(std::filesystem::exists(dir_));
  }
  std::string dir_;
};

TEST_F(IdMapTest, LiveLeasesNeverShareARange) {
  IdAllocator alloc(dir_ + "/ids", 1u << 28, 8);
  auto a = alloc.Acquire();
  auto b = alloc.Acquire();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->base(), b->base());
  EXPECT_EQ((a->base() - (1u << 28)) % kRangeSize, 0u);
  EXPECT_EQ(a->base(), (1u << 28) + a->index() * kRangeSize);
}

TEST_F(IdMapTest, ExhaustionIsAClearError) {
  IdAllocator alloc(dir_ + "/ids", 1u << 28, 2);
  auto a = alloc.Acquire();
  auto b = alloc.Acquire();
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = alloc.Acquire();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("all 2 uid ranges"), std::string::npos) << c.error().message;
}

TEST_F(IdMapTest, ReleasedRangeIsReclaimedAndItsFileRemoved) {
  IdAllocator alloc(dir_ + "/ids", 1u << 28, 1);
  uid_t first;
  {
    auto a = alloc.Acquire();
    ASSERT_TRUE(a.ok());
    first = a->base();
    EXPECT_TRUE(std::filesystem::exists(a->path()));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/ids"));
  auto again = alloc.Acquire();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->base(), first);
}

TEST_F(IdMapTest, LeaseOfACrashedHolderIsReclaimed) {
  IdAllocator alloc(dir_ + "/ids", 1u << 28, 1);
  pid_t pid = ::fork();
  if (pid == 0) {
    auto a = alloc.Acquire();
    ::_exit(a.ok() ? 0 : 1);  // exits without releasing: the kernel drops the flock
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(alloc.Acquire().ok());
}

TEST(IdMapLine, Format) { EXPECT_EQ(IdMapLine(268435456), "0 268435456 65536\n"); }

}  // namespace
}  // namespace isb::engine
