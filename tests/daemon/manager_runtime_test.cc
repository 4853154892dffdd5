// SandboxManager over a fake runtime: the pool's choice, adoption's bookkeeping, file access rules and the exec and
// terminal path, with no sandbox launched (the writable layers are real: the manager mounts them itself).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <thread>

#include "api/org_sandboxes.h"
#include "audit/history.h"
#include "base/file.h"
#include "daemon/fake_runtime.h"
#include "daemon/sandbox_manager.h"
#include "must_work.h"
#include "store/migrations.h"

namespace isb::daemon {
namespace {

class ManagerOverFakeRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    ISB_REQUIRE_ROOT();
    char tmpl[] = "/tmp/isb-fake-rt-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    runtime_ = std::make_unique<FakeRuntime>(dir_ + "/roots");
    Restart();
  }
  // A new daemon over the same database and the same runtime.
  void Restart() {
    mgr_.reset();
    history_.reset();
    db_.reset();
    auto db = store::Db::Open(dir_ + "/isb.db", store::Migrations());
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(*db);
    auto history = audit::History::Open(*db_);
    ASSERT_TRUE(history.ok()) << history.error().message;
    history_ = std::move(*history);
    ManagerOptions options{dir_ + "/state", "/run/isb", [this] { return now_; }};
    options.history = history_.get();
    options.pool_size = pool_size_;
    options.net_pool_size = 0;
    mgr_ = std::make_unique<SandboxManager>(options, runtime_.get(), db_.get());
  }
  void TearDown() override {
    if (dir_.empty()) return;
    if (mgr_) {
      if (auto all = mgr_->List(); all.ok()) {
        for (const auto& s : *all) EXPECT_TRUE(mgr_->Remove(s.id).ok());
      }
      mgr_->SettleTeardown();
    }
    mgr_.reset();
    history_.reset();
    db_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void FillPool() {
    ASSERT_TRUE(mgr_->Adopt().ok());
    for (int i = 0; i < 400 && mgr_->PoolSize() < pool_size_; ++i) ::usleep(20000);
    ASSERT_EQ(mgr_->PoolSize(), pool_size_);
  }
  api::SandboxInfo Create(const api::SandboxSpec& spec) {
    auto sb = mgr_->Create(spec);
    EXPECT_TRUE(sb.ok()) << sb.error().message;
    return sb.ok() ? *sb : api::SandboxInfo{};
  }
  bool Called(const std::string& call) {
    for (const std::string& c : runtime_->Calls())
      if (c == call) return true;
    return false;
  }

  std::string dir_;
  size_t pool_size_ = 0;
  int64_t now_ = 1'000'000;  // the manager's clock; set only while no call runs
  std::unique_ptr<FakeRuntime> runtime_;
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<audit::History> history_;
  std::unique_ptr<SandboxManager> mgr_;
};

TEST_F(ManagerOverFakeRuntime, ANamedCreateWithLessMemoryTakesAPooledSandboxFittedToItsNameAndLimits) {
  pool_size_ = 1;
  Restart();
  FillPool();
  api::SandboxSpec spec;
  spec.name = "web";
  spec.mem_limit = spec::kDefaultMemLimit / 2;
  api::SandboxInfo sb = Create(spec);
  EXPECT_EQ(sb.create_path, "pool");
  FakeRuntime::Sandbox ran = runtime_->Get(sb.id);
  EXPECT_TRUE(ran.background);
  ASSERT_EQ(ran.fits.size(), 1u);
  EXPECT_EQ(ran.fits[0].hostname, "web");
  EXPECT_TRUE(ran.fits[0].set_limits);
  EXPECT_EQ(ran.fits[0].limits.memory_bytes, spec::kDefaultMemLimit / 2);
  EXPECT_EQ(ran.fits[0].scratch_bytes, spec::kDefaultMemLimit / 2);
}

TEST_F(ManagerOverFakeRuntime, AnUnnamedDefaultCreateFromThePoolIsFittedWithNothing) {
  pool_size_ = 1;
  Restart();
  FillPool();
  api::SandboxInfo sb = Create({});
  EXPECT_EQ(sb.create_path, "pool");
  EXPECT_TRUE(runtime_->Get(sb.id).fits.empty());
}

TEST_F(ManagerOverFakeRuntime, ACreateAskingMoreMemoryThanThePooledOnesHaveStartsColdWithItsOwnLimit) {
  pool_size_ = 1;
  Restart();
  FillPool();
  api::SandboxSpec spec;
  spec.mem_limit = spec::kDefaultMemLimit * 2;
  api::SandboxInfo sb = Create(spec);
  EXPECT_EQ(sb.create_path, "cold");
  FakeRuntime::Sandbox ran = runtime_->Get(sb.id);
  EXPECT_FALSE(ran.background);
  EXPECT_EQ(ran.config.limits.memory_bytes, spec::kDefaultMemLimit * 2);
  EXPECT_EQ(mgr_->PoolSize(), 1u);  // the pooled one is still there
}

TEST_F(ManagerOverFakeRuntime, ACreateWithADiskSizeOfItsOwnStartsCold) {
  pool_size_ = 1;
  Restart();
  FillPool();
  api::SandboxSpec spec;
  spec.disk = spec.disk * 2;
  EXPECT_EQ(Create(spec).create_path, "cold");
}

TEST_F(ManagerOverFakeRuntime, AdoptionKeepsTheRunningSandboxAndRecordsTheOneThatDiedMeanwhile) {
  api::SandboxInfo alive = Create({}), dead = Create({});
  Restart();
  runtime_->Die(dead.id);
  auto summary = mgr_->Adopt();
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(*summary, "1 adopted, 1 found dead, 0 unfinished creates undone, 0 orphaned cgroups removed");
  EXPECT_EQ(mgr_->Events(alive.id).back(), (std::pair<std::string, std::string>{"adopted", ""}));
  EXPECT_EQ(mgr_->Events(dead.id).back(),
            (std::pair<std::string, std::string>{"died", "exited while no daemon was running"}));
  EXPECT_EQ(mgr_->Get(dead.id)->state, "stopped");
  EXPECT_EQ(mgr_->Get(alive.id)->state, "running");
  // The row of the dead one no longer names a runtime record.
  auto rows = db_->Query("SELECT runtime, handle FROM sandboxes WHERE id = ?1", {dead.id});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(store::AsText((*rows)[0][0]), "");
  EXPECT_EQ(store::AsText((*rows)[0][1]), "");
}

TEST_F(ManagerOverFakeRuntime, AdoptionUndoesACreateThePreviousDaemonDidNotFinish) {
  ASSERT_TRUE(db_->Exec("INSERT INTO sandboxes(id, name, spec, state, created_at, expires_at, last_active_at) "
                        "VALUES('sb-00000000000000aa', '', '{}', 'creating', 0, 0, 0)")
                  .ok());
  auto summary = mgr_->Adopt();
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(*summary, "0 adopted, 0 found dead, 1 unfinished creates undone, 0 orphaned cgroups removed");
  EXPECT_TRUE(Called("release sb-00000000000000aa"));
  auto rows = db_->Query("SELECT count(*) FROM sandboxes");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(store::AsInt((*rows)[0][0]), 0);
}

TEST_F(ManagerOverFakeRuntime, AdoptionReleasesWhatTheRuntimeHoldsForASandboxTheDatabaseDoesNotKnow) {
  const std::string orphan = "sb-00000000000000bb";
  runtime_->HoldOrphan(orphan);
  ASSERT_TRUE(MakeDirs(dir_ + "/state/sandboxes/" + orphan, 0711).ok());
  // One the runtime holds whose state dir is not this daemon's is left alone.
  runtime_->HoldOrphan("sb-00000000000000cc");
  auto summary = mgr_->Adopt();
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(*summary, "0 adopted, 0 found dead, 0 unfinished creates undone, 1 orphaned cgroups removed");
  EXPECT_TRUE(Called("release " + orphan));
  EXPECT_FALSE(Called("release sb-00000000000000cc"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/state/sandboxes/" + orphan));
}

TEST_F(ManagerOverFakeRuntime, AStoppedSandboxKeepsNothingOfItsRuntimeAfterAdoption) {
  api::SandboxInfo sb = Create({});
  ASSERT_TRUE(mgr_->Stop(sb.id).ok());
  EXPECT_TRUE(Called("kill " + sb.id));
  Restart();
  ASSERT_TRUE(mgr_->Adopt().ok());
  EXPECT_TRUE(Called("release " + sb.id));
}

TEST_F(ManagerOverFakeRuntime, ExecRunsThroughTheRuntimeAndReturnsItsOutputAndExitCode) {
  api::SandboxInfo sb = Create({});
  runtime_->SetExitCode(3);
  api::ExecRequest req;
  req.argv = {"true"};
  auto r = mgr_->Exec(sb.id, req, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->stdout_data, "ran true\n");
  ASSERT_TRUE(mgr_->Stop(sb.id).ok());
  auto stopped = mgr_->Exec(sb.id, req, nullptr);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().message, "sandbox '" + sb.id + "' is stopped; start it first");
}

TEST_F(ManagerOverFakeRuntime, ATerminalSessionsInputAndResizeReachTheRuntimeAsMessages) {
  api::SandboxInfo sb = Create({});
  api::ExecRequest req;
  req.argv = {"sh"};
  req.tty = true;
  req.caller = "rest:user:ann";
  Status typed = Error::Msg("not called"), resized = Error::Msg("not called"), other = Error::Msg("not called");
  req.on_session = [&](const std::string& session) {
    typed = mgr_->ExecInput(sb.id, session, "rest:user:ann", "ls\n", true);
    resized = mgr_->ExecResize(sb.id, session, "rest:user:ann", 40, 100);
    other = mgr_->ExecInput(sb.id, session, "rest:user:bob", "x", false);  // another caller's is refused
  };
  auto r = mgr_->Exec(sb.id, req, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(typed.ok()) << typed.error().message;
  EXPECT_TRUE(resized.ok()) << resized.error().message;
  EXPECT_FALSE(other.ok());
  EXPECT_EQ(runtime_->TerminalInput(), (std::vector<std::string>{"stdin:ls\n", "eof", "resize:40x100"}));
}

// An interactive terminal (idle_timeout 300 ms) typed into every 100 ms for 600 ms lives on past twice its idle
// limit, then, left alone, is ended with the idle error; a caller's going away is still its own error.
TEST_F(ManagerOverFakeRuntime, AnInteractiveTerminalLivesWhileTypedIntoAndEndsOnceIdleForItsLimit) {
  runtime_->HoldTerminals();
  api::SandboxInfo sb = Create({});
  api::ExecRequest req;
  req.argv = {"sh"};
  req.tty = true;
  req.caller = "rest:user:ann";
  req.idle_timeout = std::chrono::milliseconds(300);
  req.timeout = std::chrono::hours(24);
  std::vector<Status> typed;
  std::thread typist;
  req.on_session = [&](const std::string& session) {
    typist = std::thread([&, session] {
      for (int i = 0; i < 6; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        typed.push_back(mgr_->ExecInput(sb.id, session, "rest:user:ann", "x", false));
      }
    });
  };
  const auto start = std::chrono::steady_clock::now();
  auto r = mgr_->Exec(sb.id, req, nullptr);
  const auto took = std::chrono::steady_clock::now() - start;
  typist.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTimeout);
  EXPECT_EQ(r.error().message, "the terminal had no input for 300 ms (its idle_timeout) and was ended; open a new one");
  EXPECT_GE(took, std::chrono::milliseconds(900));  // 600 ms typed, then 300 ms quiet
  EXPECT_LT(took, std::chrono::milliseconds(3000));
  ASSERT_EQ(typed.size(), 6u);
  for (const Status& s : typed) EXPECT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(runtime_->TerminalInput(), std::vector<std::string>(6, "stdin:x"));

  // The caller's own cancel, before the idle limit: the runtime's error, not the idle one.
  req.on_session = nullptr;
  req.idle_timeout = std::chrono::minutes(30);
  req.cancelled = [] { return true; };
  auto gone = mgr_->Exec(sb.id, req, nullptr);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, Code::kUnavailable);
}

// Output is not a person: a terminal printing every 10 ms that nobody types into is ended once its idle limit
// (300 ms) passes, with the idle error, long before the caller's own 3 s give-up.
TEST_F(ManagerOverFakeRuntime, AnInteractiveTerminalThatOnlyPrintsEndsOnceIdleForItsLimit) {
  runtime_->HoldTerminals();
  api::SandboxInfo sb = Create({});
  api::ExecRequest req;
  req.argv = {"sh"};
  req.tty = true;
  req.caller = "rest:user:ann";
  req.idle_timeout = std::chrono::milliseconds(300);
  req.timeout = std::chrono::hours(24);
  const auto start = std::chrono::steady_clock::now();
  req.cancelled = [start] { return std::chrono::steady_clock::now() - start > std::chrono::seconds(3); };
  size_t printed = 0;
  auto r = mgr_->Exec(sb.id, req, [&](int stream, std::string_view data) {
    EXPECT_EQ(stream, 1);
    EXPECT_EQ(data, "tick\n");
    ++printed;
  });
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTimeout);
  EXPECT_EQ(r.error().message, "the terminal had no input for 300 ms (its idle_timeout) and was ended; open a new one");
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::milliseconds(2000));
  EXPECT_GE(printed, 10u);  // it printed all along
  EXPECT_EQ(runtime_->TerminalInput(), std::vector<std::string>{});
}

