// SandboxManager against the real engine: lifecycle, files, adoption by a new manager, and the reaper.
#include "daemon/sandbox_manager.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "api/org_sandboxes.h"
#include "audit/history.h"
#include "must_work.h"
#include "store/migrations.h"

namespace isb::daemon {
namespace {

class ManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ISB_REQUIRE_ROOT();
    char tmpl[] = "/tmp/isb-mgr-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    Restart();
  }
  // A new daemon over the same state: new spawner, new database connection, new manager.
  void Restart() {
    mgr_.reset();
    history_.reset();
    db_.reset();
    spawner_ = std::make_unique<engine::Spawner>();
    ASSERT_TRUE(spawner_->Start("/run/isb").ok());
    auto db = store::Db::Open(dir_ + "/isb.db", store::Migrations());
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(*db);
    auto layout = engine::DetectCgroupLayout();
    ASSERT_TRUE(layout.ok());
    auto history = audit::History::Open(*db_);
    ASSERT_TRUE(history.ok()) << history.error().message;
    history_ = std::move(*history);
    ManagerOptions options{dir_, "/run/isb", [this] { return now_.load(); }};
    options.history = history_.get();
    mgr_ = std::make_unique<SandboxManager>(options, spawner_.get(), db_.get(), *layout);
  }
  void TearDown() override {
    if (dir_.empty()) return;
    std::vector<std::string> ids;
    if (mgr_) {
      auto all = mgr_->List();
      if (all.ok()) {
        for (const auto& s : *all) {
          ids.push_back(s.id);
          EXPECT_TRUE(mgr_->Remove(s.id).ok());
        }
      }
    }
    mgr_.reset();
    history_.reset();
    spawner_.reset();
    // Nothing of this test's sandboxes is left: cgroups, state (leases: see the engine's tests).
    std::error_code ec;
    for (const auto& id : ids)
      for (const char* c : {"memory", "pids", "cpu", "cpuacct"})
        EXPECT_FALSE(std::filesystem::exists(std::string("/sys/fs/cgroup/") + c + "/isb/" + id)) << id;
    EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/sandboxes", ec) || !std::filesystem::exists(dir_ + "/sandboxes"));
    std::filesystem::remove_all(dir_);
  }
  api::ExecResult Exec(const std::string& id, std::vector<std::string> argv) {
    api::ExecRequest req;
    req.argv = std::move(argv);
    auto r = mgr_->Exec(id, req, nullptr);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : api::ExecResult{};
  }
  std::string dir_;
  std::atomic<int64_t> now_{1'000'000};
  std::unique_ptr<engine::Spawner> spawner_;
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<audit::History> history_;
  std::unique_ptr<SandboxManager> mgr_;
};

TEST_F(ManagerTest, CreateExecStopStartRemove) {
  api::SandboxSpec spec;
  spec.name = "box1";
  spec.environment = {{"GREETING", "hello"}};
  spec.working_dir = "/tmp";
  auto sb = mgr_->Create(spec);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  EXPECT_EQ(sb->state, "running");
  EXPECT_EQ(sb->id.size(), 19u);
  auto r = Exec("box1", {"sh", "-c", "echo $GREETING $(pwd) $(hostname) > /root/f; cat /root/f"});
  EXPECT_EQ(r.stdout_data, "hello /tmp box1\n");
  EXPECT_EQ(mgr_->Create(spec).error().code, Code::kConflict);

  ASSERT_TRUE(mgr_->Stop(sb->id).ok());
  EXPECT_EQ(mgr_->Get(sb->id)->state, "stopped");
  api::ExecRequest req;
  req.argv = {"true"};
  EXPECT_EQ(mgr_->Exec(sb->id, req, nullptr).error().code, Code::kConflict);
  ASSERT_TRUE(mgr_->Start(sb->id).ok());
  // The writable layer survives a stop.
  EXPECT_EQ(Exec(sb->id, {"cat", "/root/f"}).stdout_data, "hello /tmp box1\n");
  ASSERT_TRUE(mgr_->Remove("box1").ok());
  EXPECT_EQ(mgr_->Get(sb->id).error().code, Code::kNotFound);
  auto events = mgr_->Events(sb->id);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].first, "created");
  EXPECT_EQ(events[1].first, "stopped");
  EXPECT_EQ(events[2].first, "started");
  EXPECT_EQ(events[3].first, "removed");
}

