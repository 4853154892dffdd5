// SandboxManager against the real engine: lifecycle, files, adoption by a new manager, and the reaper.
#include "daemon/sandbox_manager.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <signal.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <sstream>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "api/org_sandboxes.h"
#include "base/file.h"
#include "audit/history.h"
#include "daemon/mount_table.h"
#include "engine/idmap.h"
#include "must_work.h"
#include "net/loopback.h"
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
    char host_tmpl[] = "/tmp/isb-mgr-host-XXXXXX";
    ASSERT_NE(::mkdtemp(host_tmpl), nullptr);
    host_ = host_tmpl;
    ::chmod(host_.c_str(), 0711);  // the sandbox's root, an unprivileged host uid, reaches its mounts through it
    Restart();
  }
  // A new daemon over the same state: new spawner, new database connection, new manager (whose state dir is
  // `state_dir` when given: the database stays in dir_).
  void Restart(const std::string& state_dir = "") {
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
    ManagerOptions options{state_dir.empty() ? dir_ : state_dir, "/run/isb", [this] { return now_.load(); }};
    options.history = history_.get();
    options.pool_size = pool_size_;
    options.on_kill = [this](const std::string& id) {
      if (on_kill_) on_kill_(id);
    };
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
    for (const auto& id : ids) ExpectNoCgroup(id);
    EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/sandboxes", ec) || !std::filesystem::exists(dir_ + "/sandboxes"));
    std::filesystem::remove_all(dir_);
    std::filesystem::remove_all(host_);
  }

  // `id` is the only sandbox: a create that failed left no row (not even a stopped one) and no history event.
  void ExpectOnlySandbox(const std::string& id) {
    auto rows = db_->Query("SELECT count(*) FROM sandboxes");
    ASSERT_TRUE(rows.ok());
    EXPECT_EQ(store::AsInt((*rows)[0][0]), 1);
    auto events = history_->Query({});
    ASSERT_TRUE(events.ok());
    for (const auto& e : *events)
      EXPECT_EQ(e.entry.sandbox, id) << "the failed create left a history event: " << e.entry.event;
  }

  // Adopts, which starts the pool, and waits until the pool is full and its last launch has settled.
  void FillPool() {
    ASSERT_TRUE(mgr_->Adopt().ok());
    for (int i = 0; i < 400 && mgr_->PoolSize() < 2; ++i) ::usleep(50000);
    ASSERT_EQ(mgr_->PoolSize(), 2u);
    ::usleep(100000);
  }
  // An echo server on the sandbox's own loopback port 8080, in a session of its own so it outlives the exec.
  api::ExecResult StartEcho(const std::string& id) {
    return Exec(id, {"sh", "-c",
                     "setsid python3 -c \"import socket\n"
                     "s = socket.socket(); s.bind(('127.0.0.1', 8080)); s.listen()\n"
                     "while True:\n"
                     "    c, _ = s.accept(); d = b''\n"
                     "    while (b := c.recv(100)): d += b\n"
                     "    c.sendall(b'echo:' + d); c.close()\" </dev/null >/dev/null 2>&1 &\n"
                     "for i in $(seq 100); do grep -q ' 0100007F:1F90 ' /proc/net/tcp && exit 0; "
                     "sleep 0.05; done; exit 1"});
  }
  api::ExecResult Exec(const std::string& id, std::vector<std::string> argv) {
    api::ExecRequest req;
    req.argv = std::move(argv);
    auto r = mgr_->Exec(id, req, nullptr);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : api::ExecResult{};
  }
  // No cgroup directory of `id` in any hierarchy of this host's layout (v2 or v1).
  static void ExpectNoCgroup(const std::string& id) {
    auto layout = engine::DetectCgroupLayout();
    ASSERT_TRUE(layout.ok());
    engine::Cgroup cg = engine::Cgroup::Adopt(*layout, id);
    ASSERT_FALSE(cg.dirs().empty()) << id;
    for (const auto& dir : cg.dirs()) EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
    cg.Release();
  }
  // Gone, or a zombie its parent (the spawner) has yet to reap.
  static bool Dead(pid_t pid) {
    auto stat = isb::ReadFile("/proc/" + std::to_string(pid) + "/stat");
    if (!stat.ok()) return true;
    size_t paren = stat->rfind(')');
    return paren != std::string::npos && paren + 2 < stat->size() && (*stat)[paren + 2] == 'Z';
  }
  std::string dir_;   // the daemon's state dir
  std::string host_;  // host files for the sandboxes to mount, outside the state dir (which none may see)
  std::atomic<int64_t> now_{1'000'000};
  std::unique_ptr<engine::Spawner> spawner_;
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<audit::History> history_;
  std::unique_ptr<SandboxManager> mgr_;
  std::function<void(const std::string&)> on_kill_;  // what the manager's on_kill does
  size_t pool_size_ = 2;                             // the next Restart's ManagerOptions::pool_size
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

// An exec's command starts with standard input, output and error and nothing else of the init's or the daemon's:
// ls lists those and the directory it reads.
TEST_F(ManagerTest, AnExecInheritsNoOtherDescriptor) {
  auto sb = mgr_->Create({});
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  EXPECT_EQ(Exec(sb->id, {"ls", "/proc/self/fd"}).stdout_data, "0\n1\n2\n3\n");
}

// The egress parser names egress in each of its messages: the manager passes them on as they are, never as
// "egress: egress: ..." or "egress: egress entry ...".
TEST_F(ManagerTest, AnEgressRefusalNamesEgressOnce) {
  api::SandboxSpec entry;
  entry.egress = nlohmann::json::array({"1.2.3.4"});
  Result<api::SandboxInfo> refused = mgr_->Create(entry);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kInvalidArgument);
  EXPECT_EQ(refused.error().message, "egress entry '1.2.3.4': IP addresses are refused; list the host's name");
  api::SandboxSpec key;
  key.egress = nlohmann::json{{"allowed", nlohmann::json::array()}};
  refused = mgr_->Create(key);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.error().message.starts_with("egress: unknown key 'allowed' (")) << refused.error().message;
}

// A daemon sandbox (no egress) opens no vsock socket (one port space for the machine, across namespaces) nor a
// family it has no use for, as isb run's do not (the escape suite covers those).
TEST_F(ManagerTest, ASandboxOpensNoVsockOrOtherUnneededSocketFamily) {
  auto sb = mgr_->Create({});
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  const char* script =
      "import errno, socket\n"
      "def tried(*a):\n"
      "    try:\n"
      "        socket.socket(*a).close(); return 'ok'\n"
      "    except OSError as e:\n"
      "        return errno.errorcode[e.errno]\n"
      "print(tried(socket.AF_VSOCK, socket.SOCK_STREAM), tried(30, socket.SOCK_RDM), "
      "tried(socket.AF_ALG, socket.SOCK_SEQPACKET), tried(socket.AF_NETLINK, socket.SOCK_DGRAM, 9), "
      "tried(socket.AF_INET, socket.SOCK_STREAM), tried(socket.AF_NETLINK, socket.SOCK_DGRAM, 0))\n";
  EXPECT_EQ(Exec(sb->id, {"python3", "-c", script}).stdout_data,
            "EAFNOSUPPORT EAFNOSUPPORT EAFNOSUPPORT EPROTONOSUPPORT ok ok\n");
}

// The host's process and file tables: a sandbox may not ask for more pids than the host leaves its sandboxes (all of
// them together are bounded so on isb's parent cgroup), and each of its processes may open 1024 files, 4096 at most.
TEST_F(ManagerTest, PidsAreBoundedByTheHostAndOpenFilesPerProcess) {
  const engine::PidsBound& host = engine::HostPidsBound();
  api::SandboxSpec big;
  big.pids = host.sandboxes() + 1;
  auto refused = mgr_->Create(big);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kInvalidArgument);
  EXPECT_EQ(refused.error().message, "pids: must be between 2 and " + host.Describe());
  if (host.pid_max == 32768) {
    EXPECT_EQ(host.Describe(), "28672 (the host's 32768 tasks less the 4096 this host keeps for itself)");
  }
  auto sb = mgr_->Create({});
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  EXPECT_EQ(Exec(sb->id, {"sh", "-c", "ulimit -Sn; ulimit -Hn"}).stdout_data, "1024\n4096\n");
  auto layout = engine::DetectCgroupLayout();
  ASSERT_TRUE(layout.ok());
  const std::string parent = (layout->v2 ? layout->v2_root : layout->pids) + "/isb/pids.max";
  auto bound = isb::ReadFile(parent);
  ASSERT_TRUE(bound.ok()) << bound.error().message;
  EXPECT_EQ(*bound, std::to_string(host.sandboxes()) + "\n");
}

// Nothing a sandbox reads of its mounts names where the daemon keeps its state (a host path, and the layout of other
// tenants' sandboxes): not in the default view, and not with an image, whose overlay names its layers relative to
// the staging dir it was mounted from.
TEST_F(ManagerTest, ASandboxsMountinfoNamesNoHostStatePath) {
  auto plain = mgr_->Create({});
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  const std::string info = Exec(plain->id, {"cat", "/proc/self/mountinfo"}).stdout_data;
  ASSERT_FALSE(info.empty());
  EXPECT_EQ(info.find(dir_), std::string::npos) << info;

  ASSERT_TRUE(std::filesystem::exists("/bin/busybox")) << "the busybox-static package provides /bin/busybox";
  const std::string image = host_ + "/busybox";
  std::filesystem::create_directories(image + "/bin");
  std::filesystem::copy_file("/bin/busybox", image + "/bin/busybox");
  for (const char* applet : {"cat", "sh"}) std::filesystem::create_symlink("busybox", image + "/bin/" + applet);
  for (const std::string& dir : {host_, image, image + "/bin"})
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                          std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                          std::filesystem::perms::others_exec);
  api::SandboxSpec spec;
  spec.image = image;
  auto imaged = mgr_->Create(spec);
  ASSERT_TRUE(imaged.ok()) << imaged.error().message;
  const std::string layered = Exec(imaged->id, {"/bin/cat", "/proc/self/mountinfo"}).stdout_data;
  EXPECT_NE(layered.find(" / / rw,nosuid,nodev,relatime - overlay overlay rw,lowerdir=image,upperdir=layer/upper,"
                         "workdir=layer/work"),
            std::string::npos)
      << layered;
  EXPECT_EQ(layered.find(dir_), std::string::npos) << layered;
  EXPECT_EQ(layered.find(host_), std::string::npos) << layered;
}

