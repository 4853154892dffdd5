// The detached commands' log: the ring's bound, its drop count, reads from a cursor; the threads' cap and ends.
#include "daemon/sandbox_logs.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace isb::daemon {
namespace {

using api::LogChunk;
using Kind = LogChunk::Kind;

// The output of a read, as "log_id:stream:data" items and exits as "log_id:exit:code".
std::string Text(const api::LogRead& r) {
  std::string out;
  for (const LogChunk& c : r.chunks) {
    out += std::to_string(c.log_id) + ":";
    if (c.kind == Kind::kExit)
      out += "exit:" + std::to_string(c.exit_code) + (c.error.empty() ? "" : ":" + c.error);
    else
      out += std::string(c.kind == Kind::kStderr ? "err:" : "out:") + c.data;
    out += "|";
  }
  return out;
}

api::LogRead MustRead(const LogRing& ring, uint64_t after, size_t limit = 1 << 20) {
  auto r = ring.Read(after, limit);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : api::LogRead{};
}

TEST(LogRingTest, KeepsOutputAndExitsInOrderWithTheirCursors) {
  LogRing ring(100);
  ring.Output(1, 1, "out\n");
  ring.Output(1, 2, "err\n");
  ring.Output(1, 1, "done\n");
  ring.Exit(1, {0, 0, ""});
  api::LogRead r = MustRead(ring, 0);
  EXPECT_EQ(Text(r), "1:out:out\n|1:err:err\n|1:out:done\n|1:exit:0|");
  ASSERT_EQ(r.chunks.size(), 4u);
  EXPECT_EQ(r.chunks[0].cursor, 0u);
  EXPECT_EQ(r.chunks[1].cursor, 4u);
  EXPECT_EQ(r.chunks[2].cursor, 8u);
  EXPECT_EQ(r.chunks[3].cursor, 13u);
  EXPECT_EQ(r.next, 14u);
  EXPECT_EQ(r.end, 14u);
  EXPECT_EQ(r.dropped, 0u);
  EXPECT_EQ(r.start, 0u);
}

TEST(LogRingTest, ConsecutiveOutputOfOneStreamIsOneChunk) {
  LogRing ring(100);
  ring.Output(1, 1, "ab");
  ring.Output(1, 1, "cd");
  ring.Output(2, 1, "ef");  // another command
  EXPECT_EQ(Text(MustRead(ring, 0)), "1:out:abcd|2:out:ef|");
}

TEST(LogRingTest, ACharacterCutBetweenWritesIsKeptWholeWhateverFallsBetween) {
  LogRing ring(100);
  ring.Output(1, 1, "a\xE2");  // the euro sign's first byte
  ring.Output(2, 1, "x\n");    // another command
  ring.Output(1, 2, "e\xC3");  // the same command's other stream, cut too
  EXPECT_EQ(ring.end(), 4u);   // the cut bytes wait
  ring.Output(1, 1, "\x82\xAC\n");
  ring.Output(1, 1, "\xFF");      // a byte no character begins with does not wait
  ring.Output(1, 1, "\xE0\x80");  // nor an overlong start
  ring.Exit(1, {0, 0, ""});       // what waited goes in before the exit, as it is
  EXPECT_EQ(Text(MustRead(ring, 0)), "1:out:a|2:out:x\n|1:err:e|1:out:\xE2\x82\xAC\n\xFF\xE0\x80|1:err:\xC3|1:exit:0|");
}

TEST(LogRingTest, AReadFromACursorGivesWhatFollowsItAndNothingTwice) {
  LogRing ring(100);
  ring.Output(1, 1, "hello world");
  api::LogRead r = MustRead(ring, 6);
  EXPECT_EQ(Text(r), "1:out:world|");
  EXPECT_EQ(r.chunks[0].cursor, 6u);
  EXPECT_EQ(r.next, 11u);
  // Caught up: nothing, and the same cursor.
  r = MustRead(ring, 11);
  EXPECT_TRUE(r.chunks.empty());
  EXPECT_EQ(r.next, 11u);
  ring.Exit(1, {3, 0, ""});
  r = MustRead(ring, 11);
  EXPECT_EQ(Text(r), "1:exit:3|");
  EXPECT_EQ(r.next, 12u);
  EXPECT_TRUE(MustRead(ring, 12).chunks.empty());
}

TEST(LogRingTest, ACursorBeyondTheEndIsRefused) {
  LogRing ring(100);
  ring.Output(1, 1, "abc");
  auto r = ring.Read(4, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_EQ(r.error().message, "after: beyond the end of the log (3)");
}

TEST(LogRingTest, WrapsAroundDroppingTheOldestBytesAndCountsThem) {
  LogRing ring(10);
  ring.Output(1, 1, "0123456");
  ring.Output(1, 2, "789abc");  // 13 bytes: the oldest 3 go
  EXPECT_EQ(ring.start(), 3u);
  EXPECT_EQ(ring.end(), 13u);
  EXPECT_EQ(ring.dropped_bytes(), 3u);
  api::LogRead r = MustRead(ring, 0);
  EXPECT_EQ(r.dropped, 3u);
  EXPECT_EQ(Text(r), "1:out:3456|1:err:789abc|");
  EXPECT_EQ(r.chunks[0].cursor, 3u);
  // A cursor inside what was dropped loses only what lay after it.
  EXPECT_EQ(MustRead(ring, 2).dropped, 1u);
  EXPECT_EQ(MustRead(ring, 3).dropped, 0u);
  // Whole chunks go too, and exits count one each.
  ring.Exit(1, {0, 0, ""});
  ring.Output(2, 1, "XYZ");
  EXPECT_EQ(ring.start(), 7u);  // 14 + 3 = 17 positions, 10 kept
  r = MustRead(ring, 0);
  EXPECT_EQ(r.dropped, 7u);
  EXPECT_EQ(Text(r), "1:err:789abc|1:exit:0|2:out:XYZ|");
  ring.Output(2, 1, std::string(9, 'z'));  // the stderr chunk, the exit and "XY" go
  EXPECT_EQ(ring.dropped_bytes(), 15u);    // 3 + 4 ("3456") + 6 + 2 ("XY")
  EXPECT_EQ(ring.dropped_exits(), 1u);
  EXPECT_EQ(Text(MustRead(ring, 0)), "2:out:Zzzzzzzzzz|");
}

TEST(LogRingTest, OutputLargerThanTheRingKeepsItsLastBytes) {
  LogRing ring(4);
  ring.Output(1, 1, "ab");
  ring.Output(1, 1, "0123456789");
  EXPECT_EQ(ring.start(), 8u);
  EXPECT_EQ(ring.end(), 12u);
  EXPECT_EQ(ring.dropped_bytes(), 8u);
  api::LogRead r = MustRead(ring, 0);
  EXPECT_EQ(r.dropped, 8u);
  EXPECT_EQ(Text(r), "1:out:6789|");
}

// A full ring drops the first record's oldest bytes by skipping them: reads start at its first byte kept, and each
// dropped byte is counted once, however it goes later.
TEST(LogRingTest, APartlyDroppedFirstRecordReadsFromItsFirstKeptByteAndCountsEachByteOnce) {
  LogRing ring(10);
  ring.Output(1, 1, "0123456789");
  ring.Output(1, 2, "ab");  // "01" go
  EXPECT_EQ(ring.start(), 2u);
  EXPECT_EQ(ring.dropped_bytes(), 2u);
  api::LogRead r = MustRead(ring, 0);
  EXPECT_EQ(r.dropped, 2u);
  EXPECT_EQ(Text(r), "1:out:23456789|1:err:ab|");
  EXPECT_EQ(r.chunks[0].cursor, 2u);
  r = MustRead(ring, 5, 3);
  EXPECT_EQ(Text(r), "1:out:567|");
  EXPECT_EQ(r.chunks[0].cursor, 5u);
  EXPECT_EQ(r.next, 8u);
  ring.Output(1, 2, "c");  // "2" goes too
  EXPECT_EQ(Text(MustRead(ring, 0)), "1:out:3456789|1:err:abc|");
  ring.Exit(1, {0, 0, ""});  // and "3"
  EXPECT_EQ(Text(MustRead(ring, 0)), "1:out:456789|1:err:abc|1:exit:0|");
  EXPECT_EQ(ring.dropped_bytes(), 4u);
  // More than the ring holds: all it kept goes, what is left of the first record counted once.
  ring.Output(2, 1, std::string(15, 'z'));
  EXPECT_EQ(ring.dropped_bytes(), 4u + 6 + 3 + 5);
  EXPECT_EQ(ring.dropped_exits(), 1u);
  EXPECT_EQ(ring.start(), 19u);
  EXPECT_EQ(ring.end(), 29u);
  EXPECT_EQ(Text(MustRead(ring, 0)), "2:out:zzzzzzzzzz|");
}

TEST(LogRingTest, ABoundOnRecordsDropsTheOldestWhole) {
  LogRing ring(100, 2);
  ring.Output(1, 1, "a");
  ring.Output(1, 2, "b");
  ring.Output(1, 1, "c");
  EXPECT_EQ(Text(MustRead(ring, 0)), "1:err:b|1:out:c|");
  EXPECT_EQ(ring.start(), 1u);
}

TEST(LogRingTest, AReadHoldsAtMostItsLimitOfOutputButAlwaysSomething) {
  LogRing ring(100);
  ring.Output(1, 1, "abcdef");
  ring.Output(1, 2, "gh");
  ring.Exit(1, {0, 0, ""});
  api::LogRead r = MustRead(ring, 0, 4);
  EXPECT_EQ(Text(r), "1:out:abcd|");
  EXPECT_EQ(r.next, 4u);
  r = MustRead(ring, r.next, 4);
  EXPECT_EQ(Text(r), "1:out:ef|1:err:gh|1:exit:0|");
  EXPECT_EQ(r.next, 9u);
  r = MustRead(ring, 0, 0);
  EXPECT_EQ(Text(r), "1:out:a|");
}

TEST(LogRingTest, ChunksAreSplitIntoBoundedRecordsThatReadBackWhole) {
  LogRing ring(1 << 20);
  std::string big(200000, 'x');
  ring.Output(1, 1, big);
  api::LogRead r = MustRead(ring, 0);
  std::string all;
  for (const LogChunk& c : r.chunks) all += c.data;
  EXPECT_EQ(all, big);
  EXPECT_EQ(r.next, 200000u);
  EXPECT_GT(r.chunks.size(), 1u);
}

// A body that waits until told to end, then exits with `code`.
DetachedBody Waiting(std::atomic<bool>* release, int code) {
  return [release, code](const auto& output) {
    output(1, "started\n");
    while (!release->load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return DetachedEnd{code, 0, ""};
  };
}

api::LogRead WaitUntilNoneRun(DetachedExecs& d, const std::string& sandbox) {
  for (int i = 0; i < 1000; ++i) {
    auto r = d.Read(sandbox, 0, 1 << 20);
    if (r.ok() && r->running == 0) return *r;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << "the detached bodies did not end";
  return {};
}

TEST(DetachedExecsTest, RunsBodiesLogsTheirOutputAndEndsAndCapsThemPerSandbox) {
  DetachedExecs d;
  std::atomic<bool> release{false};
  for (int i = 1; i <= 16; ++i) {
    auto started = d.Start("sb-a", Waiting(&release, i));
    ASSERT_TRUE(started.ok()) << started.error().message;
    EXPECT_EQ(started->log_id, i);
  }
  auto refused = d.Start("sb-a", Waiting(&release, 0));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kConflict);
  EXPECT_EQ(refused.error().message,
            "sandbox 'sb-a' already runs 16 detached commands, the most it may; wait for one to end, or stop the "
            "sandbox to end them all");
  // Another sandbox has its own count and its own log ids.
  auto other = d.Start("sb-b", [](const auto& output) {
    output(2, "oops\n");
    return DetachedEnd{-1, 0, "the sandbox stopped during the exec"};
  });
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->log_id, 1);
  EXPECT_EQ(Text(WaitUntilNoneRun(d, "sb-b")), "1:err:oops\n|1:exit:-1:the sandbox stopped during the exec|");

  auto running = d.Read("sb-a", 0, 1 << 20);
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->running, 16u);
  release = true;
  api::LogRead r = WaitUntilNoneRun(d, "sb-a");
  int exits = 0, outputs = 0;
  for (const LogChunk& c : r.chunks) (c.kind == Kind::kExit ? exits : outputs) += 1;
  EXPECT_EQ(exits, 16);
  EXPECT_EQ(outputs, 16);
  // Room again: the 17th runs now.
  auto again = d.Start("sb-a", Waiting(&release, 0));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->log_id, 17);
}

