// A sandbox's own limits, hit from inside: the offending command dies, the sandbox and the daemon live on.
#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

class LimitsTest : public E2eTest {};

TEST_F(LimitsTest, MemoryHogIsOomKilledAndTheSandboxLivesOn) {
  std::string id = CreateSandbox({{"mem_limit", "32M"}});
  ASSERT_FALSE(id.empty());
  pid_t init = SandboxInitPid(id);
  json hog = Exec(id, {"sh", "-c", "head -c 100M /dev/zero | tail"});
  EXPECT_EQ(hog["exit_code"], 137) << hog.dump();
  EXPECT_EQ(hog["oom_killed"], true) << hog.dump();
  // The shell reports each killed member of the pipeline: `tail`, the hog, always; `head` too when a second OOM kill
  // in the cgroup picks it while it still writes into the pipe. That second kill can pick the shell itself, which
  // then reports nothing and dies of SIGKILL (137 either way).
  const std::string stderr_text = hog["stderr"];
  EXPECT_TRUE(stderr_text == "Killed\n" || stderr_text == "Killed\nKilled\n" ||
              (stderr_text.empty() && hog["signal"] == 9))
      << hog.dump();
  EXPECT_EQ(SandboxInitPid(id), init) << "the OOM killer took the sandbox's init instead of the hog";
  EXPECT_EQ(Exec(id, {"echo", "still here"})["stdout"], "still here\n");
  json killed = Exec(id, {"sh", "-c", "kill -9 $$"});
  EXPECT_EQ(killed["signal"], 9) << killed.dump();
  EXPECT_EQ(killed["oom_killed"], false) << "a SIGKILL with no OOM kill is not the OOM killer's: " << killed.dump();
}

TEST_F(LimitsTest, OomKillsNeverTakeTheSandboxDown) {
  // When the killed hog is slow to let go of its memory, `head` writing into the pipe triggers a second OOM kill in
  // the same cgroup, which picks the largest process left. That must never be isb's own process (the sandbox's
  // init), whose death ends the sandbox. A race: eight fresh sandboxes give it eight chances.
  for (int i = 0; i < 8; ++i) {
    std::string id = CreateSandbox({{"mem_limit", "32M"}});
    ASSERT_FALSE(id.empty());
    pid_t init = SandboxInitPid(id);
    HttpResponse hog = Tool("sandbox_exec", {{"sandbox", id}, {"argv", {"sh", "-c", "head -c 100M /dev/zero | tail"}}});
    EXPECT_EQ(hog.status, 200) << "the hog took the sandbox down with it: " << hog.Describe();
    EXPECT_EQ(hog.j["result"]["exit_code"], 137) << hog.Describe();
    json after = MustTool("sandbox_get", {{"sandbox", id}});
    EXPECT_EQ(after["state"], "running") << after.dump();
    EXPECT_EQ(SandboxInitPid(id), init) << "the OOM killer took the sandbox's init";
    MustTool("sandbox_remove", {{"sandbox", id}});
  }
}

}  // namespace
}  // namespace isb::e2e