// A sandbox's control socket, through which its init runs any command as any of its users, is root's alone on the
// host (0600; it listens only once it is, so no one connects before).
TEST_F(ManagerTest, TheControlSocketIsRootsAlone) {
  auto sb = mgr_->Create({});
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  struct stat st {};
  ASSERT_EQ(::lstat((dir_ + "/sandboxes/" + sb->id + "/control.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, 0u);
}

// The writable layer is a filesystem of the spec's disk size: full inside at that size, mounted on the host only
// while the sandbox runs, its data kept in the image across a stop, and nothing of it left after removal.
TEST_F(ManagerTest, TheLayerIsAFilesystemOfTheSpecsDiskSize) {
  api::SandboxSpec spec;
  spec.disk = 32 << 20;
  auto sb = mgr_->Create(spec);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  EXPECT_EQ(sb->spec.disk, 32u << 20);
  EXPECT_EQ(mgr_->Get(sb->id)->spec.disk, 32u << 20);  // as stored
  const std::string image = dir_ + "/sandboxes/" + sb->id + "/layer.img";
  const std::string layer = dir_ + "/sandboxes/" + sb->id + "/layer";
  EXPECT_EQ(isb::testing::MountsOn(layer).size(), 1u);
  EXPECT_EQ(isb::testing::LoopsOf(image).size(), 1u);
  auto full =
      Exec(sb->id, {"sh", "-c", "echo kept > /root/f && dd if=/dev/zero of=/big bs=1M count=40 2>&1 | head -1"});
  EXPECT_EQ(full.stdout_data, "dd: error writing '/big': No space left on device\n");

  ASSERT_TRUE(mgr_->Stop(sb->id).ok());
  EXPECT_TRUE(isb::testing::MountsOn(layer).empty());
  EXPECT_TRUE(isb::testing::LoopsOf(image).empty());
  ASSERT_TRUE(mgr_->Start(sb->id).ok());
  EXPECT_EQ(Exec(sb->id, {"cat", "/root/f"}).stdout_data, "kept\n");

  auto rows = db_->Query("SELECT pid FROM sandboxes WHERE id = ?1", {sb->id});
  ASSERT_TRUE(rows.ok() && rows->size() == 1u);
  const pid_t init = static_cast<pid_t>(store::AsInt((*rows)[0][0]));
  ASSERT_TRUE(mgr_->Remove(sb->id).ok());
  // Dead and forgotten when the removal returns; its layer and state dir go after (teardown_queue.h).
  EXPECT_TRUE(Dead(init)) << "the sandbox's init " << init << " still runs";
  ExpectNoCgroup(sb->id);
  EXPECT_EQ(mgr_->Get(sb->id).error().code, Code::kNotFound);
  mgr_->SettleTeardown();
  EXPECT_TRUE(isb::testing::MountsOn(layer).empty());
  EXPECT_TRUE(isb::testing::LoopsOf(image).empty());
  EXPECT_FALSE(std::filesystem::exists(image));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/sandboxes/" + sb->id));
}

// A start that fails leaves the sandbox stopped as it was: no process, no cgroup, its layer unmounted.
TEST_F(ManagerTest, AFailedStartLeavesTheSandboxStoppedAndItsLayerUnmounted) {
  const std::string src = host_ + "/shared";
  std::filesystem::create_directories(src);
  ::chmod(src.c_str(), 0755);
  api::SandboxSpec spec;
  spec.mounts = {{src, "/data", true}};
  auto sb = mgr_->Create(spec);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  ASSERT_TRUE(mgr_->Stop(sb->id).ok());
  // The bind's source becomes a symlink, which the engine refuses to follow.
  std::filesystem::remove(src);
  std::filesystem::create_directories(host_ + "/elsewhere");
  std::filesystem::create_directory_symlink(host_ + "/elsewhere", src);
  auto started = mgr_->Start(sb->id);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(mgr_->Get(sb->id)->state, "stopped");
  const std::string layer = dir_ + "/sandboxes/" + sb->id + "/layer";
  EXPECT_TRUE(isb::testing::MountsOn(layer).empty()) << "the layer stayed mounted after the failed start";
  ExpectNoCgroup(sb->id);
  EXPECT_EQ(mgr_->Events(sb->id).back().first, "failed");
  std::filesystem::remove(src);
  ASSERT_TRUE(mgr_->Remove(sb->id).ok());
}

// A FIFO the sandbox's root leaves where setup writes a file (its hostname, in its own layer) fails the next start
// at once, where the open for writing would wait for a reader for good, holding the sandbox's lock (and with it
// the reaper) and the start's caller.
TEST_F(ManagerTest, AFifoInTheLayerFailsTheNextStartAtOnce) {
  auto sb = mgr_->Create({});
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  EXPECT_EQ(Exec(sb->id, {"sh", "-c", "rm /etc/hostname && mkfifo /etc/hostname && echo made"}).stdout_data, "made\n");
  ASSERT_TRUE(mgr_->Stop(sb->id).ok());
  auto started = std::async(std::launch::async, [&] { return mgr_->Start(sb->id); });
  ASSERT_EQ(started.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "the start hung on the FIFO";
  auto r = started.get();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("Invalid argument"), std::string::npos) << r.error().message;
  EXPECT_EQ(mgr_->Get(sb->id)->state, "stopped");
  ASSERT_TRUE(mgr_->Remove(sb->id).ok());
}

// A daemon that dies after a removal returned but before its teardown ran leaves the state dir (its layer still
// mounted) with no row: the next daemon's Adopt finishes the removal.
TEST_F(ManagerTest, ANewDaemonFinishesATeardownTheLastOneDidNotRun) {
  auto sb = mgr_->Create({});
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  const std::string dir = dir_ + "/sandboxes/" + sb->id;
  auto rows = db_->Query("SELECT pid FROM sandboxes WHERE id = ?1", {sb->id});
  ASSERT_TRUE(rows.ok() && rows->size() == 1u);
  const pid_t init = static_cast<pid_t>(store::AsInt((*rows)[0][0]));
  // What Remove has done by the time it returns: the sandbox killed, its row deleted.
  ASSERT_EQ(::kill(init, SIGKILL), 0);
  ASSERT_TRUE(db_->Exec("DELETE FROM sandboxes WHERE id = ?1", {sb->id}).ok());
  for (int i = 0; i < 100 && !Dead(init); ++i) ::usleep(10000);
  ASSERT_EQ(isb::testing::MountsOn(dir + "/layer").size(), 1u);
  Restart();
  auto summary = mgr_->Adopt();
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(*summary, "0 adopted, 0 found dead, 0 unfinished creates undone, 1 orphaned cgroups removed");
  EXPECT_TRUE(isb::testing::MountsOn(dir + "/layer").empty());
  EXPECT_TRUE(isb::testing::LoopsOf(dir + "/layer.img").empty());
  EXPECT_FALSE(std::filesystem::exists(dir));
  ExpectNoCgroup(sb->id);
}

TEST_F(ManagerTest, MountsBindTheRealPathAndNeverFollowALaterSymlink) {
  const std::string share = host_ + "/share";
  std::filesystem::create_directories(share);
  std::filesystem::permissions(share, std::filesystem::perms::all);  // the sandbox's root is an unprivileged host uid
  ASSERT_TRUE(isb::WriteFile(share + "/hello", "hello\n").ok());
  std::filesystem::create_symlink(share, host_ + "/via");
  api::SandboxSpec spec;
  spec.mounts = {{host_ + "/via", "/mnt/share", false}, {share + "/hello", "/etc/greeting", true}};
  auto sb = mgr_->Create(spec);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  // Stored as the real path; bound where asked, writable or read-only as asked.
  EXPECT_EQ(sb->spec.mounts[0].source, share);
  EXPECT_EQ(Exec(sb->id, {"cat", "/mnt/share/hello", "/etc/greeting"}).stdout_data, "hello\nhello\n");
  EXPECT_EQ(Exec(sb->id, {"sh", "-c", "echo hi > /mnt/share/new"}).exit_code, 0);
  auto written = isb::ReadFile(share + "/new");
  EXPECT_EQ(written.ok() ? *written : "", "hi\n");
  auto ro = Exec(sb->id, {"sh", "-c", "echo x > /etc/greeting"});
  EXPECT_EQ(ro.exit_code, 2);
  EXPECT_EQ(ro.stderr_data, "sh: 1: cannot create /etc/greeting: Read-only file system\n");

  // The source is swapped for a symlink while the sandbox is stopped: the next start binds nothing.
  ASSERT_TRUE(mgr_->Stop(sb->id).ok());
  std::filesystem::rename(share, host_ + "/moved");
  std::filesystem::create_symlink(host_ + "/moved", share);
  auto started = mgr_->Start(sb->id);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().message, "sandbox setup failed while building the root filesystem (bind " + share +
                                         " (no symlinks) on /run/isb/staging/root/mnt/share): Too many levels of "
                                         "symbolic links");
  EXPECT_EQ(mgr_->Get(sb->id)->state, "stopped");

  api::SandboxSpec missing;
  missing.mounts = {{host_ + "/nothing", "/mnt/x", true}};
  EXPECT_EQ(mgr_->Create(missing).error().message, "mounts[0].source: '" + host_ + "/nothing' does not exist");
}

// isb's own directories are kept out by what they really are, however the daemon was told them: a state dir given
// through a symlink (or a relative path) is judged by its real path and the directories really above it.
TEST_F(ManagerTest, IsbsOwnDirectoriesAreKeptOutWhateverPathNamesThem) {
  std::filesystem::create_directories(host_ + "/real/state");
  std::filesystem::create_directory_symlink(host_ + "/real/state", host_ + "/link");
  Restart(host_ + "/link");
  for (const std::string& source : {host_ + "/real", host_ + "/real/state", host_ + "/link"}) {
    api::SandboxSpec spec;
    spec.mounts = {{source, "/mnt/x", true}};
    auto created = mgr_->Create(spec);
    ASSERT_FALSE(created.ok()) << source;
    EXPECT_EQ(created.error().code, Code::kForbidden) << source << ": " << created.error().message;
  }
}

// A running sandbox that a new daemon finds mounting one of isb's own directories (one an older isb made, its row
// written here as such) is stopped, with the reason, and cannot start again. One whose source is merely gone now,
// or has a symlink on it, is adopted as it is: it never saw what the path would lead to today.
TEST_F(ManagerTest, ANewDaemonStopsASandboxThatMountsIsbsOwnDirectory) {
  std::vector<std::string> ids;
  for (const char* name : {"/old", "/gone", "/swapped"}) {
    std::filesystem::create_directories(host_ + name);
    std::filesystem::permissions(host_ + name, std::filesystem::perms::all);
    api::SandboxSpec spec;
    spec.mounts = {{host_ + name, "/mnt/data", true}};
    auto sb = mgr_->Create(spec);
    ASSERT_TRUE(sb.ok()) << sb.error().message;
    ids.push_back(sb->id);
  }
  auto rows = db_->Query("SELECT spec FROM sandboxes WHERE id = ?1", {ids[0]});
  ASSERT_TRUE(rows.ok() && rows->size() == 1u);
  nlohmann::json old_spec = nlohmann::json::parse(store::AsText((*rows)[0][0]));
  old_spec["mounts"][0]["source"] = std::filesystem::canonical(dir_).string();
  ASSERT_TRUE(db_->Exec("UPDATE sandboxes SET spec = ?2 WHERE id = ?1", {ids[0], old_spec.dump()}).ok());
  std::filesystem::remove(host_ + "/gone");
  std::filesystem::rename(host_ + "/swapped", host_ + "/swapped-was");
  std::filesystem::create_directory_symlink("/", host_ + "/swapped");

  Restart();
  ASSERT_TRUE(mgr_->Adopt().ok());
  EXPECT_EQ(mgr_->Get(ids[0])->state, "stopped");
  const std::string why = "mounts[0].source: '" + std::filesystem::canonical(dir_).string() +
                          "' is or holds a directory of isb's own, which no sandbox may see";
  EXPECT_EQ(mgr_->Events(ids[0]).back(), (std::pair<std::string, std::string>{"stopped", why}));
  auto started = mgr_->Start(ids[0]);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().message, why);
  for (size_t i : {size_t{1}, size_t{2}}) {
    EXPECT_EQ(mgr_->Get(ids[i])->state, "running") << i;
    EXPECT_EQ(mgr_->Events(ids[i]).back().first, "adopted") << i;
  }
  std::filesystem::remove(host_ + "/swapped");
}

// An image is stored as its real path and mounted without following any symlink: a directory on its path swapped
// for a symlink while the sandbox is stopped fails the next start, instead of layering what the link points to.
TEST_F(ManagerTest, AnImagePathSwappedForASymlinkFailsTheStart) {
  const std::string image = host_ + "/tree/image";
  std::filesystem::create_directories(image + "/etc");
  std::filesystem::create_directories(host_ + "/decoy/image/etc");
  std::filesystem::create_directory_symlink(host_ + "/tree", host_ + "/via");
  for (const std::string& dir : {host_ + "/tree", image, host_ + "/decoy", host_ + "/decoy/image"})
    std::filesystem::permissions(dir, std::filesystem::perms::all);
  api::SandboxSpec spec;
  spec.image = host_ + "/via/image";
  auto sb = mgr_->Create(spec);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  EXPECT_EQ(sb->spec.image, image);
  ASSERT_TRUE(mgr_->Stop(sb->id).ok());
  std::filesystem::rename(host_ + "/tree", host_ + "/moved");
  std::filesystem::create_directory_symlink(host_ + "/decoy", host_ + "/tree");
  auto started = mgr_->Start(sb->id);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().message, "sandbox setup failed while building the root filesystem (image " + image +
                                         " (no symlinks) on /run/isb/staging/image): Too many levels of symbolic "
                                         "links");
  EXPECT_EQ(mgr_->Get(sb->id)->state, "stopped");
}

