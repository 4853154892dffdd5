// RunSandbox in-process: the parent's side of the sequence, its results and its refusals.
#include "engine/run.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "base/file.h"
#include "cgroup_parents.h"
#include "engine/contain.h"
#include "must_work.h"

namespace isb::engine {
namespace {

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-run-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    opts_.runtime_dir = tmpl;
    opts_.capture = true;
    opts_.forward_signals = false;
  }
  // Nothing of this test's sandboxes is left: no cgroup of a run this process made (named run-<pid>-...), no mount
  // under the runtime dir.
  void TearDown() override {
    const std::string ours = "run-" + std::to_string(::getpid()) + "-";
    std::error_code ec;
    for (const std::string& parent : isb::testing::IsbCgroupParents())
      for (const auto& e : std::filesystem::directory_iterator(parent, ec))
        EXPECT_NE(e.path().filename().string().rfind(ours, 0), 0u) << "cgroup left behind: " << e.path();
    auto mounts = isb::ReadFile("/proc/self/mountinfo");
    ASSERT_TRUE(mounts.ok());
    EXPECT_EQ(mounts->find(opts_.runtime_dir), std::string::npos) << *mounts;
    std::filesystem::remove_all(opts_.runtime_dir);
  }
  Result<RunResult> Run(std::vector<std::string> argv, SandboxConfig c = {}) {
    c.argv = std::move(argv);
    return RunSandbox(c, opts_);
  }
  RunOptions opts_;
};

TEST_F(RunTest, CapturesOutputAndExitCode) {
  ISB_REQUIRE_ROOT();
  auto r = Run({"sh", "-c", "echo out; echo err >&2; exit 7"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_EQ(r->signal, 0);
  EXPECT_EQ(r->stdout_data, "out\n");
  EXPECT_EQ(r->stderr_data, "err\n");
  EXPECT_FALSE(r->oom_killed);
  EXPECT_FALSE(r->timed_out);
}

// A plain `isb run` reads only the cgroup's OOM kills (RunOptions::usage off): an OOM kill is still reported, and
// the peak memory and CPU time, which it does not read, stay 0. With usage, they are read.
TEST_F(RunTest, WithoutUsageOnlyTheOomKillsAreRead) {
  ISB_REQUIRE_ROOT();
  SandboxConfig c;
  c.limits.memory_bytes = 16ull << 20;
  // tail -n 1 keeps a line that never ends in memory: 256 MiB of zeros, no newline.
  const std::vector<std::string> hog = {"sh", "-c", "head -c 268435456 /dev/zero | tail -n 1 >/dev/null"};
  opts_.usage = false;
  auto plain = Run(hog, c);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_TRUE(plain->oom_killed);
  EXPECT_EQ(plain->peak_memory_bytes, 0u);
  EXPECT_EQ(plain->cpu_ms, 0.0);
  opts_.usage = true;
  auto full = Run(hog, c);
  ASSERT_TRUE(full.ok()) << full.error().message;
  EXPECT_TRUE(full->oom_killed);
  EXPECT_GT(full->peak_memory_bytes, 8ull << 20);
  EXPECT_LE(full->peak_memory_bytes, 16ull << 20);
  EXPECT_GT(full->cpu_ms, 0.0);
}

// Where the wall time went: every step of the launch in the order it ran, then the command and the cleanup; a
// sleep of the command's own shows in its step and nowhere else, and the steps up to it add up to wall_ms.
TEST_F(RunTest, SaysWhereItsTimeWentStepByStep) {
  ISB_REQUIRE_ROOT();
  auto r = Run({"sleep", "0.2"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::vector<std::string> names;
  double through_command = 0;
  for (const auto& [name, ms] : r->steps_ms) {
    names.push_back(name);
    EXPECT_GE(ms, 0.0) << name;
    if (name != "cleanup") through_command += ms;
    if (name != "command") {
      EXPECT_LT(ms, 200.0) << name;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"plan", "lease", "cgroup", "clone", "id_maps", "go", "cgroup_join",
                                             "setup", "command", "cleanup"}));
  EXPECT_GE(r->steps_ms[8].second, 200.0);
  EXPECT_NEAR(through_command, r->wall_ms, 0.001);
}

// Started by a program that ignores SIGCHLD (the disposition survives exec), the child would be reaped by the kernel
// and its pid free for another process while the launcher still names it by number (the move into its cgroup):
// the launch puts the default back, and the run reports the command's status as always.
TEST_F(RunTest, AnIgnoredSigchldIsPutBackBeforeTheClone) {
  ISB_REQUIRE_ROOT();
  struct sigaction ignore {
  }, before{}, after{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGCHLD, &ignore, &before), 0);
  auto r = Run({"sh", "-c", "exit 3"});
  ASSERT_EQ(::sigaction(SIGCHLD, &before, &after), 0);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(after.sa_handler, SIG_DFL);
}

TEST_F(RunTest, EnvironmentWorkdirHostnameUser) {
  ISB_REQUIRE_ROOT();
  SandboxConfig c;
  c.env = {"FOO=bar", "HOME=/tmp"};
  c.workdir = "/usr";
  c.hostname = "unit-host";
  c.uid = 1000;
  c.gid = 1001;
  auto r = Run({"sh", "-c", "echo $FOO $HOME $(pwd) $(hostname) $(id -u) $(id -g)"}, c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stdout_data, "bar /tmp /usr unit-host 1000 1001\n");
}

TEST_F(RunTest, CommandNotFoundIs127) {
  ISB_REQUIRE_ROOT();
  auto r = Run({"no-such-command-isb"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 127);
  EXPECT_EQ(r->exec_error, "no-such-command-isb: command not found in the sandbox");
}

TEST_F(RunTest, SignalIs128PlusN) {
  ISB_REQUIRE_ROOT();
  auto r = Run({"sh", "-c", "kill -TERM $$"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->signal, 15);
  EXPECT_EQ(r->exit_code, 143);
}

TEST_F(RunTest, FailsClosedWhenAStepFails) {
  ISB_REQUIRE_ROOT();
  SandboxConfig c;
  c.workdir = "/does/not/exist";
  auto r = Run({"true"}, c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "sandbox setup failed while entering the working directory: No such file or directory; "
            "does the directory exist in the sandbox?");
}

TEST_F(RunTest, RefusesBadConfigBeforeStarting) {
  EXPECT_EQ(Run({}).error().message, "no command given");
  SandboxConfig c;
  c.hostname = "bad host";
  EXPECT_NE(Run({"true"}, c).error().message.find("invalid hostname"), std::string::npos);
  c = {};
  c.env = {"NOEQUALS"};
  EXPECT_EQ(Run({"true"}, c).error().message, "invalid environment entry 'NOEQUALS': expected KEY=VALUE");
}

TEST(SandboxEnvironment, DefaultsOverridden) {
  auto env = SandboxEnvironment({"PATH=/x", "A=1"});
  EXPECT_EQ(env, (std::vector<std::string>{"HOME=/root", "TERM=xterm", "PATH=/x", "A=1"}));
}

}  // namespace
}  // namespace isb::engine
