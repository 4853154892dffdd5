// Service sandboxes: the spawner launches them, init serves exec sessions, and they outlive their launcher.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <atomic>
#include <filesystem>
#include <thread>

#include "base/file.h"
#include "engine/cgroup.h"
#include "engine/exec_client.h"
#include "engine/idmap.h"
#include "engine/launch.h"
#include "engine/namespaces_runtime.h"
#include "engine/spawner.h"
#include "must_work.h"

namespace isb::engine {
namespace {

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ISB_REQUIRE_ROOT();
    char tmpl[] = "/tmp/isb-svc-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_TRUE(spawner_.Start(dir_).ok());
    SandboxConfig c;
    c.hostname = "svc";
    auto s = spawner_.Spawn(c, dir_ + "/control.sock");
    ASSERT_TRUE(s.ok()) << s.error().message;
    sb_.pid = s->pid;
    sb_.start_time = s->start_time;
    sb_.cgroup = s->cgroup;
    sb_.lease_index = s->lease_index;
    auto ready = WaitForSetup(s->report.get(), c, "/run/isb", nullptr);
    ASSERT_TRUE(ready.ok()) << ready.error().message;
  }
  void TearDown() override {
    if (dir_.empty()) return;
    if (sb_.pid > 0) {
      int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, sb_.pid, 0));
      ::kill(sb_.pid, SIGKILL);
      if (pidfd >= 0) {  // else: gone and reaped already
        pollfd p{pidfd, POLLIN, 0};
        ::poll(&p, 1, 5000);
        ::close(pidfd);
      }
      auto layout = DetectCgroupLayout();
      ASSERT_TRUE(layout.ok());
      Cgroup cg = Cgroup::Adopt(*layout, sb_.cgroup);
      auto dirs = cg.dirs();
      EXPECT_TRUE(cg.Remove().ok());
      for (const auto& d : dirs) EXPECT_FALSE(std::filesystem::exists(d)) << d;
      // The lease is released by init's death; its file goes when reclaimed.
      for (int i = 0; i < 100 && !IdAllocator::ForHost().Reclaim(sb_.lease_index); ++i) ::usleep(10000);
      EXPECT_FALSE(
          std::filesystem::exists(std::string(IdAllocator::kHostLeaseDir) + "/" + std::to_string(sb_.lease_index)));
    }
    std::filesystem::remove_all(dir_);
  }
  Result<ExecOutcome> Exec(std::vector<std::string> argv, std::string in = "", int timeout_ms = 10000) {
    ExecSpec spec;
    spec.argv = std::move(argv);
    spec.env = {"PATH=/usr/bin:/bin"};
    spec.stdin_data = std::move(in);
    spec.timeout = std::chrono::milliseconds(timeout_ms);
    return ExecInSandbox(dir_ + "/control.sock", spec, nullptr);
  }
  std::string dir_;
  Spawner spawner_;
  SpawnedSandbox sb_;
};

// A setup that never reports (its report pipe neither written nor closed) is given up on at the deadline, never
// waited on for good.
TEST(SetupReportTest, ASetupThatNeverReportsIsGivenUpOn) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  Fd read_end(p[0]), write_end(p[1]);
  const auto start = std::chrono::steady_clock::now();
  Status st = WaitForSetup(read_end.get(), SandboxConfig{}, "/run/isb", nullptr, std::chrono::milliseconds(200));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Code::kUnavailable);
  EXPECT_EQ(st.error().message, "the sandbox's setup did not finish within 200 ms");
  EXPECT_GE(took, std::chrono::milliseconds(200));
  EXPECT_LT(took, std::chrono::seconds(5));
  write_end.Reset();  // closed without a failure: success
  EXPECT_TRUE(WaitForSetup(read_end.get(), SandboxConfig{}, "/run/isb", nullptr, std::chrono::milliseconds(200)).ok());
}