// isb's own directories reach no sandbox, whoever asks: neither the state dir (the database, the API's socket, the
// sandboxes' control sockets) nor what is in it nor a directory that holds it may be mounted or be an image.
TEST_F(ManagerTest, IsbsOwnDirectoriesCannotBeMountedOrBeAnImage) {
  const std::string state = std::filesystem::canonical(dir_).string();
  const std::string holder = std::filesystem::path(state).parent_path().string();
  auto refusal = [](const std::string& field, const std::string& path, const std::string&) {
    return field + ": '" + path + "' is or holds a directory of isb's own, which no sandbox may see";
  };
  for (const std::string& source : {state, state + "/isb.db", holder}) {
    api::SandboxSpec spec;
    spec.mounts = {{source, "/mnt/x", true}};
    auto created = mgr_->Create(spec);
    ASSERT_FALSE(created.ok()) << source;
    EXPECT_EQ(created.error().code, Code::kForbidden);
    EXPECT_EQ(created.error().message, refusal("mounts[0].source", source, state));
  }
  for (const std::string& source : {state, holder}) {
    api::SandboxSpec image;
    image.image = source;
    EXPECT_EQ(mgr_->Create(image).error().message, refusal("image", source, state)) << source;
  }
  // Through a symlink too: it is the real path that counts.
  std::filesystem::create_directory_symlink(state, host_ + "/state-link");
  api::SandboxSpec linked;
  linked.mounts = {{host_ + "/state-link", "/mnt/x", true}};
  EXPECT_EQ(mgr_->Create(linked).error().message, refusal("mounts[0].source", state, state));
  // Nor through a bind mount of it elsewhere: the same directory by device and inode.
  const std::string alias = host_ + "/alias";
  std::filesystem::create_directories(alias);
  ASSERT_EQ(::mount(state.c_str(), alias.c_str(), nullptr, MS_BIND, nullptr), 0) << std::strerror(errno);
  struct Unmount {
    std::string at;
    ~Unmount() { EXPECT_EQ(::umount2(at.c_str(), MNT_DETACH), 0) << at << ": " << std::strerror(errno); }
  };
  Result<api::SandboxInfo> through_alias = Error::Msg("not tried");
  {
    Unmount unmount{alias};
    api::SandboxSpec aliased;
    aliased.mounts = {{alias + "/sandboxes", "/mnt/x", true}};
    std::filesystem::create_directories(state + "/sandboxes");
    through_alias = mgr_->Create(aliased);
  }
  ASSERT_FALSE(through_alias.ok());
  EXPECT_EQ(through_alias.error().message, refusal("mounts[0].source", alias + "/sandboxes", state));
  // A path the API resolved and checked is kept only while no symlink is on it: one that has come since (the
  // bind root's tree swapped by someone who can write it) is refused, not followed.
  std::filesystem::create_directories(host_ + "/root/real");
  std::filesystem::create_directory_symlink(host_ + "/root/real", host_ + "/root/swapped");
  api::SandboxSpec checked;
  checked.mounts = {{host_ + "/root/swapped", "/mnt/x", true}};
  checked.paths_checked = true;
  EXPECT_EQ(
      mgr_->Create(checked).error().message,
      "mounts[0].source: '" + host_ + "/root/swapped' changed since it was checked (a symlink is on its path now)");
  // A directory beside it is fine.
  std::filesystem::permissions(host_, std::filesystem::perms::all);
  api::SandboxSpec beside;
  beside.mounts = {{host_, "/mnt/x", true}};
  auto ok = mgr_->Create(beside);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_TRUE(mgr_->Remove(ok->id).ok());
  EXPECT_TRUE(mgr_->List()->empty());
}

// A free TCP port on the host's loopback.
uint16_t FreePort() { return testing::FreeTcpPort().value(); }

// Connects to 127.0.0.2:port (the default publish address), sends `data`, half-closes and reads until EOF: what came
// back, or "errno N".
std::string RoundTrip(uint16_t port, const std::string& data) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{5, 0};
  ::setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(0x7f000002);
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::string e = "errno " + std::to_string(errno);
    ::close(s);
    return e;
  }
  (void)::send(s, data.data(), data.size(), MSG_NOSIGNAL);
  ::shutdown(s, SHUT_WR);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(s, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  if (n < 0) out += "errno " + std::to_string(errno);
  ::close(s);
  return out;
}