TEST_F(ManagerOverFakeRuntime, UsageIsTheRuntimes) {
  api::SandboxInfo sb = Create({});
  engine::CgroupStats usage;
  usage.cpu_usec = 1234;
  usage.memory_bytes = 5 << 20;
  usage.pids = 7;
  runtime_->SetUsage(sb.id, usage);
  auto info = mgr_->Get(sb.id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->usage.cpu_usec, 1234u);
  EXPECT_EQ(info->usage.memory_bytes, 5u << 20);
  EXPECT_EQ(info->usage.pids, 7u);
}

// Who asked is handed down with each lifecycle call: the history of what a tool call did (through the org's view,
// as every tool acts) names its caller, the caller's kind and the call's request id; what the reaper does is the
// daemon's own, with no actor.
TEST_F(ManagerOverFakeRuntime, TheHistoryNamesEachToolCallsCallerAndNoneForTheReaper) {
  api::CallContext ctx;
  ctx.org = "acme";
  ctx.identity.kind = identity::PrincipalKind::kUser;
  ctx.identity.user_name = "ann";
  api::OrgSandboxes sb(*mgr_, ctx);
  auto as = [&](const std::string& request_id) -> api::OrgSandboxes& {
    ctx.request_id = request_id;
    return sb;
  };
  auto a = as("req-1").Create({});
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto b = as("req-2").Create({});
  ASSERT_TRUE(b.ok()) << b.error().message;
  ASSERT_TRUE(as("req-3").Stop(a->id).ok());
  ASSERT_TRUE(as("req-4").Start(a->id).ok());
  ASSERT_TRUE(as("req-5").Extend(a->id, std::chrono::seconds(60)).ok());
  ASSERT_TRUE(as("req-6").Remove(a->id).ok());
  // The same calls on the manager itself, with no origin, are the daemon's own as well.
  auto c = mgr_->Create({});
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE(mgr_->Remove(c->id).ok());
  now_ = b->expires_at;
  ASSERT_EQ(mgr_->ReapOnce(), 1);

  auto events = history_->Query({});
  ASSERT_TRUE(events.ok()) << events.error().message;
  std::vector<std::string> got;
  for (const auto& e : *events) {
    const std::string which = e.entry.sandbox == a->id ? "a" : e.entry.sandbox == b->id ? "b" : "c";
    got.push_back(which + " " + e.entry.event + " [" + e.entry.actor + "] [" + e.entry.actor_kind + "] [" +
                  e.entry.request_id + "] [" + e.entry.reason + "]");
  }
  EXPECT_EQ(got, (std::vector<std::string>{
                     "a created [user:ann] [user] [req-1] []",
                     "b created [user:ann] [user] [req-2] []",
                     "a stopped [user:ann] [user] [req-3] [requested]",
                     "a started [user:ann] [user] [req-4] []",
                     "a extended [user:ann] [user] [req-5] [60s]",
                     "a removed [user:ann] [user] [req-6] [requested]",
                     "c created [] [system] [] []",
                     "c removed [] [system] [] [requested]",
                     "b reaped [] [system] [] [expired]",
                 }));
}