// The daemon signals a sandbox's init, and opens files under its root, by pid: only while that pid is still the
// process that started at the recorded time. A handle opened before the check refers to that process alone, so a
// pid freed and taken by another process in between is never used.
TEST(ProcessHandleTest, OnlyTheProcessThatStartedAtTheRecordedTime) {
  const pid_t self = ::getpid();
  const uint64_t started = ProcessStartTime(self);
  ASSERT_GT(started, 0u);
  EXPECT_TRUE(OpenProcess(self, started).valid());
  EXPECT_FALSE(OpenProcess(self, started + 1).valid());
  EXPECT_FALSE(OpenProcess(self, 0).valid());
  EXPECT_FALSE(OpenProcessDir(self, started + 1).valid());
  Fd own = OpenProcessDir(self, started);
  ASSERT_TRUE(own.valid());
  EXPECT_TRUE(Fd(::openat(own.get(), "root", O_PATH | O_DIRECTORY | O_CLOEXEC)).valid());

  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  uint64_t child_started = 0;
  for (int i = 0; i < 100 && (child_started = ProcessStartTime(child)) == 0; ++i) ::usleep(1000);
  ASSERT_GT(child_started, 0u);
  Fd dir = OpenProcessDir(child, child_started);
  ASSERT_TRUE(dir.valid());
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  // Gone (and its pid free for anyone): no new handle, and the old directory opens nothing of whoever comes next.
  EXPECT_FALSE(OpenProcess(child, child_started).valid());
  EXPECT_FALSE(OpenProcessDir(child, child_started).valid());
  errno = 0;
  EXPECT_FALSE(Fd(::openat(dir.get(), "root", O_PATH | O_DIRECTORY | O_CLOEXEC)).valid());
  EXPECT_EQ(errno, ESRCH);
}

TEST_F(ServiceTest, ExecRunsInTheSandbox) {
  auto r = Exec({"sh", "-c", "hostname; cat; echo e >&2; exit 4"}, "from stdin\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 4);
  EXPECT_EQ(r->stdout_data, "svc\nfrom stdin\n");
  EXPECT_EQ(r->stderr_data, "e\n");
  EXPECT_GT(sb_.start_time, 0u);
  EXPECT_EQ(ProcessStartTime(sb_.pid), sb_.start_time);
}

TEST_F(ServiceTest, StateSurvivesBetweenExecs) {
  ASSERT_EQ(Exec({"sh", "-c", "echo kept > /root/f"})->exit_code, 0);
  EXPECT_EQ(Exec({"cat", "/root/f"})->stdout_data, "kept\n");
}

TEST_F(ServiceTest, TimeoutKillsTheCommandNotTheSandbox) {
  auto r = Exec({"sleep", "30"}, "", 300);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->exit_code, 124);
  EXPECT_LT(r->duration_ms, 2000);
  EXPECT_EQ(Exec({"true"})->exit_code, 0);
}

// A timeout kills the command's process group; a command without a terminal leads a session of its own, so it
// cannot move into init's group (or any other) to outlive the kill while isb reports it killed.
TEST_F(ServiceTest, ACommandCannotLeaveTheGroupATimeoutKills) {
  auto r = Exec({"perl", "-e", "print setpgrp(0, 1) ? \"moved\\n\" : \"$!\\n\"; $| = 1; sleep 30"}, "", 300);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->exit_code, 124);
  EXPECT_EQ(r->stdout_data, "Operation not permitted\n");
  // Nothing of it is left running.
  auto left = Exec({"sh", "-c", "for c in /proc/[0-9]*/comm; do cat $c; done 2>/dev/null | grep -c perl || true"});
  ASSERT_TRUE(left.ok()) << left.error().message;
  EXPECT_EQ(left->stdout_data, "0\n");
}