TEST_F(ManagerTest, PublishedPortsReachTheSandboxsLoopbackWhileItRuns) {
  const uint16_t port = FreePort(), idle = FreePort();
  api::SandboxSpec spec;
  spec.ports = {{8080, port, "127.0.0.2"}, {8081, idle, "127.0.0.2"}};
  auto sb = mgr_->Create(spec);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  EXPECT_EQ(sb->spec.ports, spec.ports);
  auto started = StartEcho(sb->id);
  ASSERT_EQ(started.exit_code, 0) << started.stderr_data;
  EXPECT_EQ(RoundTrip(port, "hello"), "echo:hello");
  EXPECT_EQ(RoundTrip(port, std::string(200000, 'x')), "echo:" + std::string(200000, 'x'));
  // Nothing listens on 8081 inside: the connection is accepted and closed (data sent meanwhile would be unread,
  // and the close a reset, so none is sent).
  EXPECT_EQ(RoundTrip(idle, ""), "");

  // A port another sandbox holds: refused naming it, and nothing of the second sandbox stays.
  api::SandboxSpec taken;
  taken.ports = {{9000, port, "127.0.0.2"}};
  auto second = mgr_->Create(taken);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, Code::kConflict);
  EXPECT_EQ(second.error().message, "ports[0]: 127.0.0.2:" + std::to_string(port) + ": Address already in use");
  EXPECT_EQ(mgr_->List()->size(), 1u);
  // It never existed for anyone: no row of it was ever visible (stopped), and the history has no event of it.
  ASSERT_NO_FATAL_FAILURE(ExpectOnlySandbox(sb->id));

  // Published only while it runs.
  ASSERT_TRUE(mgr_->Stop(sb->id).ok());
  EXPECT_EQ(RoundTrip(port, "hello"), "errno " + std::to_string(ECONNREFUSED));
  ASSERT_TRUE(mgr_->Start(sb->id).ok());
  EXPECT_EQ(RoundTrip(port, ""), "");  // published again; its server went with the stop
  ASSERT_TRUE(mgr_->Remove(sb->id).ok());
  EXPECT_EQ(RoundTrip(port, "hello"), "errno " + std::to_string(ECONNREFUSED));
}

// A pooled sandbox publishes its ports before its create returns, and a port in use refuses the create as a cold
// one's does, leaving no row or history event.
TEST_F(ManagerTest, APooledSandboxPublishesItsPortsAsAColdOneDoes) {
  ASSERT_NO_FATAL_FAILURE(FillPool());
  const uint16_t port = FreePort();
  api::SandboxSpec spec;
  spec.ports = {{8080, port, "127.0.0.2"}};
  auto sb = mgr_->Create(spec);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  EXPECT_EQ(sb->create_path, "pool");
  auto started = StartEcho(sb->id);
  ASSERT_EQ(started.exit_code, 0) << started.stderr_data;
  EXPECT_EQ(RoundTrip(port, "hello"), "echo:hello");
  api::SandboxSpec taken;
  taken.ports = {{9000, port, "127.0.0.2"}};
  auto second = mgr_->Create(taken);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, Code::kConflict);
  EXPECT_EQ(second.error().message, "ports[0]: 127.0.0.2:" + std::to_string(port) + ": Address already in use");
  ASSERT_NO_FATAL_FAILURE(ExpectOnlySandbox(sb->id));
  ASSERT_TRUE(mgr_->Remove(sb->id).ok());
  EXPECT_EQ(RoundTrip(port, "hello"), "errno " + std::to_string(ECONNREFUSED));
}

// A host port another program took while no daemon ran cannot be published again when a new daemon adopts the
// sandbox: the sandbox is stopped, recorded as a start that could not publish is, rather than left running while that
// program answers on its port; once the port is free, a start publishes it again.
TEST_F(ManagerTest, ANewDaemonStopsASandboxWhosePortWasTakenMeanwhile) {
  const uint16_t port = FreePort();
  api::SandboxSpec spec;
  spec.ports = {{8080, port, "127.0.0.2"}};
  auto sb = mgr_->Create(spec);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  auto rows = db_->Query("SELECT pid FROM sandboxes WHERE id = ?1", {sb->id});
  ASSERT_TRUE(rows.ok() && rows->size() == 1u);
  const pid_t pid = static_cast<pid_t>(store::AsInt((*rows)[0][0]));
  Restart();  // the old daemon's listener goes with it; the sandbox runs on
  ASSERT_FALSE(Dead(pid));
  Fd squatter(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(0x7f000002);
  ASSERT_EQ(::bind(squatter.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  ASSERT_EQ(::listen(squatter.get(), 8), 0);

  auto summary = mgr_->Adopt();
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(*summary, "0 adopted, 0 found dead, 0 unfinished creates undone, 0 orphaned cgroups removed");
  EXPECT_EQ(mgr_->Get(sb->id)->state, "stopped");
  const std::string why = "ports[0]: 127.0.0.2:" + std::to_string(port) + ": Address already in use";
  EXPECT_EQ(mgr_->Events(sb->id).back(), (std::pair<std::string, std::string>{"failed", why}));
  auto history = history_->Query({.sandbox = sb->id});
  ASSERT_TRUE(history.ok()) << history.error().message;
  ASSERT_FALSE(history->empty());
  EXPECT_EQ(history->back().entry.event + " " + history->back().entry.reason, "stopped failed");
  for (int i = 0; i < 100 && !Dead(pid); ++i) ::usleep(10000);
  EXPECT_TRUE(Dead(pid)) << "the sandbox runs on without its port";
  ExpectNoCgroup(sb->id);

  // isb holds nothing of the port: once its squatter is gone, nothing listens there.
  squatter.Reset();
  EXPECT_EQ(RoundTrip(port, "hello"), "errno " + std::to_string(ECONNREFUSED));
  auto started = mgr_->Start(sb->id);
  ASSERT_TRUE(started.ok()) << started.error().message;
  EXPECT_EQ(started->state, "running");
  EXPECT_EQ(RoundTrip(port, ""), "");  // published again: accepted, and closed as nothing listens on 8080 inside
  EXPECT_EQ(mgr_->Events(sb->id).back().first, "started");
}

// A spec that publishes where a browser reaches isb is neither created nor, stored by an isb from before that rule,
// started or adopted: a running one is halted when a new daemon adopts it, the reason in its events.
TEST_F(ManagerTest, NoSandboxPublishesWhereABrowserReachesIsb) {
  const std::string why =
      ": that is where \"localhost\" leads: a browser signed in to isb there sends its session "
      "cookie to every port of that host, and the sandbox's server would receive it; publish on "
      "another address, such as 127.0.0.2 (the default)";
  const uint16_t port = FreePort();
  api::SandboxSpec refused;
  refused.ports = {{8080, port, "127.0.0.1"}};
  auto made = mgr_->Create(refused);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.error().code, Code::kForbidden);
  EXPECT_EQ(made.error().message, "ports[0]: publishing on 127.0.0.1" + why);
  EXPECT_TRUE(mgr_->List()->empty());

  api::SandboxSpec spec;
  spec.ports = {{8080, port, "127.0.0.2"}};
  auto sb = mgr_->Create(spec);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  auto rows = db_->Query("SELECT pid FROM sandboxes WHERE id = ?1", {sb->id});
  ASSERT_TRUE(rows.ok() && rows->size() == 1u);
  const pid_t pid = static_cast<pid_t>(store::AsInt((*rows)[0][0]));
  // As an older isb stored it: on 127.0.0.1.
  ASSERT_TRUE(
      db_->Exec("UPDATE sandboxes SET spec = replace(spec, '127.0.0.2', '127.0.0.1') WHERE id = ?1", {sb->id}).ok());
  Restart();
  auto summary = mgr_->Adopt();
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(*summary, "0 adopted, 0 found dead, 0 unfinished creates undone, 0 orphaned cgroups removed");
  EXPECT_EQ(mgr_->Get(sb->id)->state, "stopped");
  EXPECT_EQ(mgr_->Events(sb->id).back(),
            (std::pair<std::string, std::string>{"failed", "ports[0]: publishing on 127.0.0.1" + why}));
  for (int i = 0; i < 100 && !Dead(pid); ++i) ::usleep(10000);
  EXPECT_TRUE(Dead(pid));
  ExpectNoCgroup(sb->id);
  EXPECT_EQ(RoundTrip(port, "hello"), "errno " + std::to_string(ECONNREFUSED));
  auto started = mgr_->Start(sb->id);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().message, "ports[0]: publishing on 127.0.0.1" + why);
  EXPECT_EQ(mgr_->Get(sb->id)->state, "stopped");
  ASSERT_TRUE(mgr_->Remove(sb->id).ok());
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
  EXPECT_EQ(got,
            (std::vector<std::string>{"acme-box acme created", "plain-box default created", "acme-box acme stopped",
                                      "acme-box acme removed", "plain-box default adopted"}));
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

// /dev and /dev/shm are tmpfs, whose pages are charged to whoever writes them: through the file tools, the daemon,
// past the sandbox's own memory limit. Refused by name, they must be refused whatever symlink leads there, for reads
// and writes, before anything is made there; and a new file is never made at the end of a symlink.
TEST_F(ManagerTest, TheFileToolsReachNothingOnDevThroughASymlink) {
  auto sb = mgr_->Create({});
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  ASSERT_EQ(Exec(sb->id, {"sh", "-c",
                          "echo hi > /dev/shm/x && ln -s /dev/shm /tmp/s && ln -s /dev/shm/x /tmp/sx && "
                          "ln -s /dev /tmp/d && ln -s /dev/shm/new /tmp/nothing"})
                .exit_code,
            0);
  for (const std::string path : {"/tmp/s/x", "/tmp/sx", "/tmp/d/shm/x"}) {
    auto read = mgr_->ReadFile(sb->id, path);
    ASSERT_FALSE(read.ok()) << path;
    EXPECT_EQ(read.error().code, Code::kForbidden) << path;
    EXPECT_EQ(read.error().message, "path: " + path + " is refused (/proc, /sys, /dev and isb's own paths)");
  }
  for (const std::string path : {"/tmp/s/x", "/tmp/sx", "/tmp/s/y", "/tmp/d/y", "/tmp/d/shm/y"}) {
    Status written = mgr_->WriteFile(sb->id, path, {"changed\n", 0644});
    ASSERT_FALSE(written.ok()) << path;
    EXPECT_EQ(written.error().code, Code::kForbidden) << path << ": " << written.error().message;
  }
  Status dangling = mgr_->WriteFile(sb->id, "/tmp/nothing", {"x", 0644});
  ASSERT_FALSE(dangling.ok());
  EXPECT_EQ(dangling.error().code, Code::kConflict);
  EXPECT_EQ(dangling.error().message,
            "path: /tmp/nothing is a symlink to nothing, or was made meanwhile; a symlink "
            "is never followed to make a file");
  EXPECT_EQ(Exec(sb->id, {"sh", "-c", "cat /dev/shm/x; ls /dev/shm /dev | grep -c -e '^y$' -e '^new$'"}).stdout_data,
            "hi\n0\n");
  // Elsewhere, symlinks inside the sandbox are followed as before.
  ASSERT_TRUE(mgr_->WriteFile(sb->id, "/tmp/plain", {"plain\n", 0600}).ok());
  ASSERT_EQ(Exec(sb->id, {"ln", "-s", "/tmp/plain", "/tmp/to-plain"}).exit_code, 0);
  ASSERT_TRUE(mgr_->WriteFile(sb->id, "/tmp/to-plain", {"again\n", 0600}).ok());
  auto back = mgr_->ReadFile(sb->id, "/tmp/to-plain");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->content, "again\n");
}

// A write that finds no room is refused with the file as it was: the space is taken before a byte of it changes.
TEST_F(ManagerTest, AWriteThatFindsNoSpaceLeavesTheFileAsItWas) {
  api::SandboxSpec small;
  small.mem_limit = 16 << 20;  // /tmp: a tmpfs of 16 MiB
  auto sb = mgr_->Create(small);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  const std::string kept(100 << 10, 'k');
  ASSERT_TRUE(mgr_->WriteFile(sb->id, "/tmp/keep", {kept, 0644}).ok());
  for (int i = 0; i < 7; ++i)
    ASSERT_TRUE(mgr_->WriteFile(sb->id, "/tmp/f" + std::to_string(i), {std::string(2 << 20, 'x'), 0644}).ok()) << i;
  ASSERT_TRUE(mgr_->WriteFile(sb->id, "/tmp/f7", {std::string(1 << 20, 'x'), 0644}).ok());  // under 1 MiB left
  Status full = mgr_->WriteFile(sb->id, "/tmp/keep", {std::string(2 << 20, 'n'), 0644});
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, Code::kTooLarge);
  EXPECT_EQ(full.error().message, "path: no space left for /tmp/keep in the sandbox");
  auto back = mgr_->ReadFile(sb->id, "/tmp/keep");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(back->content == kept) << "the file changed: " << back->content.size() << " bytes";
  // A shorter content replaces a longer one whole.
  ASSERT_TRUE(mgr_->WriteFile(sb->id, "/tmp/keep", {"short\n", 0644}).ok());
  EXPECT_EQ(Exec(sb->id, {"cat", "/tmp/keep"}).stdout_data, "short\n");
}