// A sandbox a caller's start finds dead: its death is the daemon's finding (as when the reaper or a read notices it),
// the start the caller's.
TEST_F(ManagerOverFakeRuntime, ADeathAStartFindsIsTheDaemonsAndTheStartTheCallers) {
  api::CallContext ctx;
  ctx.org = "acme";
  ctx.identity.kind = identity::PrincipalKind::kUser;
  ctx.identity.user_name = "ann";
  ctx.request_id = "req-9";
  api::OrgSandboxes sb(*mgr_, ctx);
  auto a = sb.Create({});
  ASSERT_TRUE(a.ok()) << a.error().message;
  runtime_->Die(a->id);
  ASSERT_TRUE(sb.Start(a->id).ok());
  auto events = history_->Query({});
  ASSERT_TRUE(events.ok()) << events.error().message;
  std::vector<std::string> got;
  for (const auto& e : *events)
    got.push_back(e.entry.event + " [" + e.entry.actor + "] [" + e.entry.actor_kind + "] [" + e.entry.request_id +
                  "] [" + e.entry.reason + "]");
  EXPECT_EQ(got, (std::vector<std::string>{
                     "created [user:ann] [user] [req-9] []",
                     "stopped [] [system] [] [died]",
                     "started [user:ann] [user] [req-9] []",
                 }));
}