TEST_F(ManagerTest, HistoryEventsCarryTheSandboxesOrg) {
  api::SandboxSpec spec;
  spec.labels[api::kOrgLabel] = "acme";
  auto acme = mgr_->Create(spec);
  ASSERT_TRUE(acme.ok()) << acme.error().message;
  auto plain = mgr_->Create({});  // from before orgs: the default org
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  ASSERT_TRUE(mgr_->Stop(acme->id).ok());
  ASSERT_TRUE(mgr_->Remove(acme->id).ok());
  Restart();  // the new manager adopts the running one
  ASSERT_TRUE(mgr_->Adopt().ok());
  auto events = history_->Query({});
  ASSERT_TRUE(events.ok()) << events.error().message;
  std::vector<std::string> got;
  for (const auto& e : *events)
    got.push_back((e.entry.sandbox == acme->id ? "acme-box " : "plain-box ") + e.entry.org + " " + e.entry.event);
  EXPECT_EQ(got, (std::vector<std::string>{"acme-box acme created", "plain-box default created",
                                           "acme-box acme stopped", "acme-box acme removed",
                                           "plain-box default adopted"}));
  auto only = history_->Query({.org = "acme"});
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(only->size(), 3u);
}

TEST_F(ManagerTest, FilesResolveInsideTheSandbox) {
  auto sb = mgr_->Create({});
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  auto w = mgr_->WriteFile(sb->id, "/tmp/a.txt", {"data\n", 0640});
  ASSERT_TRUE(w.ok()) << w.error().message;
  auto r = Exec(sb->id, {"sh", "-c", "cat /tmp/a.txt; stat -c '%a %u' /tmp/a.txt"});
  EXPECT_EQ(r.stdout_data, "data\n640 0\n");
  // A symlink to a host path resolves inside the sandbox's root: the host's file is not reached.
  Exec(sb->id, {"ln", "-s", "/etc/shadow", "/tmp/link"});
  auto shadow = mgr_->ReadFile(sb->id, "/tmp/link");
  ASSERT_FALSE(shadow.ok());
  EXPECT_EQ(shadow.error().code, Code::kNotFound);
  Exec(sb->id, {"ln", "-s", "/proc/1/environ", "/tmp/p"});
  EXPECT_EQ(mgr_->ReadFile(sb->id, "/tmp/p").error().code, Code::kForbidden);
  EXPECT_EQ(mgr_->ReadFile(sb->id, "/proc/1/environ").error().code, Code::kForbidden);
  EXPECT_EQ(mgr_->ReadFile(sb->id, "/tmp/../dev/null").error().code, Code::kForbidden);
  EXPECT_EQ(mgr_->WriteFile(sb->id, "/usr/bin/x", {"x", 0644}).error().code, Code::kForbidden);  // EROFS
  auto back = mgr_->ReadFile(sb->id, "/tmp/a.txt");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->content, "data\n");
  EXPECT_EQ(back->mode, 0640u);
}

TEST_F(ManagerTest, ANewDaemonAdoptsRunningSandboxes) {
  auto a = mgr_->Create({});
  auto b = mgr_->Create({});
  ASSERT_TRUE(a.ok() && b.ok());
  Exec(a->id, {"sh", "-c", "echo before > /root/x"});
  Restart();  // the old spawner exits; the sandboxes do not
  // b dies while no daemon runs
  auto rows = db_->Query("SELECT pid FROM sandboxes WHERE id = ?1", {b->id});
  ::kill(static_cast<pid_t>(store::AsInt((*rows)[0][0])), SIGKILL);
  ::usleep(100000);
  auto summary = mgr_->Adopt();
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(*summary, "1 adopted, 1 found dead, 0 unfinished creates undone, 0 orphaned cgroups removed");
  EXPECT_EQ(Exec(a->id, {"cat", "/root/x"}).stdout_data, "before\n");
  EXPECT_EQ(mgr_->Get(b->id)->state, "stopped");
  EXPECT_EQ(mgr_->Events(a->id).back().first, "adopted");
}

TEST_F(ManagerTest, ReaperRemovesExpiredAndIdleWithReasons) {
  api::SandboxSpec exp;
  exp.expires = std::chrono::seconds(60);
  api::SandboxSpec idle;
  idle.idle_timeout = std::chrono::seconds(30);
  api::SandboxSpec keep;
  auto e = mgr_->Create(exp);
  auto i = mgr_->Create(idle);
  auto k = mgr_->Create(keep);
  ASSERT_TRUE(e.ok() && i.ok() && k.ok());
  EXPECT_EQ(mgr_->ReapOnce(), 0);
  now_ += 31;
  EXPECT_EQ(mgr_->ReapOnce(), 1);  // idle
  now_ += 30;
  EXPECT_EQ(mgr_->ReapOnce(), 1);  // expired
  EXPECT_EQ(mgr_->Events(i->id).back(), (std::pair<std::string, std::string>{"reaped", "idle for 31s (no exec, under 2% of a core)"}));
  EXPECT_EQ(mgr_->Events(e->id).back(), (std::pair<std::string, std::string>{"reaped", "expired"}));
  EXPECT_TRUE(mgr_->Get(k->id).ok());
}

TEST_F(ManagerTest, ConcurrentCreatesAndExecs) {
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int t = 0; t < 10; ++t)
    ts.emplace_back([&] {
      auto sb = mgr_->Create({});
      if (!sb.ok()) return;
      api::ExecRequest req;
      req.argv = {"echo", "x"};
      auto r = mgr_->Exec(sb->id, req, nullptr);
      if (r.ok() && r->stdout_data == "x\n") ++ok;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), 10);
}

