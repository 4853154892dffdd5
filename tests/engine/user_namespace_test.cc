// A sandbox's ids for real: privileged (no user namespace, the host's ids) and raw idmap entries beside its own range.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <mqueue.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "base/file.h"
#include "engine/caps.h"
#include "engine/exec_client.h"
#include "engine/launch.h"
#include "engine/run.h"
#include "must_work.h"

namespace isb::engine {
namespace {

namespace fs = std::filesystem;

class UserNamespaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-userns-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    opts_.runtime_dir = dir_ + "/run";
    opts_.capture = true;
    opts_.forward_signals = false;
    fs::create_directories(dir_ + "/data");
    ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
    ASSERT_EQ(::chmod((dir_ + "/data").c_str(), 0777), 0);
  }
  void TearDown() override {
    // Nothing of the sandbox stays mounted on the host.
    auto mounts = isb::ReadFile("/proc/self/mountinfo");
    ASSERT_TRUE(mounts.ok());
    EXPECT_EQ(mounts->find(dir_), std::string::npos) << *mounts;
    fs::remove_all(dir_);
  }
  Result<RunResult> Run(const std::string& script, SandboxConfig c) {
    c.argv = {"sh", "-c", script};
    c.binds.push_back({dir_ + "/data", "/mnt/data", false});
    return RunSandbox(c, opts_);
  }
  // A root filesystem of the host's root's at `image`: /bin/busybox with `applets` beside it, and `dirs`, each 0755.
  static void MakeBusyboxImage(const std::string& image, std::initializer_list<const char*> applets,
                               std::initializer_list<const char*> dirs) {
    ASSERT_TRUE(fs::exists("/bin/busybox")) << "the busybox-static package provides /bin/busybox";
    fs::create_directories(image + "/bin");
    fs::copy_file("/bin/busybox", image + "/bin/busybox");
    for (const char* applet : applets) fs::create_symlink("busybox", image + "/bin/" + applet);
    ASSERT_EQ(::chmod(image.c_str(), 0755), 0);
    ASSERT_EQ(::chmod((image + "/bin").c_str(), 0755), 0);
    for (const char* d : dirs) {
      fs::create_directories(image + d);
      ASSERT_EQ(::chmod((image + d).c_str(), 0755), 0);
    }
  }
  uid_t OwnerOf(const std::string& name, gid_t* gid) {
    struct stat st {};
    EXPECT_EQ(::stat((dir_ + "/data/" + name).c_str(), &st), 0) << name;
    *gid = st.st_gid;
    return st.st_uid;
  }
  std::string dir_;
  RunOptions opts_;
};

std::string Hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