// Previews reach a sandbox's network through the namespace its runtime opens, and belong to the run they were opened
// in: each start is another run, and a stopped sandbox has neither.
TEST_F(ManagerOverFakeRuntime, ASandboxsNetworkIsItsRuntimesAndEachStartIsAnotherRun) {
  api::SandboxInfo sb = Create({});
  Result<Fd> netns = mgr_->OpenNetwork(sb.id);
  ASSERT_TRUE(netns.ok()) << netns.error().message;
  struct stat got {
  }, own{};
  ASSERT_EQ(::fstat(netns->get(), &got), 0);
  ASSERT_EQ(::stat("/proc/self/ns/net", &own), 0);
  EXPECT_EQ(got.st_ino, own.st_ino) << "the fake runtime's sandboxes share the test's network";
  const std::string first = mgr_->RunOf(sb.id);
  EXPECT_EQ(first, "fake " + runtime_->Get(sb.id).record);

  ASSERT_TRUE(mgr_->Stop(sb.id).ok());
  Result<Fd> stopped = mgr_->OpenNetwork(sb.id);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().code, Code::kConflict);
  EXPECT_EQ(stopped.error().message, "sandbox " + sb.id + " is not running");
  EXPECT_EQ(mgr_->RunOf(sb.id), "");

  ASSERT_TRUE(mgr_->Start(sb.id).ok());
  EXPECT_TRUE(mgr_->OpenNetwork(sb.id).ok());
  const std::string second = mgr_->RunOf(sb.id);
  EXPECT_NE(second, "");
  EXPECT_NE(second, first);
}

