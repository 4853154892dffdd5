#include "engine/cgroup.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/file.h"
#include "must_work.h"

namespace isb::engine {
namespace {

// The mountinfo of a hybrid host: v1 controllers, and a cgroup2 mount whose controllers are all bound to v1.
const char kHybrid[] =
    "30 24 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n"
    "33 30 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
    "34 30 0:30 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"
    "35 30 0:31 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids\n";
const char kPureV2[] = "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec - cgroup2 cgroup2 rw,nsdelegate\n";

TEST(CgroupLayout, HybridWithoutV2ControllersUsesV1) {
  auto l = ParseCgroupLayout(kHybrid, "hugetlb\n");
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_FALSE(l->v2);
  EXPECT_EQ(l->memory, "/sys/fs/cgroup/memory");
  EXPECT_EQ(l->pids, "/sys/fs/cgroup/pids");
  EXPECT_EQ(l->cpu, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(l->cpuacct, "/sys/fs/cgroup/cpu,cpuacct");
}

TEST(CgroupLayout, V2WithControllersIsPreferred) {
  auto l = ParseCgroupLayout(kPureV2, "cpuset cpu io memory hugetlb pids rdma misc\n");
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->v2);
  EXPECT_EQ(l->v2_root, "/sys/fs/cgroup");
}

TEST(CgroupLayout, MissingControllerIsRefusedByName) {
  auto l = ParseCgroupLayout(kPureV2, "cpu io memory\n");  // no pids, and no v1 either
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().message.find("cgroup controllers 'pids' missing: "), 0u) << l.error().message;
}

// A directory tree standing in for cgroupfs: Create writes the limit files that the kernel would have made.
class FakeCgroupfs : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-cgfake-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Touch(const std::string& dir, std::initializer_list<const char*> files) {
    ASSERT_TRUE(MakeDirs(dir).ok());
    for (const char* f : files) ASSERT_TRUE(WriteFile(dir + "/" + f, "").ok());
  }
  std::string Read(const std::string& p) { return ReadFile(p).ok() ? *ReadFile(p) : "<missing>"; }
  std::string root_;
};

TEST_F(FakeCgroupfs, V2LimitsAndStats) {
  Touch(root_, {"cgroup.subtree_control"});
  Touch(root_ + "/isb", {"cgroup.subtree_control", "pids.max"});
  const std::string d = root_ + "/isb/sb1";
  Touch(d, {"memory.max", "memory.swap.max", "cpu.max", "pids.max", "cgroup.procs"});
  CgroupLayout layout{.v2 = true, .v2_root = root_, .memory = {}, .pids = {}, .cpu = {}, .cpuacct = {}};
  auto cg = Cgroup::Create(layout, "sb1", Limits{.memory_bytes = 64ull << 20, .millicpus = 500, .pids = 32});
  ASSERT_TRUE(cg.ok()) << cg.error().message;
  EXPECT_EQ(Read(root_ + "/cgroup.subtree_control"), "+memory +pids +cpu");
  EXPECT_EQ(Read(root_ + "/isb/cgroup.subtree_control"), "+memory +pids +cpu");
  // All sandboxes together leave the host its share of kernel.pid_max.
  EXPECT_EQ(Read(root_ + "/isb/pids.max"), std::to_string(HostPidsBound().sandboxes()));
  EXPECT_EQ(Read(d + "/memory.max"), "67108864");
  EXPECT_EQ(Read(d + "/memory.swap.max"), "0");
  EXPECT_EQ(Read(d + "/cpu.max"), "50000 100000");
  EXPECT_EQ(Read(d + "/pids.max"), "32");
  ASSERT_TRUE(cg->AddProcess(4242).ok());
  EXPECT_EQ(Read(d + "/cgroup.procs"), "4242");
  ASSERT_TRUE(WriteFile(d + "/memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n").ok());
  ASSERT_TRUE(WriteFile(d + "/memory.peak", "1234567\n").ok());
  ASSERT_TRUE(WriteFile(d + "/cpu.stat", "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n").ok());
  auto s = cg->ReadStats();
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->oom_kills, 1u);
  auto kills = cg->OomKills();
  ASSERT_TRUE(kills.ok()) << kills.error().message;
  EXPECT_EQ(*kills, 1u);
  EXPECT_EQ(s->peak_memory_bytes, 1234567u);
  EXPECT_EQ(s->cpu_usec, 2500u);
  std::filesystem::remove_all(d);  // a real cgroup directory is removed by rmdir alone
}