TEST(DetachedExecsTest, TheDaemonRunsAtMostItsTotalAndCountsEachSandboxsRunning) {
  DetachedExecs d(3);
  std::atomic<bool> release{false};
  ASSERT_TRUE(d.Start("sb-a", Waiting(&release, 0)).ok());
  ASSERT_TRUE(d.Start("sb-a", Waiting(&release, 0)).ok());
  ASSERT_TRUE(d.Start("sb-b", Waiting(&release, 0)).ok());
  EXPECT_EQ(d.Running("sb-a"), 2u);
  EXPECT_EQ(d.Running("sb-b"), 1u);
  EXPECT_EQ(d.Running("sb-c"), 0u);
  auto refused = d.Start("sb-c", Waiting(&release, 0));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kUnavailable);
  EXPECT_EQ(refused.error().message,
            "the daemon runs 3 detached commands, the most it may at once; try again when one ends");
  release = true;
  WaitUntilNoneRun(d, "sb-a");
  WaitUntilNoneRun(d, "sb-b");
  EXPECT_EQ(d.Running("sb-a"), 0u);
  auto now = d.Start("sb-c", Waiting(&release, 0));
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->log_id, 1);  // the refused attempt took no log id
}

// A start that raced its sandbox's removal (it found the sandbox, then Forget ran) makes no log again.
TEST(DetachedExecsTest, AStartAfterItsSandboxWasForgottenIsRefusedAndLeavesNoLog) {
  DetachedExecs d;
  std::atomic<bool> release{true};
  ASSERT_TRUE(d.Start("sb-a", Waiting(&release, 0)).ok());
  WaitUntilNoneRun(d, "sb-a");
  d.Forget("sb-a");
  bool ran = false;
  auto refused = d.Start("sb-a", [&ran](const auto&) {
    ran = true;
    return DetachedEnd{0, 0, ""};
  });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kNotFound);
  EXPECT_EQ(refused.error().message, "no sandbox 'sb-a'");
  d.StopAll();  // joins any thread the refused start might have begun
  EXPECT_FALSE(ran);
  auto r = d.Read("sb-a", 0, 100);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->chunks.empty());
  EXPECT_EQ(r->end, 0u);
  EXPECT_EQ(d.Running("sb-a"), 0u);
}

