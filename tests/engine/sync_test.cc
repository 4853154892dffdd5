// The sandbox's first process and the sync channel (a socket pair): it waits for the launcher's "go", and a launcher
// that dies before sending it must make it exit, not leave it waiting forever outside any cgroup with its uid-range
// lease. The clone copies the launcher's write end of the pipe into the child too, so the child must close that copy
// first.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "engine/contain.h"

namespace isb::engine {
namespace {

struct Child {
  pid_t pid = -1;
  int pidfd = -1;
  int errors = -1;  // read end of the child's error pipe
};

// Forks a child that runs ChildMain with only the sync and error pipes set: the steps after "go" never run here.
// The child holds both ends of the sync pipe, as after the clone; `tell_child` says whether the plan names the
// write end (as Launch's does) so the child can close it. The parent's ends are closed, as if the launcher died.
Child StartAndAbandon(bool tell_child) {
  int sync[2], errors[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync), 0);  // as Launch's: a descriptor may ride along
  EXPECT_EQ(::pipe2(errors, O_CLOEXEC), 0);
  ChildPlan plan;
  plan.sync_fd = sync[0];
  plan.sync_write_fd = tell_child ? sync[1] : -1;
  plan.error_fd = errors[1];
  plan.die_with_parent = false;  // what a daemon's sandboxes use: they outlive it
  Child c;
  c.pid = ::fork();
  if (c.pid == 0) ChildMain(plan);
  c.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, c.pid, 0));
  EXPECT_GE(c.pidfd, 0);
  ::close(sync[0]);
  ::close(sync[1]);
  ::close(errors[1]);
  c.errors = errors[0];
  return c;
}

// Whether the child exits within `ms`.
bool ExitsWithin(const Child& c, int ms) {
  pollfd p{c.pidfd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

void Reap(Child& c, int* status) {
  ASSERT_EQ(::waitpid(c.pid, status, 0), c.pid);
  ::close(c.pidfd);
  ::close(c.errors);
}

TEST(SyncPipeTest, TheFirstProcessExitsWhenItsLauncherDiesBeforeGo) {
  Child c = StartAndAbandon(true);
  if (!ExitsWithin(c, 5000)) {
    ::kill(c.pid, SIGKILL);  // nothing left behind, even on failure
    int status = 0;
    Reap(c, &status);
    FAIL() << "the child still waits for a launcher that is gone";
  }
  ChildFailure f{};
  EXPECT_EQ(::read(c.errors, &f, sizeof f), static_cast<ssize_t>(sizeof f));
  EXPECT_EQ(f.step, Step::kSync);
  int status = 0;
  Reap(c, &status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 125);
}

// The control: a child that keeps its copy of the write end never sees EOF (the bug the close prevents), so the
// test above can fail.
TEST(SyncPipeTest, AChildKeepingTheWriteEndWaitsForever) {
  Child c = StartAndAbandon(false);
  EXPECT_FALSE(ExitsWithin(c, 300));
  ASSERT_EQ(::kill(c.pid, SIGKILL), 0);
  int status = 0;
  Reap(c, &status);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

}  // namespace
}  // namespace isb::engine
