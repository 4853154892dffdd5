#include "audit/retention.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "audit/audit_fixture.h"
#include "audit/verify_report.h"
#include "store/migrations.h"

namespace isb::audit {
namespace {

using std::chrono::milliseconds;

class RetentionTest : public testing::HistoryDbTest {
 protected:
  // Audit rows at 1000, 2000, 3000 and 4000; history rows at 1000, 2000, 3000.
  void Fill() {
    for (int i = 1; i <= 4; ++i) {
      now_ms_ = 1000 * i;
      Entry e{.org = "acme", .actor = "user:alice", .actor_kind = "user", .surface = "rest", .action = "sandbox_start"};
      ASSERT_TRUE(log_->Append(e).ok());
      if (i < 4) {
        ASSERT_TRUE(
            history_->Record({.sandbox = "sb-1", .org = "acme", .event = "started", .actor_kind = "system"}).ok());
      }
    }
  }
};

TEST(ParseRetentionTest, DurationsOffAndTooShort) {
  EXPECT_EQ(*ParseRetention("90d"), std::optional(milliseconds(90LL * 86'400'000)));
  EXPECT_EQ(*ParseRetention("12h"), std::optional(milliseconds(12LL * 3'600'000)));
  EXPECT_FALSE(ParseRetention("off")->has_value());
  EXPECT_FALSE(ParseRetention("0")->has_value());
  auto short_one = ParseRetention("30m");
  ASSERT_FALSE(short_one.ok());
  EXPECT_EQ(short_one.error().code, Code::kInvalidArgument);
  EXPECT_EQ(short_one.error().message, "--audit-retention: must be at least 1h, or off (never prune)");
  auto bad = ParseRetention("ninety");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "--audit-retention: invalid duration 'ninety' (expected e.g. 30s, 500ms, 5m, 2h)");
  EXPECT_EQ(kDefaultRetention, milliseconds(90LL * 86'400'000));
}

TEST_F(RetentionTest, OldRowsGoAndBothChainsStillVerify) {
  Fill();
  auto before = log_->List({});
  ASSERT_TRUE(before.ok());
  now_ms_ = 10'000;
  // Older than 10000 - 7500 = 2500: the rows at 1000 and 2000 of each chain.
  auto r = PruneChains(*log_, *history_, milliseconds(7500));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->audit_log.rows, 2);
  EXPECT_EQ(r->history.rows, 2);
  EXPECT_EQ(PruneLine(*r), "pruned 2 audit log rows (anchor 2) and 2 history rows (anchor 2)");
  auto rows = log_->List({});
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].id, 3);
  auto events = history_->Query({});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].id, 3);

  auto log_v = log_->Verify();
  auto history_v = history_->Verify();
  ASSERT_TRUE(log_v.ok() && history_v.ok());
  EXPECT_EQ(VerifyReportLine("audit log", *log_v),
            "audit log ok: 2 rows, head 4 " + (*before)[3].hash + ", pruned through 2 " + (*before)[1].hash);
  EXPECT_EQ(VerifyReportJson(*log_v)["pruned_through"], (nlohmann::json{{"id", 2}, {"hash", (*before)[1].hash}}));
  EXPECT_TRUE(history_v->ok);
  EXPECT_EQ(history_v->pruned_through.id, 2);

  // Nothing more is old enough: no line.
  auto again = PruneChains(*log_, *history_, milliseconds(7500));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(PruneLine(*again), "");
}

// A head pinned before pruning reached it is checked as before; one that pruning passed, or reached, vouches for
// nothing kept and is never "ok": else whoever can write the database would erase the whole log with one update of
// the anchor (the triggers let it advance to any row's hash), and a verify against the head kept from before would
// pass on an empty log.
TEST_F(RetentionTest, AHeadPinnedAtOrBeforeTheAnchorIsNeverOk) {
  Fill();
  auto before = log_->List({});
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->size(), 4u);
  const Head second{2, (*before)[1].hash}, third{3, (*before)[2].hash}, last{4, (*before)[3].hash};
  now_ms_ = 10'000;
  ASSERT_TRUE(PruneChains(*log_, *history_, milliseconds(7500)).ok());  // through row 2

  auto kept = log_->Verify(third);
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->ok);
  const std::pair<Head, const char*> pins[] = {{Head{1, (*before)[0].hash}, kReasonPinnedPruned},
                                               {second, kReasonPinnedPruned},
                                               {Head{2, std::string(64, '0')}, kReasonPinned}};
  for (const auto& [pin, reason] : pins) {
    auto v = log_->Verify(pin);
    ASSERT_TRUE(v.ok());
    EXPECT_FALSE(v->ok) << pin.id;
    EXPECT_EQ(v->first_broken, (Broken{pin.id, reason})) << pin.id;
  }
  EXPECT_EQ(VerifyReportLine("audit log", *log_->Verify(second)),
            "audit log BROKEN at row 2: " + std::string(kReasonPinnedPruned) + " (2 rows, head 4 " + last.hash +
                ", pruned through 2 " + second.hash + ")");

  // The whole log erased by moving the anchor to its last row: the head kept from before names it.
  EXPECT_EQ(Raw("UPDATE chain_anchors SET pruned_through = 4, hash = '" + last.hash + "' WHERE chain = 'audit_log'"),
            "");
  auto erased = log_->Verify(last);
  ASSERT_TRUE(erased.ok());
  EXPECT_EQ(erased->rows, 0);
  EXPECT_FALSE(erased->ok);
  EXPECT_EQ(erased->first_broken, (Broken{4, kReasonPinnedPruned}));
}