TEST_F(FakeCgroupfs, V1LimitsAndStats) {
  const std::string m = root_ + "/memory", p = root_ + "/pids", c = root_ + "/cpu,cpuacct";
  Touch(m + "/isb/sb1", {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "cgroup.procs"});
  Touch(p + "/isb/sb1", {"pids.max", "cgroup.procs"});
  Touch(p + "/isb", {"pids.max"});
  Touch(c + "/isb/sb1", {"cpu.cfs_period_us", "cpu.cfs_quota_us", "cgroup.procs"});
  CgroupLayout layout{.v2 = false, .v2_root = {}, .memory = m, .pids = p, .cpu = c, .cpuacct = c};
  auto cg = Cgroup::Create(layout, "sb1", Limits{.memory_bytes = 128ull << 20, .millicpus = 1500, .pids = 10});
  ASSERT_TRUE(cg.ok()) << cg.error().message;
  EXPECT_EQ(cg->dirs().size(), 3u);  // cpu and cpuacct are one hierarchy here
  EXPECT_EQ(Read(m + "/isb/sb1/memory.limit_in_bytes"), "134217728");
  EXPECT_EQ(Read(m + "/isb/sb1/memory.memsw.limit_in_bytes"), "134217728");
  EXPECT_EQ(Read(c + "/isb/sb1/cpu.cfs_period_us"), "100000");
  EXPECT_EQ(Read(c + "/isb/sb1/cpu.cfs_quota_us"), "150000");
  EXPECT_EQ(Read(p + "/isb/sb1/pids.max"), "10");
  EXPECT_EQ(Read(p + "/isb/pids.max"), std::to_string(HostPidsBound().sandboxes()));
  // A lower bound an operator set on isb's group stays.
  {
    CgroupLayout other = layout;
    other.pids = root_ + "/pids-again";
    Touch(other.pids + "/isb/sb2", {"pids.max", "cgroup.procs"});
    Touch(m + "/isb/sb2", {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "cgroup.procs"});
    Touch(c + "/isb/sb2", {"cpu.cfs_period_us", "cpu.cfs_quota_us", "cgroup.procs"});
    ASSERT_TRUE(WriteFile(other.pids + "/isb/pids.max", "100\n").ok());
    auto kept = Cgroup::Create(other, "sb2", Limits{.memory_bytes = 128ull << 20, .millicpus = 1500, .pids = 10});
    ASSERT_TRUE(kept.ok()) << kept.error().message;
    EXPECT_EQ(Read(other.pids + "/isb/pids.max"), "100\n");
    for (const auto& d : kept->dirs()) std::filesystem::remove_all(d);
  }
  // 32768 here (the kernel's default): 4096 kept, 28672 for every sandbox together.
  EXPECT_EQ(HostPidsBound().reserve, std::max(kMinHostPidsReserve, HostPidsBound().pid_max / 8));
  ASSERT_TRUE(WriteFile(m + "/isb/sb1/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n").ok());
  ASSERT_TRUE(WriteFile(m + "/isb/sb1/memory.max_usage_in_bytes", "999\n").ok());
  ASSERT_TRUE(WriteFile(c + "/isb/sb1/cpuacct.usage", "7000000\n").ok());
  auto s = cg->ReadStats();
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->oom_kills, 2u);
  auto kills = cg->OomKills();
  ASSERT_TRUE(kills.ok()) << kills.error().message;
  EXPECT_EQ(*kills, 2u);
  EXPECT_EQ(s->peak_memory_bytes, 999u);
  EXPECT_EQ(s->cpu_usec, 7000u);
  for (const auto& d : cg->dirs()) std::filesystem::remove_all(d);
}

