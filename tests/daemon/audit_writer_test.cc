// AuditWriter: rows are written on its own thread, in order, and a full queue drops and counts rather than blocks.
#include "daemon/audit_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace isb::daemon {
namespace {

audit::Entry Row(const std::string& target) {
  audit::Entry e;
  e.action = "secret_use";
  e.target = target;
  return e;
}

TEST(AuditWriterTest, RowsAreWrittenInOrderOnTheWritersThreadNeverTheCallers) {
  Mutex mu;
  std::vector<std::string> written;
  std::vector<std::thread::id> threads;
  {
    AuditWriter writer([&](const audit::Entry& e) -> Status {
      MutexLock lock(mu);
      written.push_back(e.target);
      threads.push_back(std::this_thread::get_id());
      return {};
    });
    for (const char* id : {"sb1", "sb2", "sb3"}) writer.Queue(Row(id));
    writer.Drain();
    MutexLock lock(mu);
    EXPECT_EQ(written, (std::vector<std::string>{"sb1", "sb2", "sb3"}));
    ASSERT_EQ(threads.size(), 3u);
    for (const std::thread::id& id : threads) EXPECT_NE(id, std::this_thread::get_id());
    EXPECT_EQ(writer.dropped(), 0u);
  }
}

TEST(AuditWriterTest, AFullQueueDropsAndCountsRowsWithoutWaitingForTheDatabase) {
  std::atomic<bool> entered{false}, release{false};
  std::atomic<int> written{0};
  Mutex mu;
  std::vector<audit::Entry> summaries;
  AuditWriter writer([&](const audit::Entry& e) -> Status {
    entered = true;
    while (!release) std::this_thread::yield();
    if (e.action == "audit_rows_dropped") {
      MutexLock lock(mu);
      summaries.push_back(e);
    } else {
      ++written;
    }
    return {};
  });
  writer.Queue(Row("first"));  // taken by the writer, which then stalls as a locked database would
  while (!entered) std::this_thread::yield();
  for (size_t i = 0; i < AuditWriter::kMaxQueued + 5; ++i) writer.Queue(Row("more"));
  EXPECT_EQ(writer.dropped(), 5u);
  release = true;
  writer.Drain();
  EXPECT_EQ(written, static_cast<int>(AuditWriter::kMaxQueued) + 1);
  // Once the queue drained, one row says how many went.
  MutexLock lock(mu);
  ASSERT_EQ(summaries.size(), 1u);
  EXPECT_EQ(summaries[0].actor_kind, "system");
  EXPECT_EQ(summaries[0].outcome, "unavailable");
  EXPECT_EQ(summaries[0].details.dump(),
            R"({"dropped":5,"why":"the proxy's rows came faster than the audit log took them; secret_use rows went"})");
}

TEST(AuditWriterTest, ARowThatMustStayIsQueuedPastTheBoundAndNoDropsAreReportedWhenNoneWent) {
  std::atomic<bool> entered{false}, release{false};
  Mutex mu;
  std::vector<std::string> actions;
  AuditWriter writer([&](const audit::Entry& e) -> Status {
    entered = true;
    while (!release) std::this_thread::yield();
    MutexLock lock(mu);
    actions.push_back(e.action);
    return {};
  });
  writer.Queue(Row("first"));
  while (!entered) std::this_thread::yield();
  for (size_t i = 0; i < AuditWriter::kMaxQueued; ++i) writer.Queue(Row("more"));
  audit::Entry leak = Row("sb1");
  leak.action = "secret_leak";
  writer.Queue(leak, AuditWriter::Overflow::kKeep);
  EXPECT_EQ(writer.dropped(), 0u);
  release = true;
  writer.Drain();
  MutexLock lock(mu);
  ASSERT_EQ(actions.size(), AuditWriter::kMaxQueued + 2);
  EXPECT_EQ(actions.back(), "secret_leak");
  EXPECT_EQ(std::count(actions.begin(), actions.end(), "audit_rows_dropped"), 0);
}

TEST(AuditWriterTest, WhatIsQueuedAtDestructionIsWritten) {
  std::atomic<int> written{0};
  {
    AuditWriter writer([&](const audit::Entry&) -> Status {
      ++written;
      return {};
    });
    for (int i = 0; i < 10; ++i) writer.Queue(Row("sb1"));
  }
  EXPECT_EQ(written, 10);
}

}  // namespace
}  // namespace isb::daemon