// `isb audit verify` runs in a process of its own beside the daemon's pruner: in a snapshot, each chain is verified
// as it was when the snapshot began, however many of its rows another connection prunes meanwhile. Outside one, a
// walk could take the anchor of before a prune and the rows of after it, and report a break that is not there.
TEST_F(RetentionTest, AVerifyInASnapshotSeesTheChainsOfOneMoment) {
  Fill();
  auto other = store::Db::Open(path_, store::Migrations());
  ASSERT_TRUE(other.ok()) << other.error().message;
  auto other_log = AuditLog::Open(**other, DefaultDetailsPolicy(), TestClock());
  auto other_history = History::Open(**other, TestClock());
  ASSERT_TRUE(other_log.ok() && other_history.ok());
  now_ms_ = 10'000;
  Result<VerifyResult> log_v = Error::Msg("not run"), history_v = Error::Msg("not run");
  Status read = (*other)->Snapshot([&]() -> Status {
    auto first = (*other)->Query("SELECT count(*) FROM audit_log");  // the snapshot starts here
    if (!first.ok()) return first.error();
    // The "daemon" prunes two rows of each chain on its own connection, and commits.
    auto pruned = PruneChains(*log_, *history_, milliseconds(7500));
    if (!pruned.ok()) return pruned.error();
    if (pruned->audit_log.rows != 2 || pruned->history.rows != 2) return Error::Msg("the prune did not happen");
    log_v = (*other_log)->Verify();
    history_v = (*other_history)->Verify();
    return {};
  });
  ASSERT_TRUE(read.ok()) << read.error().message;
  ASSERT_TRUE(log_v.ok() && history_v.ok());
  // Every read was of before the prune: all four rows, nothing pruned, and the chain whole.
  EXPECT_TRUE(log_v->ok);
  EXPECT_EQ(log_v->rows, 4);
  EXPECT_EQ(log_v->pruned_through.id, 0);
  EXPECT_TRUE(history_v->ok);
  EXPECT_EQ(history_v->rows, 3);
  EXPECT_EQ(history_v->pruned_through.id, 0);
  // Once the snapshot has ended, the same connection sees the prune.
  auto after = (*other_log)->Verify();
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->ok);
  EXPECT_EQ(after->rows, 2);
  EXPECT_EQ(after->pruned_through.id, 2);
  other_history->reset();
  other_log->reset();
}

TEST_F(RetentionTest, TriggersStillRefuseEditsAfterPruning) {
  Fill();
  now_ms_ = 10'000;
  ASSERT_TRUE(PruneChains(*log_, *history_, milliseconds(7500)).ok());
  EXPECT_EQ(Raw("DELETE FROM audit_log WHERE id = 3"),
            "audit_log is append-only: rows are deleted only by retention pruning");
  EXPECT_EQ(Raw("UPDATE audit_log SET actor = 'user:mallory' WHERE id = 4"),
            "audit_log is append-only: rows cannot be changed");
  EXPECT_EQ(Raw("DELETE FROM sandbox_history WHERE id = 3"),
            "sandbox_history is append-only: rows are deleted only by retention pruning");
  EXPECT_EQ(Raw("UPDATE sandbox_history SET event = 'created' WHERE id = 3"),
            "sandbox_history is append-only: rows cannot be changed");
  // The anchor moves only forward, to a row's hash.
  EXPECT_EQ(Raw("UPDATE chain_anchors SET pruned_through = 1 WHERE chain = 'audit_log'"),
            "chain_anchors: an anchor only advances, to the hash of a row of its chain");
  auto v = log_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok);
  EXPECT_EQ(v->rows, 2);
}

TEST_F(RetentionTest, PrunerPrunesAtStartThenEachIntervalAndStops) {
  Fill();
  now_ms_ = 10'000;
  std::mutex mu;
  std::vector<std::string> lines;
  RetentionPruner pruner(*log_, *history_, milliseconds(7500), milliseconds(10), [&](const std::string& line) {
    std::lock_guard lock(mu);
    lines.push_back(line);
  });
  pruner.Start();
  {
    std::lock_guard lock(mu);
    // The prune at start has happened when Start returns.
    ASSERT_EQ(lines, std::vector<std::string>{
                         "audit retention: pruned 2 audit log rows (anchor 2) and 2 history rows (anchor 2)"});
  }
  now_ms_ = 100'000;  // every row is now old enough
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard lock(mu);
      if (lines.size() >= 2) break;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  pruner.Stop();
  pruner.Stop();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "audit retention: pruned 2 audit log rows (anchor 4) and 1 history rows (anchor 3)");
  auto v = log_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok);
  EXPECT_EQ(v->rows, 0);
}

TEST_F(RetentionTest, APruneThatFailsIsReported) {
  Fill();
  ASSERT_EQ(Raw("DROP TRIGGER audit_log_no_update; UPDATE audit_log SET actor = 'x' WHERE id = 1"), "");
  now_ms_ = 10'000;
  std::vector<std::string> lines;
  RetentionPruner pruner(*log_, *history_, milliseconds(7500), std::chrono::hours(1),
                         [&](const std::string& line) { lines.push_back(line); });
  pruner.RunOnce();
  EXPECT_EQ(lines, std::vector<std::string>{
                       "audit retention: refusing to prune audit_log: the chain is broken at row 1 (hash does not "
                       "match the row's contents); pruning would erase the evidence"});
}

}  // namespace
}  // namespace isb::audit