TEST(DetachedExecsTest, OnlyTheLastForgottenSandboxesAreRemembered) {
  DetachedExecs d;
  d.Forget("sb-old");
  for (size_t i = 0; i < DetachedExecs::kForgottenKept - 1; ++i) d.Forget("sb-" + std::to_string(i));
  std::atomic<bool> release{true};
  EXPECT_EQ(d.Start("sb-old", Waiting(&release, 0)).error().code, Code::kNotFound);
  d.Forget("sb-new");  // the oldest, sb-old, is let go
  auto started = d.Start("sb-old", Waiting(&release, 0));
  EXPECT_TRUE(started.ok()) << started.error().message;
  EXPECT_EQ(d.Start("sb-new", Waiting(&release, 0)).error().code, Code::kNotFound);
  EXPECT_EQ(d.Start("sb-0", Waiting(&release, 0)).error().code, Code::kNotFound);
}

TEST(DetachedExecsTest, AForgottenSandboxHasAnEmptyLogAndStopAllEndsTheBodies) {
  DetachedExecs d;
  std::atomic<bool> never{false};
  ASSERT_TRUE(d.Start("sb-a", [&d](const auto& output) {
                 output(1, "x");
                 while (!d.Stopping()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
                 return DetachedEnd{137, 9, ""};
               }).ok());
  d.Forget("sb-a");
  auto r = d.Read("sb-a", 0, 100);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->chunks.empty());
  EXPECT_EQ(r->running, 0u);
  d.StopAll();  // returns only once the body has seen Stopping
  EXPECT_TRUE(d.Stopping());
  auto refused = d.Start("sb-a", Waiting(&never, 0));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kUnavailable);
}

}  // namespace
}  // namespace isb::daemon