// A live sandbox's limits written again (a pooled sandbox taken by a create with lower ones): every file of both
// layouts has the new value.
TEST_F(FakeCgroupfs, SetLimitsWritesNewLimitsInEitherLayout) {
  Touch(root_, {"cgroup.subtree_control"});
  Touch(root_ + "/isb", {"cgroup.subtree_control", "pids.max"});
  Touch(root_ + "/isb/sb1", {"memory.max", "memory.swap.max", "cpu.max", "pids.max"});
  CgroupLayout v2{.v2 = true, .v2_root = root_, .memory = {}, .pids = {}, .cpu = {}, .cpuacct = {}};
  auto cg2 = Cgroup::Create(v2, "sb1", Limits{});
  ASSERT_TRUE(cg2.ok()) << cg2.error().message;
  // The kernel's files take each write whole; these regular files are emptied first, as a write does not cut them.
  Touch(root_ + "/isb/sb1", {"memory.max", "cpu.max", "pids.max"});
  ASSERT_TRUE(cg2->SetLimits(Limits{.memory_bytes = 96ull << 20, .millicpus = 250, .pids = 16}).ok());
  EXPECT_EQ(Read(root_ + "/isb/sb1/memory.max"), "100663296");
  EXPECT_EQ(Read(root_ + "/isb/sb1/memory.swap.max"), "0");
  EXPECT_EQ(Read(root_ + "/isb/sb1/cpu.max"), "25000 100000");
  EXPECT_EQ(Read(root_ + "/isb/sb1/pids.max"), "16");
  std::filesystem::remove_all(root_ + "/isb/sb1");
  cg2->Release();

  const std::string m = root_ + "/memory", p = root_ + "/pids", c = root_ + "/cpu,cpuacct";
  Touch(m + "/isb/sb2", {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"});
  Touch(p + "/isb/sb2", {"pids.max"});
  Touch(p + "/isb", {"pids.max"});
  Touch(c + "/isb/sb2", {"cpu.cfs_period_us", "cpu.cfs_quota_us"});
  CgroupLayout v1{.v2 = false, .v2_root = {}, .memory = m, .pids = p, .cpu = c, .cpuacct = c};
  auto cg1 = Cgroup::Create(v1, "sb2", Limits{});
  ASSERT_TRUE(cg1.ok()) << cg1.error().message;
  for (uint64_t mem : {uint64_t{96} << 20, uint64_t{1} << 30}) {  // down, then up
    Touch(m + "/isb/sb2", {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"});
    Touch(p + "/isb/sb2", {"pids.max"});
    Touch(c + "/isb/sb2", {"cpu.cfs_period_us", "cpu.cfs_quota_us"});
    ASSERT_TRUE(cg1->SetLimits(Limits{.memory_bytes = mem, .millicpus = 250, .pids = 16}).ok());
    EXPECT_EQ(Read(m + "/isb/sb2/memory.limit_in_bytes"), std::to_string(mem));
    EXPECT_EQ(Read(m + "/isb/sb2/memory.memsw.limit_in_bytes"), std::to_string(mem));
  }
  EXPECT_EQ(Read(c + "/isb/sb2/cpu.cfs_quota_us"), "25000");
  EXPECT_EQ(Read(c + "/isb/sb2/cpu.cfs_period_us"), "100000");
  EXPECT_EQ(Read(p + "/isb/sb2/pids.max"), "16");
  for (const auto& d : cg1->dirs()) std::filesystem::remove_all(d);
  cg1->Release();
}

// A name that is not one path component names no sandbox: above all not "", which would be isb's own parent of
// every sandbox's cgroup (whose Remove would kill them all).
TEST_F(FakeCgroupfs, AdoptingNoNameOrAPathGivesNoDirectories) {
  CgroupLayout v2{.v2 = true, .v2_root = root_, .memory = {}, .pids = {}, .cpu = {}, .cpuacct = {}};
  CgroupLayout v1{.v2 = false,
                  .v2_root = {},
                  .memory = root_ + "/m",
                  .pids = root_ + "/p",
                  .cpu = root_ + "/c",
                  .cpuacct = root_ + "/c"};
  for (const CgroupLayout& layout : {v2, v1}) {
    for (const char* name : {"", ".", "..", "a/b", "../sb1"}) {
      Cgroup cg = Cgroup::Adopt(layout, name);
      EXPECT_TRUE(cg.dirs().empty()) << "'" << name << "'";
      EXPECT_EQ(cg.name(), "");
      EXPECT_TRUE(cg.Remove().ok());
    }
    EXPECT_EQ(Cgroup::Adopt(layout, "sb-1").dirs().size(), layout.v2 ? 1u : 3u);
  }
}

// The host's real cgroups: a group is created with its limits, accounts a process, and is removed.
TEST(CgroupHost, CreateAccountRemove) {
  ISB_REQUIRE_ROOT();
  auto layout = DetectCgroupLayout();
  ASSERT_TRUE(layout.ok()) << layout.error().message;
  std::string name = "unit-" + std::to_string(::getpid());
  std::vector<std::string> dirs;
  {
    auto cg = Cgroup::Create(*layout, name, Limits{.memory_bytes = 32ull << 20, .millicpus = 1000, .pids = 8});
    ASSERT_TRUE(cg.ok()) << cg.error().message;
    dirs = cg->dirs();
    for (const auto& d : dirs) EXPECT_TRUE(std::filesystem::is_directory(d)) << d;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::pause();
      ::_exit(0);
    }
    ASSERT_TRUE(cg->AddProcess(pid).ok());
    auto procs = ReadFile(dirs[0] + "/cgroup.procs");
    ASSERT_TRUE(procs.ok());
    EXPECT_EQ(*procs, std::to_string(pid) + "\n");
    ASSERT_TRUE(cg->Remove().ok());  // kills the process first
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  }
  for (const auto& d : dirs) EXPECT_FALSE(std::filesystem::exists(d)) << d;
}

}  // namespace
}  // namespace isb::engine