TEST_F(UserNamespaceTest, PrivilegedKeepsTheHostsIdsAndTheUsualCapabilities) {
  ISB_REQUIRE_ROOT();
  SandboxConfig c;
  c.privileged = true;
  auto r =
      Run("cat /proc/self/uid_map /proc/self/gid_map; readlink /proc/self/ns/user; "
          "grep -E '^Cap(Eff|Bnd):' /proc/self/status; touch /mnt/data/made-by-root; id -u",
          c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  char host_ns[64] = {};
  ASSERT_GT(::readlink("/proc/self/ns/user", host_ns, sizeof host_ns - 1), 0);
  const std::string caps = Hex16(KeptCapabilityMask());
  EXPECT_EQ(r->stdout_data,
            "         0          0 4294967295\n"
            "         0          0 4294967295\n" +
                std::string(host_ns) + "\nCapEff:\t" + caps + "\nCapBnd:\t" + caps + "\n0\n");
  EXPECT_EQ(r->stderr_data, "");
  EXPECT_EQ(r->exit_code, 0);
  gid_t gid = 1;
  EXPECT_EQ(OwnerOf("made-by-root", &gid), 0u);
  EXPECT_EQ(gid, 0u);
}

// A bind brings the mounts below its source along: a read-only bind is read-only all the way down, and every bind's
// submounts are nosuid and nodev like the bind itself (a remount would change the top mount alone).
TEST_F(UserNamespaceTest, ABindsSubmountsTakeItsReadOnlyNosuidAndNodev) {
  ISB_REQUIRE_ROOT();
  fs::create_directories(dir_ + "/ro/sub");
  fs::create_directories(dir_ + "/data/sub");
  struct Unmount {
    std::string dir;
    ~Unmount() {
      for (const char* sub : {"/ro/sub", "/data/sub"}) ::umount2((dir + sub).c_str(), MNT_DETACH);
    }
  } unmount{dir_};
  for (const char* sub : {"/ro/sub", "/data/sub"})
    ASSERT_EQ(::mount("tmpfs", (dir_ + sub).c_str(), "tmpfs", 0, "mode=1777"), 0) << std::strerror(errno);
  SandboxConfig c;
  c.binds.push_back({dir_ + "/ro", "/mnt/ro", true});
  auto r =
      Run("touch /mnt/ro/sub/x; echo $?; touch /mnt/data/sub/x; echo $?; "
          "awk '$5 == \"/mnt/ro/sub\" || $5 == \"/mnt/data/sub\" { print $5, $6 }' /proc/self/mountinfo",
          c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stdout_data, "1\n0\n/mnt/ro/sub ro,nosuid,nodev,relatime\n/mnt/data/sub rw,nosuid,nodev,relatime\n");
  EXPECT_EQ(r->stderr_data, "touch: cannot touch '/mnt/ro/sub/x': Read-only file system\n");
  EXPECT_FALSE(fs::exists(dir_ + "/ro/sub/x"));
  EXPECT_TRUE(fs::exists(dir_ + "/data/sub/x"));
}

// A sandbox starts with every signal at its default action, whatever its launcher ignored (a daemon ignores SIGPIPE;
// systemd starts services so): an ignored signal would stay ignored through every exec.
TEST_F(UserNamespaceTest, ACommandInheritsNoIgnoredSignal) {
  ISB_REQUIRE_ROOT();
  struct sigaction ignore {
  }, old_pipe{}, old_hup{}, old_rt{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &old_pipe), 0);
  ASSERT_EQ(::sigaction(SIGHUP, &ignore, &old_hup), 0);
  ASSERT_EQ(::sigaction(SIGRTMIN + 1, &ignore, &old_rt), 0);
  auto r = Run("grep SigIgn /proc/self/status; yes | head -c 4", SandboxConfig{});
  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);
  ::sigaction(SIGRTMIN + 1, &old_rt, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stdout_data, "SigIgn:\t0000000000000000\ny\ny\n");
  EXPECT_EQ(r->stderr_data, "");  // yes ends on SIGPIPE, without a "Broken pipe" message
}

