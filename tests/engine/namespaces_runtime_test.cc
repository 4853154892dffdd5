// The namespaces runtime's handle records: written and read back, anything else refused, and a live one told from
// a process that took its pid.
#include "engine/namespaces_runtime.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace isb::engine {
namespace {

TEST(NamespacesRuntimeRecord, IsReadBackAsWritten) {
  const std::string record = NamespacesRuntime::Record({4242, 987654, 3});
  EXPECT_EQ(record, "pid=4242 start=987654 lease=3");
  std::optional<HostProcess> p = NamespacesRuntime::ParseRecord(record);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->pid, 4242);
  EXPECT_EQ(p->start_time, 987654u);
  EXPECT_EQ(p->lease_index, 3);
  std::optional<HostProcess> privileged = NamespacesRuntime::ParseRecord("pid=7 start=8 lease=-1");
  ASSERT_TRUE(privileged.has_value());
  EXPECT_EQ(privileged->lease_index, -1);
}

TEST(NamespacesRuntimeRecord, ARecordItDidNotWriteIsRefused) {
  for (const char* bad :
       {"", "pid=1 start=2", "pid=1 start=2 lease=3 more", "start=2 pid=1 lease=3", "pid=x start=2 lease=3", "fake-1",
        "pid=1  start=2 lease=3", "pid=1start=2lease=3", "pid=-7 start=2 lease=3", "pid=1 start=2 lease=3 ",
        "pid=01 start=2 lease=3", "pid=1 start=-2 lease=3"})
    EXPECT_FALSE(NamespacesRuntime::ParseRecord(bad).has_value()) << bad;
}

TEST(NamespacesRuntimeRecord, RunningOnlyWhileThePidIsStillTheProcessThatStartedThen) {
  NamespacesRuntime runtime(nullptr, {}, "/run/isb", "/nonexistent");
  const uint64_t started = ProcessStartTime(::getpid());
  ASSERT_GT(started, 0u);
  EXPECT_TRUE(runtime.Running({"sb-x", NamespacesRuntime::Record({::getpid(), started, -1})}));
  EXPECT_FALSE(runtime.Running({"sb-x", NamespacesRuntime::Record({::getpid(), started + 1, -1})}));
  EXPECT_FALSE(runtime.Running({"sb-x", ""}));
  EXPECT_FALSE(runtime.Running({"sb-x", "fake-1"}));
  // A pid that no longer exists has start time 0 to ProcessStartTime: a record of start 0 is never running.
  const pid_t gone = ::fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
  ASSERT_EQ(ProcessStartTime(gone), 0u);
  EXPECT_FALSE(runtime.Running({"sb-x", NamespacesRuntime::Record({gone, 0, -1})}));
}

}  // namespace
}  // namespace isb::engine