// What a sandbox can make a path into (a symlink loop, a FIFO nobody reads, a socket) is the caller's error, named as
// such, never an internal one; nothing blocks.
TEST_F(ManagerTest, PathsTheSandboxMadeStrangeAreTheCallersError) {
  auto sb = mgr_->Create({});
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  ASSERT_EQ(
      Exec(sb->id, {"sh", "-c", "ln -s loop-b /tmp/loop-a && ln -s loop-a /tmp/loop-b && mkfifo /tmp/fifo"}).exit_code,
      0);
  for (const std::string path : {"/tmp/loop-a", "/tmp/fifo"}) {
    auto read = mgr_->ReadFile(sb->id, path);
    ASSERT_FALSE(read.ok()) << path;
    EXPECT_EQ(read.error().code, Code::kInvalidArgument) << path << ": " << read.error().message;
    auto written = mgr_->WriteFile(sb->id, path, {"x", 0644});
    ASSERT_FALSE(written.ok()) << path;
    EXPECT_EQ(written.error().code, Code::kInvalidArgument) << path << ": " << written.error().message;
  }
  EXPECT_EQ(Exec(sb->id, {"sh", "-c", "test -p /tmp/fifo && echo still a fifo"}).stdout_data, "still a fifo\n");
}

// The file tools act as the sandbox's user with none of the daemon's own supplementary groups: a file in a bind
// that only a group of the daemon's may write stays as the sandbox's user would find it.
TEST_F(ManagerTest, TheFileToolsCarryNoneOfTheDaemonsGroups) {
  const std::string share = host_ + "/groups";
  std::filesystem::create_directories(share);
  std::filesystem::permissions(share, std::filesystem::perms::all);
  ASSERT_TRUE(isb::WriteFile(share + "/group-only", "kept\n").ok());
  ASSERT_EQ(::chown((share + "/group-only").c_str(), 0, 4242), 0);
  ASSERT_EQ(::chmod((share + "/group-only").c_str(), 0060), 0);
  api::SandboxSpec spec;
  spec.mounts = {{share, "/mnt/share", false}};
  auto sb = mgr_->Create(spec);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  // This thread (the one the tools run on here) holds group 4242, as a daemon started with it would.
  const int n = ::getgroups(0, nullptr);
  std::vector<gid_t> saved(static_cast<size_t>(std::max(n, 0)));
  if (n > 0) {
    ASSERT_EQ(::getgroups(n, saved.data()), n);
  }
  const gid_t extra = 4242;
  ASSERT_EQ(::syscall(SYS_setgroups, 1, &extra), 0) << std::strerror(errno);
  auto written = mgr_->WriteFile(sb->id, "/mnt/share/group-only", {"changed\n", 0060});
  auto read = mgr_->ReadFile(sb->id, "/mnt/share/group-only");
  ASSERT_EQ(::syscall(SYS_setgroups, saved.size(), saved.data()), 0);
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.error().code, Code::kForbidden) << written.error().message;
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, Code::kForbidden) << read.error().message;
  auto still = isb::ReadFile(share + "/group-only");
  EXPECT_EQ(still.ok() ? *still : "", "kept\n");
}

// A stored spec whose user no longer parses (specs are checked when stored; a row changed since) runs no command,
// where an exec used to fall back to root.
TEST_F(ManagerTest, AnExecForAUserThatDoesNotParseRunsNothing) {
  api::SandboxSpec spec;
  spec.user = "1000:1000";
  auto sb = mgr_->Create(spec);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  ASSERT_TRUE(
      db_->Exec("UPDATE sandboxes SET spec = json_set(spec, '$.user', 'no such user') WHERE id = ?1", {sb->id}).ok());
  api::ExecRequest req;
  req.argv = {"id", "-u"};
  auto r = mgr_->Exec(sb->id, req, nullptr);
  ASSERT_FALSE(r.ok()) << "ran as uid " << r->stdout_data;
  EXPECT_EQ(r.error().code, Code::kConflict);
  EXPECT_EQ(r.error().message.rfind("sandbox '" + sb->id + "': its spec's user: ", 0), 0u) << r.error().message;
}

TEST_F(ManagerTest, AWriteToAFileTheUserDoesNotOwnKeepsItsModeOrLeavesItAsItWas) {
  auto sb = mgr_->Create({});
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  Exec(sb->id, {"sh", "-c", "echo original > /tmp/h && chown 1000:1000 /tmp/h && chmod 666 /tmp/h"});
  // A mode it may not give: refused, the file untouched.
  auto refused = mgr_->WriteFile(sb->id, "/tmp/h", {"new\n", 0644});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kForbidden);
  EXPECT_EQ(refused.error().message,
            "mode: the sandbox's user does not own /tmp/h, so it may not change its mode; "
            "send the mode it has (0666)");
  EXPECT_EQ(Exec(sb->id, {"sh", "-c", "cat /tmp/h; stat -c '%a %u' /tmp/h"}).stdout_data, "original\n666 1000\n");
  // The mode it has: written, as the user could.
  auto w = mgr_->WriteFile(sb->id, "/tmp/h", {"new\n", 0666});
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(Exec(sb->id, {"sh", "-c", "cat /tmp/h; stat -c '%a %u' /tmp/h"}).stdout_data, "new\n666 1000\n");
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

// A daemon killed in the middle of a start leaves the sandbox running while its row still says stopped. The next
// daemon kills what runs of a stopped sandbox before it could be started again beside it (two inits over one layer,
// its image mounted twice).
TEST_F(ManagerTest, ANewDaemonLeavesNothingRunningOfASandboxItsRowSaysIsStopped) {
  auto a = mgr_->Create({});
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto rows = db_->Query("SELECT pid FROM sandboxes WHERE id = ?1", {a->id});
  ASSERT_TRUE(rows.ok() && rows->size() == 1);
  const pid_t pid = static_cast<pid_t>(store::AsInt((*rows)[0][0]));
  ASSERT_FALSE(Dead(pid));
  Restart();
  ASSERT_TRUE(db_->Exec("UPDATE sandboxes SET state = 'stopped', pid = 0, start_time = 0 WHERE id = ?1", {a->id}).ok());
  ASSERT_TRUE(mgr_->Adopt().ok());
  for (int i = 0; i < 100 && !Dead(pid); ++i) ::usleep(10000);
  EXPECT_TRUE(Dead(pid)) << "the sandbox of a stopped row still runs";
  ExpectNoCgroup(a->id);
  auto started = mgr_->Start(a->id);
  ASSERT_TRUE(started.ok()) << started.error().message;
  const std::string layer = dir_ + "/sandboxes/" + a->id + "/layer";
  int mounted = 0;
  auto mountinfo = isb::ReadFile("/proc/self/mountinfo");
  ASSERT_TRUE(mountinfo.ok());
  std::istringstream info(*mountinfo);
  for (std::string line; std::getline(info, line);)
    if (line.find(" " + layer + " ") != std::string::npos) ++mounted;
  EXPECT_EQ(mounted, 1) << "its layer is mounted " << mounted << " times";
  EXPECT_EQ(Exec(a->id, {"true"}).exit_code, 0);
}