// A process in the sandbox stops every process it may (kill(-1, SIGSTOP), as root of the sandbox) for a while,
// and so the children init starts for other execs, many of them before their exec. Those execs time out and are
// killed; init itself must never wait on one of them, so once the stopping ends the next exec runs as usual.
TEST_F(ServiceTest, AChildStoppedBeforeItsExecDoesNotStopInit) {
  std::atomic<bool> stopping{true};
  std::atomic<int> started{0};
  std::thread stopper([&] {
    auto r =
        Exec({"perl", "-MTime::HiRes=time", "-e", "my $end = time + 1.5; kill 'STOP', -1 while time < $end"}, "", 5000);
    stopping = false;
    EXPECT_TRUE(r.ok() && r->exit_code == 0 && !r->timed_out) << (r.ok() ? r->stderr_data : r.error().message);
  });
  std::vector<std::thread> callers;
  for (int i = 0; i < 4; ++i)
    callers.emplace_back([&] {
      while (stopping) {
        ++started;
        (void)Exec({"true"}, "", 300);
      }
    });
  stopper.join();
  for (auto& t : callers) t.join();
  EXPECT_GT(started.load(), 4);
  auto r = Exec({"echo", "alive"}, "", 5000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->stdout_data, "alive\n");
  // Every stopped child was killed with its exec: only init and the looking shell are left.
  auto left = Exec({"sh", "-c", "set -- /proc/[0-9]*; echo $#"});
  ASSERT_TRUE(left.ok()) << left.error().message;
  EXPECT_EQ(left->stdout_data, "2\n");
}

