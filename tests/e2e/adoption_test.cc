// Sandboxes outlive the daemon: kill -9 or SIGTERM it, start a new one on the same state dir, and it adopts them.
#include <signal.h>

#include <filesystem>
#include <atomic>
#include <thread>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

using Clock = std::chrono::steady_clock;

class AdoptionTest : public E2eTest {
 protected:
  bool WaitGone(pid_t pid, std::chrono::milliseconds limit = 5s) {
    for (auto until = Clock::now() + limit; Clock::now() < until; std::this_thread::sleep_for(10ms))
      if (!ProcessAlive(pid)) return true;
    return false;
  }
};

// A pipeline that needs ~100 MiB: in a 32 MiB sandbox the kernel's OOM killer ends `tail`, and sh reports 137.
const std::vector<std::string> kMemoryHog = {"sh", "-c", "head -c 100M /dev/zero | tail"};

TEST_F(AdoptionTest, KillNineThenANewDaemonAdoptsEverySandbox) {
  std::vector<std::string> ids;
  std::map<std::string, pid_t> inits;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(CreateSandbox({{"mem_limit", "32M"}, {"pids", 16}, {"labels", {{"n", std::to_string(i)}}}}));
    ASSERT_FALSE(ids.back().empty());
    MustTool("sandbox_file_write",
             {{"sandbox", ids[i]}, {"path", "/root/marker"}, {"content", "written before " + ids[i]}});
    inits[ids[i]] = SandboxInitPid(ids[i]);
    ASSERT_GT(inits[ids[i]], 0) << "no isb-init on the host for " << ids[i];
  }
  const std::string victim = ids[3];
  ids.pop_back();

  KillDaemon();
  // With no daemon: the sandboxes run on. One of them dies meanwhile.
  for (const auto& id : ids) EXPECT_TRUE(ProcessAlive(inits[id])) << id << " died with the daemon";
  ASSERT_EQ(::kill(inits[victim], SIGKILL), 0);
  ASSERT_TRUE(WaitGone(inits[victim])) << "the victim's init survived SIGKILL";

  StartDaemon();
  EXPECT_NE(DaemonLog().find("sandboxes: 3 adopted, 1 found dead, 0 unfinished creates undone"), std::string::npos)
      << DaemonLog();

  for (const auto& id : ids) {
    json got = MustTool("sandbox_get", {{"sandbox", id}});
    EXPECT_EQ(got["state"], "running") << got.dump();
    EXPECT_GE(got["usage"]["pids"].get<int>(), 1) << got.dump();
    EXPECT_GT(got["usage"]["memory_bytes"].get<int64_t>(), 0) << got.dump();
    EXPECT_EQ(SandboxInitPid(id), inits[id]) << "adopted means the same init, not a new one";
    json cat = Exec(id, {"cat", "/root/marker"});
    EXPECT_EQ(cat["stdout"], "written before " + id) << cat.dump();
    EXPECT_EQ(cat["exit_code"], 0);
    // The limits still hold.
    json hog = Exec(id, kMemoryHog);
    EXPECT_EQ(hog["exit_code"], 137) << "the 32M limit must still OOM-kill the hog, and only the hog: " << hog.dump();
  }

  json dead = MustTool("sandbox_get", {{"sandbox", victim}});
  EXPECT_EQ(dead["state"], "stopped") << "a sandbox whose init died is reported stopped: " << dead.dump();
  HttpResponse refused = Tool("sandbox_exec", {{"sandbox", victim}, {"argv", {"true"}}});
  EXPECT_EQ(refused.status, 409) << refused.Describe();
  EXPECT_EQ(refused.j.value("error", ""), "conflict") << refused.Describe();
  // Started again, its files are still there.
  EXPECT_EQ(MustTool("sandbox_start", {{"sandbox", victim}})["state"], "running");
  EXPECT_EQ(Exec(victim, {"cat", "/root/marker"})["stdout"], "written before " + victim);

  ids.push_back(victim);
  for (const auto& id : ids) {
    EXPECT_EQ(MustTool("sandbox_remove", {{"sandbox", id}}), json({{"sandbox", id}, {"removed", true}}));
    EXPECT_EQ(Tool("sandbox_get", {{"sandbox", id}}).status, 404);
    EXPECT_EQ(SandboxInitPid(id), 0) << id;
  }
}