// Names are unique per org: each org's "box" is its own, through OrgSandboxes (as every tool acts), before and
// after a new daemon adopts them. A bare name used in two orgs names neither.
TEST_F(ManagerTest, EachOrgHasItsOwnNames) {
  api::CallContext in_default, in_acme;
  in_default.identity = in_acme.identity = api::Identity::Host();
  in_acme.org = "acme";
  api::SandboxSpec spec;
  spec.name = "box";
  std::map<std::string, std::string> ids;  // by org
  for (const api::CallContext* ctx : {&in_default, &in_acme}) {
    spec.environment = {{"ORG", ctx->org}};
    auto sb = api::OrgSandboxes(*mgr_, *ctx).Create(spec);
    ASSERT_TRUE(sb.ok()) << sb.error().message;
    ids[ctx->org] = sb->id;
    auto row = db_->Query("SELECT org FROM sandboxes WHERE id = ?1", {sb->id});
    ASSERT_TRUE(row.ok() && row->size() == 1u);
    EXPECT_EQ(store::AsText((*row)[0][0]), ctx->org);
  }
  for (const api::CallContext* ctx : {&in_default, &in_acme}) {
    auto dup = api::OrgSandboxes(*mgr_, *ctx).Create(spec);
    ASSERT_FALSE(dup.ok());
    EXPECT_EQ(dup.error().code, Code::kConflict);
    EXPECT_EQ(dup.error().message, "name: 'box' is in use");
  }
  auto bare = mgr_->Get("box");
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.error().code, Code::kConflict);
  EXPECT_EQ(bare.error().message, "name: 'box' is used in more than one org; use the sandbox's id");

  auto each_resolves_to_its_own = [&](bool write) {
    for (const api::CallContext* ctx : {&in_default, &in_acme}) {
      api::OrgSandboxes sb(*mgr_, *ctx);
      auto got = sb.Get("box");
      ASSERT_TRUE(got.ok()) << got.error().message;
      EXPECT_EQ(got->id, ids[ctx->org]);
      api::ExecRequest req;
      req.argv = {"sh", "-c", "echo $ORG $(hostname)"};
      auto out = sb.Exec("box", req, nullptr);
      ASSERT_TRUE(out.ok()) << out.error().message;
      EXPECT_EQ(out->stdout_data, ctx->org + " box\n");
      if (write) {
        ASSERT_TRUE(sb.WriteFile("box", "/root/f", {"of " + ctx->org, 0600}).ok());
      }
      auto file = sb.ReadFile("box", "/root/f");
      ASSERT_TRUE(file.ok()) << file.error().message;
      EXPECT_EQ(file->content, "of " + ctx->org);
    }
  };
  each_resolves_to_its_own(true);
  // Stopping acme's box leaves default's running; starting it by name starts acme's.
  api::OrgSandboxes acme(*mgr_, in_acme), dflt(*mgr_, in_default);
  EXPECT_EQ(acme.Stop("box")->id, ids["acme"]);
  EXPECT_EQ(mgr_->Get(ids["acme"])->state, "stopped");
  EXPECT_EQ(mgr_->Get(ids["default"])->state, "running");
  EXPECT_EQ(acme.Start("box")->id, ids["acme"]);

  Restart();
  ASSERT_TRUE(mgr_->Adopt().ok());
  each_resolves_to_its_own(false);

  api::OrgSandboxes acme2(*mgr_, in_acme), dflt2(*mgr_, in_default);
  ASSERT_TRUE(dflt2.Remove("box").ok());
  EXPECT_EQ(mgr_->Get(ids["default"]).error().code, Code::kNotFound);
  EXPECT_EQ(acme2.Get("box")->id, ids["acme"]);
  EXPECT_EQ(mgr_->Get("box")->id, ids["acme"]);  // one org uses the name now
  // Egress of a sandbox created without a network: default's "box" is gone, acme's answers for itself.
  EXPECT_EQ(dflt2.SetEgress("box", "none").error().message, "no sandbox 'box'");
  EXPECT_EQ(acme2.SetEgress("box", "none").error().message,
            "egress: the sandbox was created with egress none; it has no network to change");
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
  EXPECT_EQ(mgr_->Events(i->id).back(),
            (std::pair<std::string, std::string>{"reaped", "idle for 31s (no exec, under 2% of a core)"}));
  EXPECT_EQ(mgr_->Events(e->id).back(), (std::pair<std::string, std::string>{"reaped", "expired"}));
  EXPECT_TRUE(mgr_->Get(k->id).ok());
}

// What the file tools write to a sandbox's tmpfs is written by the daemon, so the sandbox's memory limit does not
// see it: each tmpfs is sized to that limit instead, which bounds it.
TEST_F(ManagerTest, FileWritesToATmpfsStopAtTheSandboxsMemoryLimit) {
  api::SandboxSpec small;
  small.mem_limit = 16 << 20;
  auto sb = mgr_->Create(small);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  const std::string two_mib(2 << 20, 'x');
  int written = 0;
  Status last;
  for (int i = 0; i < 32 && last.ok(); ++i) {
    last = mgr_->WriteFile(sb->id, "/tmp/f" + std::to_string(i), {two_mib, 0644});
    if (last.ok()) ++written;
  }
  EXPECT_EQ(written, 8);  // 16 MiB
  ASSERT_FALSE(last.ok());
  EXPECT_EQ(last.error().code, Code::kTooLarge);
  EXPECT_EQ(last.error().message, "path: no space left for /tmp/f8 in the sandbox");
  // /dev/shm, which the file tools refuse, has the same bound.
  const std::string sizes =
      "awk '$5 == \"/tmp\" || $5 == \"/dev/shm\" { n = split($NF, o, \",\"); "
      "for (i = 1; i <= n; i++) if (o[i] ~ /^size=/) print $5, o[i] }' /proc/self/mountinfo";
  EXPECT_EQ(Exec(sb->id, {"sh", "-c", sizes}).stdout_data, "/dev/shm size=16384k\n/tmp size=16384k\n");
}

// A sandbox's last activity: an exec running shows as activity now, and the row records when the last exec started
// and when it ended (once per second at most).
TEST_F(ManagerTest, AnExecIsActivityWhileItRunsAndIsRecordedWhenItEnds) {
  const int64_t created = now_;
  auto sb = mgr_->Create({});
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  EXPECT_EQ(mgr_->Get(sb->id)->last_active_at, created);
  // Runs until the test writes /tmp/go into the sandbox.
  std::thread slow([&] {
    EXPECT_EQ(Exec(sb->id, {"sh", "-c", "while [ ! -e /tmp/go ]; do sleep 0.01; done"}).exit_code, 0);
  });
  struct Release {
    std::function<void()> fn;
    ~Release() { fn(); }
  } release{[&] {
    (void)mgr_->WriteFile(sb->id, "/tmp/go", {"", 0644});
    if (slow.joinable()) slow.join();
  }};
  for (int i = 0; i < 500 && mgr_->Get(sb->id)->usage.pids < 2; ++i) ::usleep(10000);
  ASSERT_GE(mgr_->Get(sb->id)->usage.pids, 2u) << "the exec never started";
  now_ += 40;
  EXPECT_EQ(mgr_->Get(sb->id)->last_active_at, created + 40);  // running: active now
  auto stored = [&] {
    auto rows = db_->Query("SELECT last_active_at FROM sandboxes WHERE id = ?1", {sb->id});
    return rows.ok() && rows->size() == 1 ? store::AsInt((*rows)[0][0]) : -1;
  };
  EXPECT_EQ(stored(), created);  // nothing written while it runs
  now_ += 5;
  ASSERT_TRUE(mgr_->WriteFile(sb->id, "/tmp/go", {"", 0644}).ok());
  slow.join();
  EXPECT_EQ(stored(), created + 45);  // when it ended
  EXPECT_EQ(mgr_->Get(sb->id)->last_active_at, created + 45);
  now_ += 20;
  EXPECT_EQ(mgr_->Get(sb->id)->last_active_at, created + 45);  // nothing running: the last end
  EXPECT_EQ(Exec(sb->id, {"true"}).exit_code, 0);
  EXPECT_EQ(stored(), created + 65);
}