// The kernel makes memory whose user changes dumpable as fs.suid_dumpable says; at 1, memory the sandbox's root
// could then read through /proc. A command of another user changes user in memory of its own, never init's: with
// suid_dumpable at 1 (set here around one such command), init stays unreadable after it.
TEST_F(ServiceTest, InitStaysUnreadableAfterACommandOfAnotherUser) {
  // suid_dumpable is 1 only around the command of the other user (when init's memory could take it), and a guard
  // process puts the old value back even should this test be killed meanwhile.
  const std::string sysctl = "/proc/sys/fs/suid_dumpable";
  auto old = isb::ReadFile(sysctl);
  ASSERT_TRUE(old.ok()) << old.error().message;
  int alive[2];
  ASSERT_EQ(::pipe2(alive, O_CLOEXEC), 0);
  const pid_t guard = ::fork();
  ASSERT_GE(guard, 0);
  if (guard == 0) {
    ::close(alive[1]);
    char c;
    while (::read(alive[0], &c, 1) > 0) {
    }
    int fd = ::open(sysctl.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) (void)!::write(fd, old->data(), old->size());
    ::_exit(0);
  }
  ::close(alive[0]);
  ExecSpec spec;
  spec.argv = {"id", "-u"};
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.uid = spec.gid = 1000;
  Status set = isb::WriteFile(sysctl, "1\n");
  auto user = ExecInSandbox(dir_ + "/control.sock", spec, nullptr);
  ::close(alive[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(guard, &status, 0), guard);
  ASSERT_TRUE(set.ok()) << set.error().message;
  auto restored = isb::ReadFile(sysctl);
  EXPECT_TRUE(restored.ok() && *restored == *old);
  ASSERT_TRUE(user.ok()) << user.error().message;
  EXPECT_EQ(user->stdout_data, "1000\n");
  auto environ = Exec({"cat", "/proc/1/environ"});
  ASSERT_TRUE(environ.ok()) << environ.error().message;
  EXPECT_EQ(environ->exit_code, 1);
  EXPECT_EQ(environ->stderr_data, "cat: /proc/1/environ: Permission denied\n");
}

// A sandbox's terminals come from a devpts of its own, at most 64 of them: the host's pool of ptys, which every
// sandbox draws on, is never emptied by one.
TEST_F(ServiceTest, ASandboxOpensAtMost64Terminals) {
  auto r = Exec({"python3", "-c",
                 "import os\nn = 0\ntry:\n    while True:\n        os.open('/dev/ptmx', os.O_RDWR | os.O_NOCTTY)\n"
                 "        n += 1\nexcept OSError as e:\n    print(n, os.strerror(e.errno))\n"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stdout_data, "64 No space left on device\n") << r->stderr_data;
}

// Each exec's mapping (its request and its child's stack) is the session's until it closes, and then kept, cleared,
// for the next session (a few at most): after execs that succeed, fail to start or time out, one after another,
// init holds the mappings it held before.
TEST_F(ServiceTest, InitKeepsNoMappingOfAnEndedExec) {
  auto count = [&] {
    auto maps = isb::ReadFile("/proc/" + std::to_string(sb_.pid) + "/maps");
    return maps.ok() ? std::count(maps->begin(), maps->end(), '\n') : -1;
  };
  // Init closes a session when it sees the hang-up, just after the exec's caller has its answer: counted once the
  // count has held for three reads 10 ms apart.
  auto mappings = [&] {
    auto last = count();
    for (int same = 0, i = 0; same < 3 && i < 200; ++i) {
      ::usleep(10000);
      auto now = count();
      same = now == last ? same + 1 : 0;
      last = now;
    }
    return last;
  };
  ASSERT_EQ(Exec({"true"})->exit_code, 0);  // whatever a first exec sets up once
  const auto before = mappings();
  ASSERT_GT(before, 0);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Exec({"true"})->exit_code, 0);
  EXPECT_EQ(Exec({"no-such-cmd"})->exit_code, 127);
  EXPECT_TRUE(Exec({"sleep", "30"}, "", 200)->timed_out);
  EXPECT_EQ(Exec({"true"})->exit_code, 0);  // by then the timed-out one is reaped and its session closed
  EXPECT_EQ(mappings(), before);
}

// What a request carried (its environment may hold secrets) is gone from init once its session has closed: the
// mapping it came in is kept for the next session, cleared. Read through /proc/<init>/mem, every mapping init can
// write.
TEST_F(ServiceTest, InitKeepsNothingOfAnEndedExecsRequest) {
  std::string marker = "isb-request-marker-";
  for (int i = 0; i < 16; ++i) marker += static_cast<char>('a' + (::getpid() + i * 7) % 26);
  ExecSpec spec;
  spec.argv = {"true", marker + "-argv"};
  spec.env = {"PATH=/usr/bin:/bin", "TOKEN=" + marker + "-env"};
  auto r = ExecInSandbox(dir_ + "/control.sock", spec, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->exit_code, 0);
  ASSERT_EQ(Exec({"true"})->exit_code, 0);  // a session after it, on the same kept mapping
  ::usleep(50000);                          // init closes a session just after its caller has the answer
  const std::string pid = std::to_string(sb_.pid);
  auto maps = isb::ReadFile("/proc/" + pid + "/maps");
  ASSERT_TRUE(maps.ok()) << maps.error().message;
  int mem = ::open(("/proc/" + pid + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(mem, 0) << std::strerror(errno);
  size_t scanned = 0;
  std::istringstream lines(*maps);
  for (std::string line; std::getline(lines, line);) {
    unsigned long from = 0, to = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &from, &to, perms) != 3 || perms[1] != 'w') continue;
    // Terabytes reserved and never written: AddressSanitizer's shadow, in the sanitizer build (make sanitize).
    if (to - from > (1ul << 32)) continue;
    std::string bytes(to - from, '\0');
    ssize_t n = ::pread(mem, bytes.data(), bytes.size(), static_cast<off_t>(from));
    if (n <= 0) continue;
    bytes.resize(static_cast<size_t>(n));
    scanned += bytes.size();
    EXPECT_EQ(bytes.find(marker), std::string::npos) << line;
  }
  ::close(mem);
  EXPECT_GT(scanned, 256u * 1024);  // the kept mapping's request area alone is that large
}

// A command becomes the OOM killer's first choice once it has exec'd, and what it starts inherits that; init keeps
// its own score.
TEST_F(ServiceTest, ACommandScoresAboveInitForTheOomKiller) {
  auto r = Exec({"sh", "-c", "sleep 0.2; cat /proc/self/oom_score_adj /proc/1/oom_score_adj"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stdout_data, "1000\n0\n") << r->stderr_data;
}

TEST_F(ServiceTest, TimeoutHoldsForACommandThatNeverStopsWriting) {
  // Output always waiting to be read (a sink slower than the command, as a slow client makes a streamed exec's)
  // must not keep the deadline from being checked.
  ExecSpec spec;
  spec.argv = {"yes"};
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.timeout = std::chrono::milliseconds(300);
  spec.output_limit = uint64_t{1} << 40;
  auto slow = [](int, std::string_view) { ::usleep(20000); };
  auto r = ExecInSandbox(dir_ + "/control.sock", spec, slow);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->exit_code, 124);
  EXPECT_LT(r->duration_ms, 1500);
  EXPECT_EQ(Exec({"true"})->exit_code, 0);
}

TEST_F(ServiceTest, NotFoundAndConcurrentExecs) {
  auto nf = Exec({"no-such-cmd"});
  ASSERT_TRUE(nf.ok());
  EXPECT_EQ(nf->exit_code, 127);
  EXPECT_EQ(nf->exec_error, "no-such-cmd: command not found in the sandbox");
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      auto r = Exec({"sh", "-c", "echo " + std::to_string(i)});
      if (r.ok() && r->stdout_data == std::to_string(i) + "\n") ++ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
}

TEST_F(ServiceTest, ANotRunningSandboxIsNotFound) {
  ::kill(sb_.pid, SIGKILL);
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, sb_.pid, 0));
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1);
    ::close(pidfd);
  }
  auto r = Exec({"true"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kNotFound);
}