// File access: through the root the runtime gives, resolved within it, as the sandbox's user.
class FilesOverFakeRuntime : public ManagerOverFakeRuntime {
 protected:
  void SetUp() override {
    ManagerOverFakeRuntime::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    sb_ = Create({});
    root_ = runtime_->Root(sb_.id);
    ASSERT_TRUE(MakeDirs(root_ + "/etc", 0755).ok());
    ASSERT_TRUE(isb::WriteFile(root_ + "/etc/hostname", "inside\n", 0644).ok());
  }
  void TearDown() override {
    if (dev_mounted_) ::umount2((root_ + "/dev").c_str(), MNT_DETACH);
    ManagerOverFakeRuntime::TearDown();
  }
  api::SandboxInfo sb_;
  std::string root_;
  bool dev_mounted_ = false;
};

TEST_F(FilesOverFakeRuntime, AnAbsoluteSymlinkResolvesInsideTheSandboxsRootNotTheHosts) {
  ASSERT_EQ(::symlink("/etc/hostname", (root_ + "/link").c_str()), 0);
  auto f = mgr_->ReadFile(sb_.id, "/link");
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->content, "inside\n");
  EXPECT_EQ(f->mode, 0644u);
}

TEST_F(FilesOverFakeRuntime, AWrittenFileLandsInTheRootWithItsMode) {
  ASSERT_TRUE(mgr_->WriteFile(sb_.id, "/etc/new", {"hello", 0640}).ok());
  auto text = isb::ReadFile(root_ + "/etc/new");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "hello");
  struct stat st {};
  ASSERT_EQ(::stat((root_ + "/etc/new").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST_F(FilesOverFakeRuntime, ProcIsRefusedByItsPath) {
  auto f = mgr_->ReadFile(sb_.id, "/proc/self/status");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code, Code::kForbidden);
  EXPECT_EQ(f.error().message, "path: /proc/self/status is refused (/proc, /sys, /dev and isb's own paths)");
}

TEST_F(FilesOverFakeRuntime, AFifoIsNotServed) {
  ASSERT_EQ(::mkfifo((root_ + "/fifo").c_str(), 0644), 0);
  auto f = mgr_->ReadFile(sb_.id, "/fifo");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code, Code::kInvalidArgument);
  EXPECT_EQ(f.error().message, "path: /fifo is not a regular file");
}