// What a sandbox's processes hold is charged to its user namespace's owner on the host as well (the kernel counts
// inotify instances and POSIX message queue bytes up the chain of namespaces). Owned by the host's root, a sandbox
// that took its fill left root none: the host's own services could then open no inotify instance and no queue.
TEST_F(UserNamespaceTest, ASandboxSpendsNothingOfTheHostRootsInotifyOrQueueBudget) {
  ISB_REQUIRE_ROOT();
  auto max_instances = isb::ReadFile("/proc/sys/fs/inotify/max_user_instances");
  ASSERT_TRUE(max_instances.ok());
  ASSERT_TRUE(isb::WriteFile(dir_ + "/data/hold.py", R"(
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
import resource, sys
attr = Attr(0, 10, 8192, 0)
q = 0
while q < 1000 and libc.mq_open(b"/q%d" % q, os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr)) >= 0:
    q += 1
# What it may get: the per-user limit (the host's), unless its own descriptor limit comes first.
want = min(int(sys.argv[1]), resource.getrlimit(resource.RLIMIT_NOFILE)[0] - len(os.listdir("/proc/self/fd")) + 1)
n = 0
while n < 100000 and libc.inotify_init1(0) >= 0:
    n += 1
print("all instances" if n == want else "%d instances of %d" % (n, want), "queues" if q > 0 else "no queue",
      flush=True)
open("/mnt/data/held", "w").close()
while not os.path.exists("/mnt/data/go"):
    time.sleep(0.01)
)")
                  .ok());
  // The test can tell only if the host's root has an instance to spare to begin with.
  int spare = ::inotify_init1(IN_CLOEXEC);
  ASSERT_GE(spare, 0) << "the host's root has no inotify instance to spare: " << std::strerror(errno);
  ::close(spare);
  Result<RunResult> r = Error::Msg("not run");
  std::thread sandbox(
      [&] { r = Run("python3 /mnt/data/hold.py " + std::to_string(std::stoi(*max_instances)), SandboxConfig{}); });
  for (int i = 0; i < 1000 && !fs::exists(dir_ + "/data/held"); ++i) ::usleep(10000);
  // While the sandbox holds all it could: the host's root still opens both.
  int inotify = ::inotify_init1(IN_CLOEXEC);
  int inotify_errno = errno;
  mq_attr attr{};
  attr.mq_maxmsg = 10;
  attr.mq_msgsize = 8192;
  const std::string queue = "/isb-test-" + std::to_string(::getpid());
  mqd_t q = ::mq_open(queue.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600, &attr);
  int queue_errno = errno;
  if (inotify >= 0) ::close(inotify);
  if (q != static_cast<mqd_t>(-1)) {
    ::mq_close(q);
    ::mq_unlink(queue.c_str());
  }
  ASSERT_TRUE(isb::WriteFile(dir_ + "/data/go", "").ok());
  sandbox.join();
  EXPECT_GE(inotify, 0) << std::strerror(inotify_errno);
  EXPECT_NE(q, static_cast<mqd_t>(-1)) << std::strerror(queue_errno);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // Its own budget is whole: the per-user limit, counted for its namespace's owner alone.
  EXPECT_EQ(r->stdout_data, "all instances queues\n");
  EXPECT_EQ(r->stderr_data, "");
  EXPECT_EQ(r->exit_code, 0);
}

// The launcher takes the namespace owner's euid only for the clone: afterwards its ids, its securebits, its dumpable
// flag and its parent-death signal (the last two reset by the kernel on any change of euid) are as they were.
TEST_F(UserNamespaceTest, LaunchingLeavesTheLaunchersCredentialsAsTheyWere) {
  ISB_REQUIRE_ROOT();
  ASSERT_EQ(::prctl(PR_GET_DUMPABLE), 1);
  struct ClearDeathSignal {
    ~ClearDeathSignal() { ::prctl(PR_SET_PDEATHSIG, 0); }
  } clear;
  ASSERT_EQ(::prctl(PR_SET_PDEATHSIG, SIGUSR2), 0);
  auto r = Run("true", SandboxConfig{});
  int death_signal = -1;
  EXPECT_EQ(::prctl(PR_GET_PDEATHSIG, &death_signal), 0);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(death_signal, SIGUSR2);
  EXPECT_EQ(::prctl(PR_GET_DUMPABLE), 1);
  EXPECT_EQ(::prctl(PR_GET_SECUREBITS), 0);
  uid_t ruid, euid, suid;
  gid_t rgid, egid, sgid;
  ASSERT_EQ(::getresuid(&ruid, &euid, &suid), 0);
  ASSERT_EQ(::getresgid(&rgid, &egid, &sgid), 0);
  EXPECT_EQ(std::vector<unsigned>({ruid, euid, suid, rgid, egid, sgid}), std::vector<unsigned>(6, 0));
}

