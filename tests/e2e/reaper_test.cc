// The reaper with short timeouts: idle and expired sandboxes go within seconds; a default one stays.
#include <filesystem>
#include <thread>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

using Clock = std::chrono::steady_clock;

class ReaperTest : public E2eTest {};

TEST_F(ReaperTest, RemovesIdleAndExpiredSandboxesAndKeepsTheRest) {
  StopDaemon();
  // No net pool: its waiting sandboxes' veths would stand beside the reaped one's, which must be the only one.
  StartDaemon({"--reap-interval", "1s", "--net-pool-size", "0"});

  // The idle one has a network: its rules must go with it (on the host, in isb's table, while the daemon runs).
  auto isb_interfaces = [] {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator("/sys/class/net"))
      if (e.path().filename().string().rfind(kEgressTable, 0) == 0) out.push_back(e.path().filename().string());
    return out;
  };
  std::string idle = CreateSandbox({{"idle_timeout", 2}, {"egress", {"reaped.test"}}});
  std::vector<std::string> veth = isb_interfaces();
  ASSERT_EQ(veth.size(), 1u) << "the idle sandbox's veth";
  auto table = [] { return RunProcess({"/usr/sbin/nft", "list", "table", "inet", kEgressTable}).out; };
  EXPECT_NE(table().find(veth[0]), std::string::npos) << table();
  std::string expiring = CreateSandbox({{"expires", 3}});
  std::string kept = CreateSandbox();
  ASSERT_FALSE(idle.empty());
  ASSERT_FALSE(expiring.empty());
  ASSERT_FALSE(kept.empty());
  pid_t idle_init = SandboxInitPid(idle), expiring_init = SandboxInitPid(expiring);
  ASSERT_GT(idle_init, 0);
  ASSERT_GT(expiring_init, 0);
  auto t0 = Clock::now();

  // An exec keeps the expiring one active (it is not idle), but expiry does not care.
  EXPECT_EQ(Exec(expiring, {"true"})["exit_code"], 0);

  bool idle_gone = false, expiring_gone = false;
  while (Clock::now() - t0 < 8s && !(idle_gone && expiring_gone)) {
    std::this_thread::sleep_for(200ms);
    idle_gone = idle_gone || Tool("sandbox_get", {{"sandbox", idle}}).status == 404;
    expiring_gone = expiring_gone || Tool("sandbox_get", {{"sandbox", expiring}}).status == 404;
  }
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  EXPECT_TRUE(idle_gone) << "the sandbox idle for 2 s was not reaped within " << took.count() << " ms";
  EXPECT_TRUE(expiring_gone) << "the sandbox that expired after 3 s was not reaped within " << took.count() << " ms";
  EXPECT_LE(took, 6500ms);

  HttpResponse r = Tool("sandbox_get", {{"sandbox", idle}});
  EXPECT_EQ(r.status, 404) << r.Describe();
  EXPECT_EQ(r.j.value("error", ""), "not_found") << r.Describe();
  EXPECT_FALSE(ProcessAlive(idle_init)) << "the reaped sandbox's init still runs";
  EXPECT_FALSE(ProcessAlive(expiring_init)) << "the reaped sandbox's init still runs";
  EXPECT_NE(DaemonLog().find("reaper removed"), std::string::npos) << DaemonLog();
  EXPECT_EQ(table().find(veth[0]), std::string::npos) << "the reaped sandbox's rules stayed:\n" << table();
  EXPECT_EQ(isb_interfaces(), std::vector<std::string>{});

  json still = MustTool("sandbox_get", {{"sandbox", kept}});
  EXPECT_EQ(still["state"], "running") << still.dump();
  EXPECT_EQ(Exec(kept, {"echo", "alive"})["stdout"], "alive\n");
  json list = MustTool("sandbox_list", json::object());
  ASSERT_EQ(list["sandboxes"].size(), 1u) << list.dump();
  EXPECT_EQ(list["sandboxes"][0]["id"], kept);
}

}  // namespace
}  // namespace isb::e2e