TEST_F(AdoptionTest, SigtermStopsTheDaemonAndLeavesSandboxesRunning) {
  std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  MustTool("sandbox_file_write", {{"sandbox", id}, {"path", "/root/kept"}, {"content", "still here"}});
  pid_t init = SandboxInitPid(id);
  ASSERT_GT(init, 0);

  EXPECT_EQ(StopDaemon(), 0) << DaemonLog();
  EXPECT_NE(DaemonLog().find("sandboxes keep running"), std::string::npos) << DaemonLog();
  EXPECT_TRUE(ProcessAlive(init)) << "SIGTERM to the daemon killed a sandbox";
  EXPECT_FALSE(std::filesystem::exists(socket_path())) << "the daemon left its socket behind";
  // The daemon and its spawner are gone; only the sandbox remains.
  auto left = ProcessesMatching(state_dir());
  for (auto until = Clock::now() + 3s; !left.empty() && Clock::now() < until; left = ProcessesMatching(state_dir()))
    std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(left.empty()) << left.size() << " daemon process(es) still running, e.g. " << left[0].second;

  StartDaemon();
  EXPECT_NE(DaemonLog().find("sandboxes: 1 adopted, 0 found dead"), std::string::npos) << DaemonLog();
  json cat = Exec(id, {"cat", "/root/kept"});
  EXPECT_EQ(cat["stdout"], "still here") << cat.dump();
  EXPECT_EQ(SandboxInitPid(id), init);
}

// An exec is recorded when it begins as well as when it ends: one that the daemon died during (its command may
// run on, and a terminal session for minutes) is in the audit log all the same.
TEST_F(AdoptionTest, AnExecTheDaemonDiedDuringIsInTheAuditLog) {
  const std::string id = CreateSandbox(json::object());
  ASSERT_FALSE(id.empty());
  // A whole exec: its start, then its outcome.
  ASSERT_EQ(Exec(id, {"true"})["exit_code"], 0);
  std::thread client([&] {
    Tool("sandbox_exec", {{"sandbox", id}, {"argv", {"sh", "-c", "touch /tmp/began; exec sleep 60"}}, {"timeout", 120}},
         {"X-Request-Id: e2e-dies-during"});
  });
  bool began = false;
  for (int i = 0; i < 500 && !began; ++i) {
    began = Exec(id, {"test", "-e", "/tmp/began"})["exit_code"] == 0;
    if (!began) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(began) << "the long exec never ran";
  KillDaemon();
  client.join();

  std::string error;
  std::vector<AuditRow> rows = ReadAuditRows(state_dir() + "/isb.db", &error);
  ASSERT_TRUE(error.empty()) << error;
  std::vector<std::string> execs, dying;
  for (const AuditRow& r : rows) {
    if (r.action == "sandbox_exec" && r.request_id != "e2e-dies-during" && execs.size() < 2) execs.push_back(r.outcome);
    if (r.request_id == "e2e-dies-during") dying.push_back(r.action + " " + r.outcome);
  }
  EXPECT_EQ(execs, (std::vector<std::string>{"started", "ok"}));
  EXPECT_EQ(dying, std::vector<std::string>{"sandbox_exec started"});
  StartDaemon();
}

TEST_F(AdoptionTest, KillNineMidCreateLeavesNoOrphans) {
  // Six creates in flight when the daemon dies: each is either finished (and adopted) or undone at the next start.
  std::vector<std::thread> clients;
  std::atomic<int> created{0};
  for (int i = 0; i < 6; ++i) {
    clients.emplace_back([this, &created] {
      if (Tool("sandbox_create", {{"labels", {{"mid", "create"}}}}).status == 200) ++created;
    });
  }
  // Killed once the pool's two launched sandboxes are taken: the other creates launch theirs, one at a time.
  for (int i = 0; i < 500 && created < 2; ++i) std::this_thread::sleep_for(2ms);
  KillDaemon();
  for (auto& t : clients) t.join();
  ASSERT_LT(created, 6) << "every create was answered: none was in flight when the daemon died";
  // Hold the test to every sandbox the dead daemon began, answered or not: each has its directory by now.
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(state_dir() + "/sandboxes", ec))
    Track(e.path().filename().string());

  StartDaemon();
  std::string log = DaemonLog();
  size_t at = log.find("sandboxes: ");
  ASSERT_NE(at, std::string::npos) << log;
  std::printf("[ adopted  ] %s\n", log.substr(at, log.find('\n', at) - at).c_str());
  json list = MustTool("sandbox_list", json::object());
  ASSERT_TRUE(list.is_object());
  // Every create that was answered was adopted; the others were adopted (finished) or undone.
  EXPECT_GE(list["sandboxes"].size(), static_cast<size_t>(created.load())) << list.dump();
  EXPECT_LE(list["sandboxes"].size(), 6u) << list.dump();
  for (const auto& sb : list["sandboxes"]) {
    std::string id = sb["id"].get<std::string>();
    EXPECT_EQ(sb["state"], "running") << sb.dump();
    EXPECT_EQ(Exec(id, {"echo", "whole"})["stdout"], "whole\n") << id;
  }
  // The fixture removes them and then checks that no cgroup, lease, process or mount of any of them is left.
}

}  // namespace
}  // namespace isb::e2e