// An image is seen through the sandbox's id mapping: what the host's root owns in it is the sandbox root's, which
// changes it in its writable layer, never in the image. Its /etc/hostname, hosts and resolv.conf are the sandbox's
// own, in place of the image's (a symlink to a /run nothing fills, here).
TEST_F(UserNamespaceTest, AnImageIsTheSandboxRootsAndItsNamesAreTheSandboxs) {
  ISB_REQUIRE_ROOT();
  const std::string image = dir_ + "/image";
  ASSERT_NO_FATAL_FAILURE(MakeBusyboxImage(image, {"sh", "cat", "stat", "echo"}, {"/etc"}));
  ASSERT_TRUE(isb::WriteFile(image + "/etc/hosts", "10.9.9.9 elsewhere\n").ok());
  ASSERT_TRUE(isb::WriteFile(image + "/etc/owned-by-1000", "x\n").ok());
  ASSERT_EQ(::chown((image + "/etc/owned-by-1000").c_str(), 1000, 1000), 0);
  fs::create_symlink("../run/resolv.conf", image + "/etc/resolv.conf");
  SandboxConfig c;
  c.image = image;
  c.idmap_image = true;
  c.hostname = "box";
  c.resolv_conf = "nameserver 10.1.2.3\n";
  c.argv = {"sh", "-c",
            "stat -c '%u:%g %n' /etc /bin/busybox /etc/hosts /etc/owned-by-1000; echo changed > /etc/hosts; "
            "cat /etc/hosts /etc/hostname /etc/resolv.conf"};
  auto r = RunSandbox(c, opts_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stdout_data,
            "0:0 /etc\n0:0 /bin/busybox\n0:0 /etc/hosts\n1000:1000 /etc/owned-by-1000\n"
            "changed\nbox\nnameserver 10.1.2.3\n");
  EXPECT_EQ(r->stderr_data, "");
  EXPECT_EQ(r->exit_code, 0);
  // The image is as it was.
  EXPECT_EQ(*isb::ReadFile(image + "/etc/hosts"), "10.9.9.9 elsewhere\n");
  EXPECT_TRUE(fs::is_symlink(image + "/etc/resolv.conf"));
  EXPECT_FALSE(fs::exists(image + "/etc/hostname"));
  struct stat st {};
  ASSERT_EQ(::stat((image + "/etc/hosts").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);

  // Without the mapping (a remote caller's image): the image's files are no one's in the sandbox, and its /etc,
  // which the sandbox's root cannot write, keeps its own names.
  c.idmap_image = false;
  c.argv = {"sh", "-c", "stat -c '%u:%g %n' /etc/hosts; cat /etc/hosts; echo x > /etc/hosts"};
  r = RunSandbox(c, opts_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stdout_data, "65534:65534 /etc/hosts\n10.9.9.9 elsewhere\n");
  EXPECT_EQ(r->stderr_data, "sh: can't create /etc/hosts: Permission denied\n");
  EXPECT_EQ(r->exit_code, 1);

  // A sandbox for which isb names no resolver (an open one reaches the image's own) keeps the image's
  // resolv.conf; nothing of isb's replacing is left beside the files it replaced.
  c.idmap_image = true;
  c.resolv_conf = "";
  c.argv = {"sh", "-c", "readlink /etc/resolv.conf; ls -a /etc | grep isb-new || echo none"};
  r = RunSandbox(c, opts_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stdout_data, "../run/resolv.conf\nnone\n");
}

// A kept writable layer's directory is the sandbox's root's alone (0700): no host user reaches what the sandbox
// leaves in it, such as a set-uid file of its range.
TEST_F(UserNamespaceTest, AKeptLayerIsTheSandboxRootsAlone) {
  ISB_REQUIRE_ROOT();
  SandboxConfig c;
  c.writable_dir = dir_ + "/layer";
  auto r = Run("cp /bin/true /made && chmod 4755 /made && id -u", c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 0) << r->stderr_data;
  struct stat st {};
  ASSERT_EQ(::stat(c.writable_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_GE(st.st_uid, 1u << 28);  // the sandbox's root: the first id of its range
  EXPECT_EQ(st.st_gid, st.st_uid);
  ASSERT_EQ(::stat((c.writable_dir + "/root/made").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 04000, 04000u);  // there, but out of every host user's reach
}

// The image's tree is a copy of the host's mounts there: private, so that its unmount at the pivot does not
// propagate to the host and unmount what is mounted below the image (a shared mount, as systemd makes /).
TEST_F(UserNamespaceTest, AnImagesMountsOnTheHostStayMounted) {
  ISB_REQUIRE_ROOT();
  const std::string image = dir_ + "/image";
  ASSERT_NO_FATAL_FAILURE(MakeBusyboxImage(image, {"true"}, {"/mnt"}));
  struct Unmount {
    std::string image;
    ~Unmount() {
      ::umount2((image + "/mnt").c_str(), MNT_DETACH);
      ::umount2(image.c_str(), MNT_DETACH);
    }
  } unmount{image};
  ASSERT_EQ(::mount(image.c_str(), image.c_str(), nullptr, MS_BIND, nullptr), 0) << std::strerror(errno);
  ASSERT_EQ(::mount(nullptr, image.c_str(), nullptr, MS_SHARED, nullptr), 0) << std::strerror(errno);
  ASSERT_EQ(::mount("tmpfs", (image + "/mnt").c_str(), "tmpfs", 0, "mode=0755"), 0) << std::strerror(errno);
  SandboxConfig c;
  c.image = image;
  c.idmap_image = true;
  c.argv = {"true"};
  auto r = RunSandbox(c, opts_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 0);
  auto mounts = isb::ReadFile("/proc/self/mountinfo");
  ASSERT_TRUE(mounts.ok());
  EXPECT_NE(mounts->find(" " + image + "/mnt "), std::string::npos) << "the host's mount below the image is gone";
}

// A privileged sandbox's root keeps CAP_CHOWN and CAP_FOWNER over the host's files, but the host's device nodes
// are bound read-only (used as ever, their mode and owner out of reach) and its TLS keys are masked.
TEST_F(UserNamespaceTest, PrivilegedRootChangesNoHostDeviceAndReadsNoHostKey) {
  ISB_REQUIRE_ROOT();
  struct stat before {
  }, urandom{};
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  ASSERT_EQ(::stat("/dev/urandom", &urandom), 0);
  // Should the binds ever be writable again, the host's devices are put back as they were all the same.
  struct Restore {
    struct stat null_st, urandom_st;
    ~Restore() {
      (void)::chmod("/dev/null", null_st.st_mode & 07777);
      (void)::chown("/dev/urandom", urandom_st.st_uid, urandom_st.st_gid);
    }
  } restore{before, urandom};
  SandboxConfig c;
  c.privileged = true;
  // The mode and owner asked for are the ones they have: refused all the same, and harmless should they not be.
  auto r =
      Run("echo x > /dev/null && echo wrote; head -c 4 /dev/zero | wc -c; chmod 666 /dev/null; "
          "chown 0:0 /dev/urandom; ls -A /etc/ssl/private 2>/dev/null | wc -l",
          c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stdout_data, "wrote\n4\n0\n");
  EXPECT_EQ(r->stderr_data,
            "chmod: changing permissions of '/dev/null': Read-only file system\n"
            "chown: changing ownership of '/dev/urandom': Read-only file system\n");
  struct stat after {};
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_EQ(after.st_mode, before.st_mode);
}

TEST_F(UserNamespaceTest, PrivilegedUserIsTheHostUser) {
  ISB_REQUIRE_ROOT();
  SandboxConfig c;
  c.privileged = true;
  c.uid = 4321;
  c.gid = 4322;
  auto r = Run("touch /mnt/data/made-by-4321 && id -u && id -g", c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stdout_data, "4321\n4322\n");
  gid_t gid = 0;
  EXPECT_EQ(OwnerOf("made-by-4321", &gid), 4321u);
  EXPECT_EQ(gid, 4322u);
}

TEST_F(UserNamespaceTest, RawIdmapMapsHostIdsBesideTheOwnRange) {
  ISB_REQUIRE_ROOT();
  ASSERT_TRUE(isb::WriteFile(dir_ + "/data/owned-by-1000", "x").ok());
  ASSERT_TRUE(isb::WriteFile(dir_ + "/data/owned-by-4242", "x").ok());
  ASSERT_EQ(::chown((dir_ + "/data/owned-by-1000").c_str(), 1000, 1000), 0);
  ASSERT_EQ(::chown((dir_ + "/data/owned-by-4242").c_str(), 4242, 4242), 0);
  SandboxConfig c;
  c.idmap = {{IdMapping::Kind::kBoth, 1000, 1000, 1}};
  auto r =
      Run("awk '{print $1, $2, $3}' /proc/self/uid_map; "
          "stat -c %u:%g /mnt/data/owned-by-1000 /mnt/data/owned-by-4242",
          c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stderr_data, "");
  // The own range's base is whatever lease the sandbox got: read it from the first line.
  unsigned long base = 0;
  ASSERT_EQ(std::sscanf(r->stdout_data.c_str(), "0 %lu 1000\n", &base), 1) << r->stdout_data;
  EXPECT_GE(base, kHostFirstBase);
  EXPECT_EQ(r->stdout_data, "0 " + std::to_string(base) + " 1000\n1000 1000 1\n1001 " + std::to_string(base + 1001) +
                                " 64535\n1000:1000\n65534:65534\n");

  // The sandbox's user 1000 is the host's: what it writes is host uid 1000's.
  c.uid = c.gid = 1000;
  r = Run("touch /mnt/data/made-by-1000", c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 0) << r->stderr_data;
  gid_t gid = 0;
  EXPECT_EQ(OwnerOf("made-by-1000", &gid), 1000u);
  EXPECT_EQ(gid, 1000u);
}

TEST_F(UserNamespaceTest, BadIdmapRefusedBeforeAnythingRuns) {
  SandboxConfig c;
  c.idmap = {{IdMapping::Kind::kUid, 1, 10, 5}, {IdMapping::Kind::kUid, 2, 12, 1}};
  auto r = Run("touch /mnt/data/ran", c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "idmap[1].sandbox: ids 12-12 overlap idmap[0]");
  c.idmap.pop_back();
  c.privileged = true;
  r = Run("touch /mnt/data/ran", c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "idmap: a privileged sandbox has no user namespace to map ids into (use one or the other)");
  EXPECT_FALSE(fs::exists(dir_ + "/data/ran"));
}

// A service init starts whatever descriptors its parent holds. Here the parent has only 0 to 2 open, so in the
// child the signalfd is made at 5, the number it is kept at, and /dev/null at 3, where the control socket goes.
TEST_F(UserNamespaceTest, AServiceInitStartsFromAParentWithOnlyItsStandardDescriptors) {
  ISB_REQUIRE_ROOT();
  for (bool privileged : {false, true}) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::syscall(SYS_close_range, 3, ~0U, 0);
      int rc = 1;
      {
        SandboxConfig c;
        c.privileged = privileged;
        LaunchOptions lo;
        lo.runtime_dir = opts_.runtime_dir;
        lo.mode = InitMode::kService;
        lo.control_path = dir_ + (privileged ? "/privileged.sock" : "/control.sock");
        lo.stdin_fd = -1;
        auto l = Launch(c, lo);  // killed again, its cgroup and lease released, as it goes out of scope
        if (!l.ok()) {
          std::fprintf(stderr, "%s\n", l.error().message.c_str());
        } else {
          // Each kept descriptor where it belongs, nothing past them, and a command runs through the socket.
          auto link = [&](int fd) {
            char buf[256];
            std::string path = "/proc/" + std::to_string(l->pid()) + "/fd/" + std::to_string(fd);
            ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
            return n < 0 ? std::string("none") : std::string(buf, static_cast<size_t>(n));
          };
          const std::string lease = link(4);
          const bool wired = link(3).rfind("socket:[", 0) == 0 &&
                             (privileged ? lease == "/dev/null" : lease.find("/ids/") != std::string::npos) &&
                             link(5) == "anon_inode:[signalfd]" && link(6) == "none";
          ExecSpec spec;
          spec.argv = {"true"};
          auto ran = ExecInSandbox(lo.control_path, spec, nullptr);
          if (wired && ran.ok() && ran->exit_code == 0)
            rc = 0;
          else
            std::fprintf(stderr, "fds 3-6: %s %s %s %s; exec: %s\n", link(3).c_str(), lease.c_str(), link(5).c_str(),
                         link(6).c_str(), ran.ok() ? "ran" : ran.error().message.c_str());
        }
      }
      ::_exit(rc);
    }
    int status = 0;
    pid_t waited = 0;
    for (int i = 0; i < 3000 && (waited = ::waitpid(child, &status, WNOHANG)) == 0; ++i) ::usleep(10000);
    if (waited == 0) {  // 30 s: a launch or exec that hangs fails the test rather than holding it
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
    }
    EXPECT_EQ(waited, child) << "the launch did not finish within 30 s";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "privileged=" << privileged << " status " << status;
  }
}

// A privileged service sandbox (the daemon's kind): no lease, and its init serves with /dev/null where the lease was.
TEST_F(UserNamespaceTest, PrivilegedServiceSandboxHoldsNoLease) {
  ISB_REQUIRE_ROOT();
  SandboxConfig c;
  c.privileged = true;
  LaunchOptions lo;
  lo.runtime_dir = opts_.runtime_dir;
  lo.mode = InitMode::kService;
  lo.control_path = dir_ + "/control.sock";
  lo.stdin_fd = -1;
  std::vector<std::string> cgroup_dirs;
  {
    auto l = Launch(c, lo);
    ASSERT_TRUE(l.ok()) << l.error().message;
    EXPECT_FALSE(l->lease().held());
    EXPECT_EQ(l->lease().base(), 0u);
    const std::string proc = "/proc/" + std::to_string(l->pid());
    auto map = isb::ReadFile(proc + "/uid_map");
    ASSERT_TRUE(map.ok());
    EXPECT_EQ(*map, "         0          0 4294967295\n");
    char target[64] = {};
    ASSERT_GT(::readlink((proc + "/fd/4").c_str(), target, sizeof target - 1), 0);
    EXPECT_STREQ(target, "/dev/null");
    cgroup_dirs = l->cgroup().dirs();
    EXPECT_FALSE(cgroup_dirs.empty());
  }
  for (const auto& d : cgroup_dirs) EXPECT_FALSE(fs::exists(d)) << d;
  ::unlink(lo.control_path.c_str());
}

// A cgroup that cannot be made stops the launch, with the reason, before anything is cloned: no process, socket or
// cgroup is left behind.
TEST_F(UserNamespaceTest, ACgroupThatCannotBeMadeStopsTheLaunchAndLeavesNothing) {
  ISB_REQUIRE_ROOT();
  int status = 0;
  ASSERT_EQ(::waitpid(-1, &status, WNOHANG), -1);  // no child of this process before
  ASSERT_EQ(errno, ECHILD);
  SandboxConfig c;
  LaunchOptions lo;
  lo.runtime_dir = opts_.runtime_dir;
  lo.mode = InitMode::kService;
  lo.control_path = dir_ + "/control.sock";
  lo.cgroup_name = "isb-test-no-such-parent/sandbox";  // its parent does not exist: mkdir fails with ENOENT
  lo.stdin_fd = -1;
  auto l = Launch(c, lo);
  ASSERT_FALSE(l.ok());
  const std::string& m = l.error().message;
  const std::string prefix = "create cgroup /", suffix = "/sandbox: No such file or directory";
  ASSERT_TRUE(m.starts_with(prefix) && m.ends_with(suffix)) << m;
  const std::string parent = m.substr(prefix.size() - 1, m.size() - prefix.size() + 1 - suffix.size());
  EXPECT_TRUE(parent.ends_with("/isb/isb-test-no-such-parent")) << m;
  EXPECT_FALSE(fs::exists(parent));
  EXPECT_EQ(::waitpid(-1, &status, WNOHANG), -1) << "the child was left running or unreaped";
  EXPECT_EQ(errno, ECHILD);
  EXPECT_FALSE(fs::exists(lo.control_path));
}

}  // namespace
}  // namespace isb::engine
