// `isb exec -d` and `isb logs` against a real daemon: detached output read back byte for byte, its exit, -f to the
// sandbox's removal, the cap on detached commands, and the ring dropping what is past its bound.
#include <chrono>
#include <thread>

#include "base/base64.h"
#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

class LogsTest : public E2eTest {
 protected:
  // Waits (up to 20 s) until none of the sandbox's detached commands runs; returns the log's end.
  uint64_t WaitUntilNoneRun(const std::string& id) {
    for (int i = 0; i < 200; ++i) {
      json r = MustTool("sandbox_logs", {{"sandbox", id}, {"limit_bytes", 1}});
      if (r.is_null()) return 0;
      if (r["running"] == 0) return r["end"].get<uint64_t>();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "the detached commands of " << id << " still run after 20 s";
    return 0;
  }
};

TEST_F(LogsTest, DetachedOutputAndItsExitAreReadBackAndFollowedUntilTheSandboxIsRemoved) {
  const std::string id = CreateSandbox();
  ProcResult started = Isb({"exec", "-d", id, "--", "sh", "-c", "echo out; echo err >&2; sleep 1; echo done"});
  ExpectAudit("isb exec -d", {Unix("sandbox_exec")});
  ASSERT_EQ(started.exit_status, 0) << started.Describe();
  EXPECT_EQ(started.out, "1\n");
  EXPECT_EQ(started.err, "");
  // out\n err\n done\n and the exit: 14 positions.
  EXPECT_EQ(WaitUntilNoneRun(id), 14u);

  ProcResult logs = Isb({"logs", id});
  ASSERT_EQ(logs.exit_status, 0) << logs.Describe();
  EXPECT_EQ(logs.out, "out\ndone\n");
  EXPECT_EQ(logs.err, "err\nisb: detached command 1 exited with code 0\n");
  ProcResult tail = Isb({"logs", "--tail", "5", id});
  ASSERT_EQ(tail.exit_status, 0) << tail.Describe();
  EXPECT_EQ(tail.out, "done\n");  // the last 5 output bytes: the exit after them takes none
  EXPECT_EQ(tail.err, "isb: detached command 1 exited with code 0\n");
  ProcResult as_json = Isb({"exec", "-d", "--json", id, "--", "false"});
  ExpectAudit("isb exec -d --json", {Unix("sandbox_exec")});
  ASSERT_EQ(as_json.exit_status, 0) << as_json.Describe();
  EXPECT_EQ(json::parse(as_json.out, nullptr, false), json({{"detached", true}, {"log_id", 2}})) << as_json.Describe();
  EXPECT_EQ(WaitUntilNoneRun(id), 15u);

  // A command that runs on, followed; its sandbox's removal ends the command and the follow.
  ProcResult live = Isb({"exec", "-d", id, "--", "sh", "-c", "echo live; exec sleep 600"});
  ExpectAudit("isb exec -d (runs on)", {Unix("sandbox_exec")});
  ASSERT_EQ(live.exit_status, 0) << live.Describe();
  EXPECT_EQ(live.out, "3\n");
  ProcResult followed;
  std::thread follow([&] { followed = Isb({"logs", "-f", id}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  json running = MustTool("sandbox_logs", {{"sandbox", id}, {"after", 15}});
  EXPECT_EQ(running["running"], 1) << running.dump();
  EXPECT_EQ(running["chunks"], json::parse(R"([{"cursor": 15, "log_id": 3, "stream": "stdout", "data": "live\n"}])"));
  MustTool("sandbox_remove", {{"sandbox", id}});
  follow.join();
  ExpectAudit("isb logs -f (its last read: the sandbox removed)", {Unix("sandbox_logs", "not_found")});
  EXPECT_EQ(followed.exit_status, 0) << followed.Describe();
  EXPECT_FALSE(followed.killed_at_deadline);
  EXPECT_EQ(followed.out, "out\ndone\nlive\n");
  // The third command's end is told when a poll came between its kill and the sandbox's removal.
  const std::string told =
      "err\nisb: detached command 1 exited with code 0\nisb: detached command 2 exited with code 1\n";
  EXPECT_TRUE(followed.err == told ||
              followed.err == told + "isb: detached command 3 ended: the sandbox stopped during the exec\n")
      << followed.Describe();
  ProcResult gone = Isb({"logs", id});
  ExpectAudit("isb logs (a removed sandbox)", {Unix("sandbox_logs", "not_found")});
  EXPECT_EQ(gone.exit_status, 1) << gone.Describe();
  EXPECT_EQ(gone.err, "isb: no sandbox '" + id + "'\n");
}

TEST_F(LogsTest, SixteenDetachedCommandsRunAtOnceAndAStopEndsThem) {
  const std::string id = CreateSandbox();
  for (int i = 1; i <= 16; ++i) {
    ProcResult started = Isb({"exec", "-d", id, "--", "sleep", "600"});
    ExpectAudit("isb exec -d sleep", {Unix("sandbox_exec")});
    ASSERT_EQ(started.exit_status, 0) << started.Describe();
    EXPECT_EQ(started.out, std::to_string(i) + "\n");
  }
  ProcResult refused = Isb({"exec", "-d", id, "--", "sleep", "600"});
  ExpectAudit("isb exec -d (a 17th)", {Unix("sandbox_exec", "conflict")});
  EXPECT_EQ(refused.exit_status, 1) << refused.Describe();
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(refused.err, "isb: sandbox '" + id +
                             "' already runs 16 detached commands, the most it may; wait for one to end, or stop the "
                             "sandbox to end them all\n");
  EXPECT_EQ(Isb({"exec", "-d", "-i", id, "--", "true"}).err,
            "isb: -d cannot be combined with -i or -t: a detached command's stdin is /dev/null\n");
  MustTool("sandbox_stop", {{"sandbox", id}});
  EXPECT_EQ(WaitUntilNoneRun(id), 16u);  // 16 exits, no output
  MustTool("sandbox_start", {{"sandbox", id}});
  ProcResult again = Isb({"exec", "-d", id, "--", "true"});
  ExpectAudit("isb exec -d after a restart", {Unix("sandbox_exec")});
  EXPECT_EQ(again.out, "17\n") << again.Describe();
  MustTool("sandbox_remove", {{"sandbox", id}});
}

TEST_F(LogsTest, ADetachedCommandWithATimeoutIsKilledAtItAndOneWithoutRunsOn) {
  const std::string id = CreateSandbox();
  ProcResult started = Isb({"exec", "-d", "--timeout", "1s", id, "--", "sh", "-c", "echo up; exec sleep 600"});
  ExpectAudit("isb exec -d --timeout 1s", {Unix("sandbox_exec")});
  ASSERT_EQ(started.exit_status, 0) << started.Describe();
  EXPECT_EQ(started.out, "1\n");
  json r = MustTool("sandbox_exec", {{"sandbox", id}, {"argv", {"sleep", "600"}}, {"detach", true}});
  EXPECT_EQ(r, json({{"detached", true}, {"log_id", 2}}));
  // "up\n" (positions 0 to 2) and the first command's exit, once its second has passed.
  json exited;
  for (int i = 0; i < 200 && exited.is_null(); ++i) {
    if (MustTool("sandbox_logs", {{"sandbox", id}, {"limit_bytes", 1}})["end"] == 4)
      exited = MustTool("sandbox_logs", {{"sandbox", id}, {"after", 3}});
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(exited.is_null()) << "the command with a 1 s timeout still runs after 20 s";
  EXPECT_EQ(exited["chunks"], json::parse(R"([{"cursor": 3, "log_id": 1, "stream": "exit", "exit_code": 124,
                                                "signal": 9, "timed_out": true}])"));
  EXPECT_EQ(exited["running"], 1);  // the one without a timeout
  ProcResult logs = Isb({"logs", id});
  ASSERT_EQ(logs.exit_status, 0) << logs.Describe();
  EXPECT_EQ(logs.out, "up\n");
  EXPECT_EQ(logs.err, "isb: detached command 1 timed out and was killed (exit code 124)\n");
  MustTool("sandbox_remove", {{"sandbox", id}});
}

TEST_F(LogsTest, AUtf8ReadGivesACharacterAcrossTheRingsRecordsWholeAndNeverCutsOne) {
  const std::string id = CreateSandbox();
  // 65535 bytes, then a euro sign: its first byte ends the ring's first record (64 KiB), its other two begin the next.
  ProcResult started =
      Isb({"exec", "-d", id, "--", "sh", "-c", "head -c 65535 /dev/zero | tr '\\0' x; printf '\\342\\202\\254\\n'"});
  ExpectAudit("isb exec -d (a character across two records)", {Unix("sandbox_exec")});
  ASSERT_EQ(started.exit_status, 0) << started.Describe();
  EXPECT_EQ(WaitUntilNoneRun(id), 65540u);  // 65535 + 3 + 1 bytes and the exit
  const std::string xs(65535, 'x');
  json r = MustTool("sandbox_logs", {{"sandbox", id}});
  ASSERT_EQ(r["chunks"].size(), 2u) << r.dump().substr(0, 300);
  EXPECT_EQ(r["chunks"][0]["data"], xs + "\u20ac\n");
  EXPECT_EQ(r["chunks"][1]["stream"], "exit");
  EXPECT_EQ(r["next"], 65540);
  // A read whose limit ends inside the character stops before it; the next gives it whole.
  r = MustTool("sandbox_logs", {{"sandbox", id}, {"limit_bytes", 65536}});
  ASSERT_EQ(r["chunks"].size(), 1u);
  EXPECT_EQ(r["chunks"][0]["data"], xs);
  EXPECT_EQ(r["next"], 65535);
  r = MustTool("sandbox_logs", {{"sandbox", id}, {"after", 65535}});
  ASSERT_EQ(r["chunks"].size(), 2u);
  EXPECT_EQ(r["chunks"][0]["data"], "\u20ac\n");
  // base64 gives the records as the ring keeps them.
  r = MustTool("sandbox_logs", {{"sandbox", id}, {"encoding", "base64"}});
  ASSERT_EQ(r["chunks"].size(), 3u);
  EXPECT_EQ(r["chunks"][1]["data_base64"], Base64Encode("\x82\xac\n"));
  MustTool("sandbox_remove", {{"sandbox", id}});
}

TEST_F(LogsTest, TheRingKeepsTheLastMebibyteAndSaysHowMuchWasDropped) {
  const std::string id = CreateSandbox();
  ProcResult started = Isb({"exec", "-d", id, "--", "sh", "-c", "head -c 2000000 /dev/zero | tr '\\0' x"});
  ExpectAudit("isb exec -d (2000000 bytes)", {Unix("sandbox_exec")});
  ASSERT_EQ(started.exit_status, 0) << started.Describe();
  EXPECT_EQ(WaitUntilNoneRun(id), 2000001u);
  // Kept: 1048576 positions, the exit and the last 1048575 bytes.
  ProcResult logs = Isb({"logs", id});
  ASSERT_EQ(logs.exit_status, 0) << logs.Describe();
  EXPECT_EQ(logs.out, std::string(1048575, 'x'));
  EXPECT_EQ(logs.err, "isb: 951425 bytes of older output were dropped\nisb: detached command 1 exited with code 0\n");
  MustTool("sandbox_remove", {{"sandbox", id}});
}

}  // namespace
}  // namespace isb::e2e