// A kill that takes long (a sandbox whose processes are slow to go, which the manager waits up to 10 s for) holds
// up its own sandbox only: another sandbox's stop, start, extend, removal and a look at a dead one go on meanwhile.
TEST_F(ManagerTest, ASlowKillHoldsUpOnlyItsOwnSandbox) {
  auto a = mgr_->Create({});
  auto b = mgr_->Create({});
  auto c = mgr_->Create({});
  auto d = mgr_->Create({});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  std::mutex mu;
  std::condition_variable cv;
  bool holding = false, release = false;
  auto let_go = [&] {
    {
      std::lock_guard lock(mu);
      release = true;
    }
    cv.notify_all();
  };
  on_kill_ = [&, held = a->id](const std::string& id) {
    if (id != held) return;
    std::unique_lock lock(mu);
    holding = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  };
  auto stop_a = std::async(std::launch::async, [&] { return mgr_->Stop(a->id); });
  // However the test ends, a's kill is let go, its stop finishes, and then the hook goes, before what it uses.
  struct Cleanup {
    std::function<void()> fn;
    ~Cleanup() { fn(); }
  } cleanup{[&] {
    let_go();
    if (stop_a.valid()) stop_a.wait();
    on_kill_ = nullptr;
  }};
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return holding; }));
  }
  auto rows = db_->Query("SELECT pid FROM sandboxes WHERE id = ?1", {d->id});
  ASSERT_TRUE(rows.ok() && rows->size() == 1u);
  const pid_t d_init = static_cast<pid_t>(store::AsInt((*rows)[0][0]));
  ASSERT_EQ(::kill(d_init, SIGKILL), 0);
  auto others = std::async(std::launch::async, [&] {
    std::vector<std::string> failed;
    auto check = [&](const char* what, bool ok) {
      if (!ok) failed.push_back(what);
    };
    check("stop b", mgr_->Stop(b->id).ok());
    check("start b", mgr_->Start(b->id).ok());
    check("extend b", mgr_->Extend(b->id, std::chrono::seconds(60)).ok());
    check("remove c", mgr_->Remove(c->id).ok());
    // d's init is dead: a look at it records so, under d's lock.
    for (int i = 0; i < 500 && !Dead(d_init); ++i) ::usleep(10000);
    auto got = mgr_->Get(d->id);
    check("get d", got.ok() && got->state == "stopped");
    return failed;
  });
  const bool finished = others.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  let_go();
  EXPECT_TRUE(finished) << "another sandbox's calls waited for a's kill";
  EXPECT_EQ(others.get(), std::vector<std::string>{});
  auto stopped = stop_a.get();
  ASSERT_TRUE(stopped.ok()) << stopped.error().message;
  EXPECT_EQ(stopped->state, "stopped");
  EXPECT_EQ(mgr_->Get(b->id)->state, "running");
  EXPECT_EQ(mgr_->Get(c->id).error().code, Code::kNotFound);
  EXPECT_EQ(mgr_->Events(d->id).back().first, "died");
}

// Idle means a measured share under 2% of a core since the reaper's last pass and no exec running: a quiet exec
// (a sleep, a wait on the network) keeps its sandbox, and a new daemon's first pass, which has measured nothing
// yet, reaps nothing as idle. A sandbox that died is recorded as dead by the next pass.
TEST_F(ManagerTest, TheReaperSparesRunningExecsAndUnmeasuredSandboxesAndNoticesTheDead) {
  api::SandboxSpec idle;
  idle.idle_timeout = std::chrono::seconds(30);
  auto a = mgr_->Create(idle);
  auto b = mgr_->Create(idle);
  auto d = mgr_->Create({});
  ASSERT_TRUE(a.ok() && b.ok() && d.ok());
  EXPECT_EQ(mgr_->ReapOnce(), 0);
  std::thread quiet([&] { EXPECT_EQ(Exec(a->id, {"sleep", "2"}).exit_code, 0); });
  // Until the sleep runs beside init (the exec counts as running from before it starts).
  for (int i = 0; i < 500 && mgr_->Get(a->id)->usage.pids < 2; ++i) ::usleep(10000);
  ASSERT_GE(mgr_->Get(a->id)->usage.pids, 2u) << "the exec never started";
  now_ += 31;
  EXPECT_EQ(mgr_->ReapOnce(), 1);  // b; a has an exec running
  quiet.join();
  EXPECT_EQ(mgr_->Get(a->id)->state, "running");
  EXPECT_EQ(mgr_->Events(b->id).back().first, "reaped");

  // A new daemon: nothing is idle before it has measured.
  Restart();
  ASSERT_TRUE(mgr_->Adopt().ok());
  now_ += 31;
  EXPECT_EQ(mgr_->ReapOnce(), 0);
  EXPECT_EQ(mgr_->Get(a->id)->state, "running");

  auto rows = db_->Query("SELECT pid FROM sandboxes WHERE id = ?1", {d->id});
  ASSERT_TRUE(rows.ok() && rows->size() == 1);
  const pid_t d_init = static_cast<pid_t>(store::AsInt((*rows)[0][0]));
  ASSERT_EQ(::kill(d_init, SIGKILL), 0);
  for (int i = 0; i < 500 && !Dead(d_init); ++i) ::usleep(10000);
  ASSERT_TRUE(Dead(d_init));
  now_ += 31;
  EXPECT_EQ(mgr_->ReapOnce(), 1);  // a, measured idle now; d is recorded dead, not reaped
  EXPECT_EQ(mgr_->Events(a->id).back().first, "reaped");
  auto dead = db_->Query("SELECT state FROM sandboxes WHERE id = ?1", {d->id});
  ASSERT_TRUE(dead.ok() && dead->size() == 1);
  EXPECT_EQ(store::AsText((*dead)[0][0]), "stopped");
  EXPECT_EQ(mgr_->Events(d->id).back(), (std::pair<std::string, std::string>{"died", "its init exited"}));
}

// Idle means under 2% of a core for the whole idle_timeout: a pass that measures more is activity, so a sandbox whose
// background work (started by an exec long ago) has just ended is kept until it has been quiet that long.
TEST_F(ManagerTest, BackgroundWorkIsActivity) {
  api::SandboxSpec spec;
  spec.idle_timeout = std::chrono::seconds(30);
  auto sb = mgr_->Create(spec);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  // A loop that ends after one second of CPU (RLIMIT_CPU), however long the machine takes to give it that.
  EXPECT_EQ(Exec(sb->id, {"sh", "-c", "setsid sh -c 'ulimit -t 1; while :; do :; done' </dev/null >/dev/null 2>&1 &"})
                .exit_code,
            0);
  EXPECT_EQ(mgr_->ReapOnce(), 0);  // the first measure
  for (int i = 0; i < 3000 && mgr_->Get(sb->id)->usage.pids > 1; ++i) ::usleep(10000);
  ASSERT_EQ(mgr_->Get(sb->id)->usage.pids, 1u) << "the loop did not end";
  now_ += 31;
  EXPECT_EQ(mgr_->ReapOnce(), 0);  // busy: 1 s of CPU in 31 s is over 2%
  now_ += 1;
  EXPECT_EQ(mgr_->ReapOnce(), 0);  // quiet for 1 s only
  EXPECT_EQ(mgr_->Get(sb->id)->state, "running");
  now_ += 30;
  EXPECT_EQ(mgr_->ReapOnce(), 1);  // quiet for 31 s
  EXPECT_EQ(mgr_->Events(sb->id).back().first, "reaped");
}

TEST_F(ManagerTest, ConcurrentCreatesAndExecs) {
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  std::mutex mu;
  std::vector<std::string> errors;
  auto failed = [&](const std::string& what) {
    std::lock_guard lock(mu);
    errors.push_back(what);
  };
  for (int t = 0; t < 10; ++t)
    ts.emplace_back([&] {
      auto sb = mgr_->Create({});
      if (!sb.ok()) return failed("create: " + sb.error().message);
      api::ExecRequest req;
      req.argv = {"echo", "x"};
      auto r = mgr_->Exec(sb->id, req, nullptr);
      if (!r.ok()) return failed("exec: " + r.error().message);
      if (r->stdout_data != "x\n") return failed("exec printed '" + r->stdout_data + "'");
      ++ok;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), 10);
  EXPECT_EQ(errors, std::vector<std::string>{});
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
  ASSERT_NO_FATAL_FAILURE(FillPool());
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
  // It was built at the lowest priority, and runs commands at the daemon's own once taken.
  EXPECT_EQ(Exec(pooled->id, {"cut", "-d", " ", "-f", "19", "/proc/self/stat"}).stdout_data,
            std::to_string(::getpriority(PRIO_PROCESS, 0)) + "\n");
  EXPECT_EQ(pooled->create_path, "pool");
  // A name (the hostname) and lower limits are given to a pooled sandbox (the next test compares it with a cold
  // one); another disk size, or limits above those the pool launched with, launch for the call.
  api::SandboxSpec named;
  named.name = "named1";
  auto own = mgr_->Create(named);
  ASSERT_TRUE(own.ok()) << own.error().message;
  EXPECT_LT(init_started(own->id), before);
  EXPECT_EQ(own->create_path, "pool");
  EXPECT_EQ(Exec("named1", {"hostname"}).stdout_data, "named1\n");
  api::SandboxSpec large;
  large.mem_limit = 1024 << 20;
  auto limited = mgr_->Create(large);
  ASSERT_TRUE(limited.ok()) << limited.error().message;
  EXPECT_GE(init_started(limited->id), before);
  EXPECT_EQ(limited->create_path, "cold");
  api::SandboxSpec small_disk;
  small_disk.disk = 64 << 20;
  auto sized = mgr_->Create(small_disk);
  ASSERT_TRUE(sized.ok()) << sized.error().message;
  EXPECT_GE(init_started(sized->id), before);
  EXPECT_EQ(sized->create_path, "cold");
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
    if (id != pooled->id && id != own->id && id != limited->id && id != sized->id) waiting.push_back(id);
  }
  ASSERT_EQ(waiting.size(), 2u);
  // Their layers were made ahead too: a create that takes one makes no filesystem.
  for (const auto& id : waiting)
    EXPECT_EQ(isb::testing::MountsOn(dir_ + "/sandboxes/" + id + "/layer").size(), 1u) << id;
  for (const auto& id : {pooled->id, own->id, limited->id, sized->id}) ASSERT_TRUE(mgr_->Remove(id).ok());
  mgr_.reset();
  for (const auto& id : waiting) {
    EXPECT_TRUE(isb::testing::MountsOn(dir_ + "/sandboxes/" + id + "/layer").empty()) << id;
    EXPECT_TRUE(isb::testing::LoopsOf(dir_ + "/sandboxes/" + id + "/layer.img").empty()) << id;
    ExpectNoCgroup(id);
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/sandboxes/" + id)) << id;
  }
}