// The daemon's users of a sandbox's network (egress, published ports, previews) get its namespace from the runtime,
// never a pid: the namespaces runtime hands out its init's, read-only, and nothing once the sandbox has stopped or
// for a record of another process that took its pid.
TEST_F(ServiceTest, TheRuntimeOpensTheNetworkNamespaceOfARunningSandboxOnly) {
  NamespacesRuntime runtime(nullptr, {}, "/run/isb", dir_);
  const RuntimeHandle handle{"sb-x", NamespacesRuntime::Record({sb_.pid, sb_.start_time, sb_.lease_index})};
  Result<Fd> netns = runtime.OpenNetwork(handle);
  ASSERT_TRUE(netns.ok()) << netns.error().message;
  struct stat got {
  }, init{}, own{};
  ASSERT_EQ(::fstat(netns->get(), &got), 0);
  ASSERT_EQ(::stat(("/proc/" + std::to_string(sb_.pid) + "/ns/net").c_str(), &init), 0);
  ASSERT_EQ(::stat("/proc/self/ns/net", &own), 0);
  EXPECT_EQ(got.st_dev, init.st_dev);
  EXPECT_EQ(got.st_ino, init.st_ino);
  EXPECT_NE(got.st_ino, own.st_ino) << "the sandbox's network namespace is the test's";
  EXPECT_EQ(::fcntl(netns->get(), F_GETFL) & O_ACCMODE, O_RDONLY);
  EXPECT_EQ(::fcntl(netns->get(), F_GETFD), FD_CLOEXEC);

  auto expect_not_running = [&](const RuntimeHandle& h, const char* what) {
    Result<Fd> refused = runtime.OpenNetwork(h);
    ASSERT_FALSE(refused.ok()) << what;
    EXPECT_EQ(refused.error().code, Code::kConflict) << what;
    EXPECT_EQ(refused.error().message, "the sandbox is not running") << what;
  };
  expect_not_running({"sb-x", NamespacesRuntime::Record({sb_.pid, sb_.start_time + 1, sb_.lease_index})},
                     "another process's record");
  expect_not_running({"sb-x", ""}, "no record");

  Fd pidfd = OpenProcess(sb_.pid, sb_.start_time);
  ASSERT_TRUE(pidfd.valid());
  ASSERT_EQ(::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0), 0);
  pollfd exited{pidfd.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&exited, 1, 5000), 1);
  expect_not_running(handle, "a stopped sandbox");
}

}  // namespace
}  // namespace isb::engine