TEST_F(FilesOverFakeRuntime, AFileOnTheMountAtDevIsRefusedWhateverSymlinkLeadsThere) {
  ASSERT_TRUE(MakeDirs(root_ + "/dev", 0755).ok());
  ASSERT_EQ(::mount("tmpfs", (root_ + "/dev").c_str(), "tmpfs", 0, "size=64k"), 0);
  dev_mounted_ = true;
  ASSERT_TRUE(isb::WriteFile(root_ + "/dev/data", "x", 0644).ok());
  ASSERT_EQ(::symlink("/dev/data", (root_ + "/devlink").c_str()), 0);
  auto f = mgr_->ReadFile(sb_.id, "/devlink");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code, Code::kForbidden);
  EXPECT_EQ(f.error().message, "path: /devlink is refused (/proc, /sys, /dev and isb's own paths)");
}

TEST_F(FilesOverFakeRuntime, AStoppedSandboxsFilesAreNotReached) {
  ASSERT_TRUE(mgr_->Stop(sb_.id).ok());
  auto f = mgr_->ReadFile(sb_.id, "/etc/hostname");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code, Code::kConflict);
  EXPECT_EQ(f.error().message, "sandbox '" + sb_.id + "' is not running");
}

}  // namespace
}  // namespace isb::daemon