// The limits in a sandbox's cgroup files, as the kernel has them: "memory cpu-quota pids", v2 or v1.
std::string CgroupLimits(const std::string& id) {
  auto layout = engine::DetectCgroupLayout();
  if (!layout.ok()) return "no cgroup layout";
  auto read = [](const std::string& path) {
    auto text = isb::ReadFile(path);
    std::string v = text.ok() ? *text : "unreadable " + path;
    while (!v.empty() && v.back() == '\n') v.pop_back();
    return v;
  };
  if (layout->v2) {
    const std::string d = layout->v2_root + "/isb/" + id;
    return read(d + "/memory.max") + " " + read(d + "/memory.swap.max") + " " + read(d + "/cpu.max") + " " +
           read(d + "/pids.max");
  }
  const std::string m = layout->memory + "/isb/" + id;
  std::string memsw = std::filesystem::exists(m + "/memory.memsw.limit_in_bytes")
                          ? read(m + "/memory.memsw.limit_in_bytes")
                          : "no-memsw";
  return read(m + "/memory.limit_in_bytes") + " " + memsw + " " +
         read(layout->cpu + "/isb/" + id + "/cpu.cfs_quota_us") + " " +
         read(layout->cpu + "/isb/" + id + "/cpu.cfs_period_us") + " " +
         read(layout->pids + "/isb/" + id + "/pids.max");
}

// A create that a pooled sandbox serves gives the same sandbox as a cold launch of the same spec: its name as
// hostname and in /etc, its limits in the cgroup files and the scratch tmpfs sizes, its environment, user, working
// dir, labels and events, loopback only; and it is adopted by a new daemon as a cold one is.
TEST_F(ManagerTest, APooledSandboxIsTheColdOneWithTheSameSpec) {
  ASSERT_NO_FATAL_FAILURE(FillPool());
  auto spec_named = [](const std::string& name) {
    api::SandboxSpec s;
    s.name = name;
    s.labels = {{"team", "blue"}};
    s.environment = {{"GREETING", "hello"}};
    s.user = "1000:1000";
    s.working_dir = "/tmp";
    s.mem_limit = 96 << 20;
    s.cpus = 0.5;
    s.pids = 48;
    s.expires = std::chrono::seconds(3600);
    return s;
  };
  auto pooled = mgr_->Create(spec_named("twin-pool"));
  ASSERT_TRUE(pooled.ok()) << pooled.error().message;
  EXPECT_EQ(pooled->create_path, "pool");
  EXPECT_GT(pooled->create_ms, 0);
  // A new daemon with no pool adopts it, and launches the other for its create.
  pool_size_ = 0;
  Restart();
  auto summary = mgr_->Adopt();
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(*summary, "1 adopted, 0 found dead, 0 unfinished creates undone, 0 orphaned cgroups removed");
  auto cold = mgr_->Create(spec_named("twin-cold"));
  ASSERT_TRUE(cold.ok()) << cold.error().message;
  EXPECT_EQ(cold->create_path, "cold");

  const std::string view =
      "echo $(hostname) $(cat /etc/hostname) $GREETING $(id -u):$(id -g) $(pwd); cat /etc/hosts; ls /sys/class/net; "
      "awk '$5 == \"/tmp\" || $5 == \"/dev/shm\" || $5 == \"/etc/resolv.conf\" { $1 = $2 = $3 = \"\"; print }' "
      "/proc/self/mountinfo | sed 's/uid=[0-9]*,gid=[0-9]*/uid=U,gid=G/'; cat /etc/resolv.conf; "
      "ls -ln /etc/hostname /etc/hosts | cut -d' ' -f1-4";
  // (A tmpfs's uid and gid options are the host ids of the sandbox's root: each sandbox's own range.)
  auto seen = [&](const std::string& id, const std::string& name) {
    std::string out = Exec(id, {"sh", "-c", view}).stdout_data;
    for (size_t at; (at = out.find(name)) != std::string::npos;) out.replace(at, name.size(), "NAME");
    return out;
  };
  const std::string from_pool = seen(pooled->id, "twin-pool");
  EXPECT_EQ(from_pool.substr(0, from_pool.find("lo\n") + 3),
            "NAME NAME hello 1000:1000 /tmp\n127.0.0.1 localhost NAME\n::1 localhost\nlo\n");
  EXPECT_NE(from_pool.find("size=98304k"), std::string::npos) << from_pool;
  EXPECT_EQ(from_pool, seen(cold->id, "twin-cold"));
  EXPECT_EQ(CgroupLimits(pooled->id), CgroupLimits(cold->id));
  EXPECT_NE(CgroupLimits(pooled->id).find("100663296"), std::string::npos) << CgroupLimits(pooled->id);

  auto a = mgr_->Get(pooled->id), b = mgr_->Get(cold->id);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->spec.labels, b->spec.labels);
  EXPECT_EQ(a->spec.environment, b->spec.environment);
  EXPECT_EQ(a->expires_at - a->created_at, b->expires_at - b->created_at);
  EXPECT_EQ(mgr_->Events(pooled->id),
            (std::vector<std::pair<std::string, std::string>>{{"created", ""}, {"adopted", ""}}));
  EXPECT_EQ(mgr_->Events(cold->id), (std::vector<std::pair<std::string, std::string>>{{"created", ""}}));
  // Restarted, the pooled one is launched from its spec as the cold one was.
  ASSERT_TRUE(mgr_->Stop(pooled->id).ok());
  ASSERT_TRUE(mgr_->Start(pooled->id).ok());
  EXPECT_EQ(seen(pooled->id, "twin-pool"), from_pool);
  EXPECT_EQ(CgroupLimits(pooled->id), CgroupLimits(cold->id));
}

// A name taken is refused as a cold create refuses it, and the pooled sandbox it would have taken is gone with
// nothing left of it.
// A name in use is refused before a pooled sandbox is spent on it: every sandbox that was there is there after.
TEST_F(ManagerTest, ACreateOfANameInUseIsRefusedWithoutSpendingAPooledSandbox) {
  ASSERT_NO_FATAL_FAILURE(FillPool());
  api::SandboxSpec spec;
  spec.name = "taken";
  auto first = mgr_->Create(spec);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->create_path, "pool");
  std::set<std::string> before;
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/sandboxes")) before.insert(e.path().filename());
  auto second = mgr_->Create(spec);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, Code::kConflict);
  EXPECT_EQ(second.error().message, "name: 'taken' is in use");
  for (const std::string& id : before)
    EXPECT_TRUE(std::filesystem::exists(dir_ + "/sandboxes/" + id)) << id << " was spent on a refused create";
  EXPECT_EQ(Exec("taken", {"hostname"}).stdout_data, "taken\n");
}

// privileged and idmap change the sandbox's user namespace, which a pooled sandbox has already: never from the pool.
TEST_F(ManagerTest, PrivilegedAndIdmapSandboxesAreLaunchedForTheirCreate) {
  ASSERT_NO_FATAL_FAILURE(FillPool());
  const uint64_t before = TicksNow();
  auto launch = [&](const std::string& id) {
    auto rows = db_->Query("SELECT pid, lease_index, uid_base FROM sandboxes WHERE id = ?1", {id});
    return std::tuple{engine::ProcessStartTime(static_cast<pid_t>(store::AsInt((*rows)[0][0]))),
                      store::AsInt((*rows)[0][1]), store::AsInt((*rows)[0][2])};
  };
  api::SandboxSpec privileged;
  privileged.privileged = true;
  auto p = mgr_->Create(privileged);
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto [p_started, p_lease, p_base] = launch(p->id);
  EXPECT_GE(p_started, before);
  EXPECT_EQ(p_lease, -1);  // no id lease
  EXPECT_EQ(p_base, 0);
  EXPECT_EQ(Exec(p->id, {"cat", "/proc/self/uid_map"}).stdout_data, "         0          0 4294967295\n");
  // Files the daemon writes for it are the host's root's, as the sandbox's own are.
  ASSERT_TRUE(mgr_->WriteFile(p->id, "/tmp/f", {"x", 0644}).ok());
  EXPECT_EQ(Exec(p->id, {"stat", "-c", "%u:%g", "/tmp/f"}).stdout_data, "0:0\n");

  api::SandboxSpec mapped;
  mapped.user = "1000:1000";
  mapped.idmap = {{engine::IdMapping::Kind::kBoth, 1000, 1000, 1}};
  auto m = mgr_->Create(mapped);
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto [m_started, m_lease, m_base] = launch(m->id);
  EXPECT_GE(m_started, before);
  EXPECT_GE(m_lease, 0);
  EXPECT_EQ(Exec(m->id, {"sed", "-n", "2p", "/proc/self/uid_map"}).stdout_data, "      1000       1000          1\n");
  // The daemon writes as the host id the sandbox's user is mapped to.
  ASSERT_TRUE(mgr_->WriteFile(m->id, "/tmp/f", {"x", 0644}).ok());
  auto read = mgr_->ReadFile(m->id, "/tmp/f");
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(Exec(m->id, {"stat", "-c", "%u:%g", "/tmp/f"}).stdout_data, "1000:1000\n");
  EXPECT_EQ(mgr_->PoolSize(), 2u);

  for (const auto& id : {p->id, m->id}) ASSERT_TRUE(mgr_->Remove(id).ok());
  // Its range went back: the lease file is gone, or it is a newer sandbox's (the pool's refill may take a freed
  // range at once), locked by that sandbox; never left behind unlocked.
  const std::string lease = std::string(engine::IdAllocator::kHostLeaseDir) + "/" + std::to_string(m_lease);
  Fd held(::open(lease.c_str(), O_RDONLY | O_CLOEXEC));
  if (held.valid()) {
    EXPECT_NE(::flock(held.get(), LOCK_EX | LOCK_NB), 0) << lease << " was left behind";
  }
}

}  // namespace
}  // namespace isb::daemon