namespace isb::engine {
namespace {

// A caller that goes away ends its command within about a second; the sandbox lives on.
TEST_F(ServiceTest, CancelledExecIsKilled) {
  ExecSpec spec;
  spec.argv = {"sleep", "30"};
  spec.env = {"PATH=/usr/bin:/bin"};
  auto start = std::chrono::steady_clock::now();
  spec.cancelled = [&] { return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(200); };
  auto r = ExecInSandbox(dir_ + "/control.sock", spec, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "the caller went away or cancelled the call; the command was killed");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  // The sleep is gone from the sandbox, which still serves. Init kills and reaps it once it sees the hang-up, which
  // a busy host may let the next exec overtake: looked for again for up to 2 s.
  std::string procs;
  for (int i = 0; i < 20; ++i) {
    auto ps = Exec({"sh", "-c", "for p in /proc/[0-9]*; do cat $p/comm; done"});
    ASSERT_TRUE(ps.ok());
    procs = ps->stdout_data;
    if (procs.find("sleep") == std::string::npos) break;
    ::usleep(100000);
  }
  EXPECT_EQ(procs.find("sleep"), std::string::npos) << procs;
}

// A cancelled command's whole session goes, not only its process group: a child in a group of its own (as an
// interactive shell on a terminal puts each `cmd &`) is killed with it.
TEST_F(ServiceTest, CancelledExecsJobsInGroupsOfTheirOwnAreKilledToo) {
  ExecSpec spec;
  spec.argv = {"perl", "-e", "if (fork == 0) { setpgrp(0, 0); exec 'sleep', '4242' } exec 'sleep', '4343'"};
  spec.env = {"PATH=/usr/bin:/bin"};
  std::atomic<bool> cancel{false};
  spec.cancelled = [&] { return cancel.load(); };
  std::thread exec([&] { (void)ExecInSandbox(dir_ + "/control.sock", spec, nullptr); });
  auto list = [&] {
    auto ps = Exec({"sh", "-c", "for p in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $p; echo; done 2>/dev/null"});
    return ps.ok() ? ps->stdout_data : ps.error().message;
  };
  std::string procs;
  for (int i = 0; i < 50 && (procs = list()).find("sleep 4242") == std::string::npos; ++i) ::usleep(100000);
  // Its own group, so that killing the command's group alone would leave it.
  auto groups = Exec({"sh", "-c",
                      "for p in /proc/[0-9]*; do case \"$(tr '\\0' ' ' < $p/cmdline 2>/dev/null)\" in "
                      "'sleep 4'*) cut -d' ' -f5 $p/stat;; esac; done | sort -u | wc -l"});
  ASSERT_TRUE(groups.ok());
  EXPECT_EQ(groups->stdout_data, "2\n") << procs;
  cancel = true;
  exec.join();
  for (int i = 0; i < 20; ++i) {
    procs = list();
    if (procs.find("sleep 42") == std::string::npos && procs.find("sleep 43") == std::string::npos) break;
    ::usleep(100000);
  }
  EXPECT_EQ(procs.find("sleep 4242"), std::string::npos) << procs;
  EXPECT_EQ(procs.find("sleep 4343"), std::string::npos) << procs;
}

// Whether the caller went away is asked about once a second, not after every piece of output: asking may cost a
// write to the client (a keep-alive on a stream).
TEST_F(ServiceTest, AChattyExecAsksWhetherItsCallerLeftAboutOnceASecond) {
  ExecSpec spec;
  // Pieces 20 ms apart, as many as a busy host (a parallel test run) cannot merge into a few reads.
  spec.argv = {"sh", "-c", "for i in $(seq 60); do echo $i; sleep 0.02; done; sleep 1"};
  spec.env = {"PATH=/usr/bin:/bin"};
  std::atomic<int> asked{0};
  spec.cancelled = [&] {
    ++asked;
    return false;
  };
  size_t pieces = 0;
  auto start = std::chrono::steady_clock::now();
  auto r = ExecInSandbox(dir_ + "/control.sock", spec, [&](int, std::string_view) { ++pieces; });
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 0);
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(pieces, 20u);
  EXPECT_LE(asked.load(), seconds + 2) << pieces << " pieces of output in " << seconds << " s";
  EXPECT_GE(asked.load(), 1);
}

}  // namespace
}  // namespace isb::engine