// Clock ticks since boot, the unit of engine::ProcessStartTime.
uint64_t TicksNow() {
  FILE* f = std::fopen("/proc/uptime", "r");
  double up = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%lf", &up) != 1) up = 0;
    std::fclose(f);
  }
  return static_cast<uint64_t>(up * static_cast<double>(::sysconf(_SC_CLK_TCK)));
}

TEST_F(ManagerTest, CreatesTakeLaunchedSandboxesFromThePoolAndTheManagerRemovesTheRest) {
  ASSERT_TRUE(mgr_->Adopt().ok());
  for (int i = 0; i < 400 && mgr_->PoolSize() < 2; ++i) ::usleep(50000);
  ASSERT_EQ(mgr_->PoolSize(), 2u);
  ::usleep(100000);
  const uint64_t before = TicksNow();
  auto init_started = [&](const std::string& id) {
    auto rows = db_->Query("SELECT pid FROM sandboxes WHERE id = ?1", {id});
    return engine::ProcessStartTime(static_cast<pid_t>(store::AsInt((*rows)[0][0])));
  };
  // A spec that needs only what the daemon applies itself: a sandbox launched before the call.
  api::SandboxSpec plain;
  plain.environment = {{"GREETING", "hello"}};
  plain.working_dir = "/tmp";
  auto pooled = mgr_->Create(plain);
  ASSERT_TRUE(pooled.ok()) << pooled.error().message;
  EXPECT_LT(init_started(pooled->id), before);
  EXPECT_EQ(Exec(pooled->id, {"sh", "-c", "echo $GREETING $(pwd) $(hostname)"}).stdout_data, "hello /tmp sandbox\n");
  EXPECT_EQ(mgr_->Events(pooled->id), (std::vector<std::pair<std::string, std::string>>{{"created", ""}}));
  // A name (the hostname) or other limits: launched for the call.
  api::SandboxSpec named;
  named.name = "named1";
  auto own = mgr_->Create(named);
  ASSERT_TRUE(own.ok()) << own.error().message;
  EXPECT_GE(init_started(own->id), before);
  EXPECT_EQ(Exec("named1", {"hostname"}).stdout_data, "named1\n");
  api::SandboxSpec small;
  small.mem_limit = 64 << 20;
  auto limited = mgr_->Create(small);
  ASSERT_TRUE(limited.ok()) << limited.error().message;
  EXPECT_GE(init_started(limited->id), before);
  // A pooled sandbox stops and starts like any other.
  ASSERT_TRUE(mgr_->Stop(pooled->id).ok());
  ASSERT_TRUE(mgr_->Start(pooled->id).ok());
  EXPECT_EQ(Exec(pooled->id, {"hostname"}).stdout_data, "sandbox\n");

  // The pool refills; what is in it when the manager goes is removed: processes, cgroups, state dirs.
  for (int i = 0; i < 400 && mgr_->PoolSize() < 2; ++i) ::usleep(50000);
  ASSERT_EQ(mgr_->PoolSize(), 2u);
  std::vector<std::string> waiting;
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/sandboxes")) {
    std::string id = e.path().filename().string();
    if (id != pooled->id && id != own->id && id != limited->id) waiting.push_back(id);
  }
  ASSERT_EQ(waiting.size(), 2u);
  for (const auto& id : {pooled->id, own->id, limited->id}) ASSERT_TRUE(mgr_->Remove(id).ok());
  mgr_.reset();
  for (const auto& id : waiting) {
    for (const char* c : {"memory", "pids", "cpu", "cpuacct"})
      EXPECT_FALSE(std::filesystem::exists(std::string("/sys/fs/cgroup/") + c + "/isb/" + id)) << id;
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/sandboxes/" + id)) << id;
  }
}

TEST(Spec, Validation) {
  api::SandboxSpec s;
  EXPECT_TRUE(ValidateSpec(s).ok());
  s = {};
  s.labels = {{"isb.other", "me"}};  // isb.org and isb.owner are set by the tools; any other isb.* is refused
  EXPECT_EQ(ValidateSpec(s).error().code, Code::kInvalidArgument);
  s = {};
  s.expires = std::chrono::seconds(31 * 86400);
  EXPECT_EQ(ValidateSpec(s).error().message, "expires: must be between 1s and 30d");
  s = {};
  s.user = "root";
  EXPECT_NE(ValidateSpec(s).error().message.find("user:"), std::string::npos);
  api::SandboxSpec in;
  in.name = "n";
  in.cpus = 0.5;
  in.labels = {{"a", "b"}};
  api::SandboxSpec r = SpecFromJson(SpecToJson(in));
  EXPECT_EQ(r.name, "n");
  EXPECT_EQ(r.cpus, 0.5);
  EXPECT_EQ(r.labels.at("a"), "b");
}

}  // namespace
}  // namespace isb::daemon
