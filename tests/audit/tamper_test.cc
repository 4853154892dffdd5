// Tampering with the SQLite file directly, as someone with write access to it could (dropping the triggers first),
// and Verify naming the exact row and reason.
#include <gtest/gtest.h>

#include "audit/audit_fixture.h"
#include "audit/chain_encoding.h"
#include "audit/log.h"

namespace isb::audit {
namespace {

class TamperTest : public testing::AuditDbTest {
 protected:
  void SetUp() override {
    AuditDbTest::SetUp();
    for (int i = 1; i <= 10; ++i) {
      now_ms_ += 1000;
      Entry e;
      e.org = "acme";
      e.actor = "user" + std::to_string(i);
      e.action = "sandbox_exec";
      e.details = {{"argv", {"step", std::to_string(i)}}};
      auto h = log_->Append(e);
      ASSERT_TRUE(h.ok()) << h.error().message;
      heads_.push_back(*h);
    }
    ASSERT_EQ(Raw("DROP TRIGGER audit_log_no_update; DROP TRIGGER audit_log_no_delete; "
                  "DROP TRIGGER audit_log_append; DROP TRIGGER chain_anchors_advance"),
              "");
  }
  VerifyResult MustVerify(const std::optional<Head>& pinned = std::nullopt) {
    auto v = log_->Verify(pinned);
    EXPECT_TRUE(v.ok()) << v.error().message;
    return v.ok() ? *v : VerifyResult{};
  }

  Record Row(int64_t id) {
    auto r = log_->List({.after_id = id - 1, .limit = 1});
    EXPECT_TRUE(r.ok() && r->size() == 1u);
    return r.ok() && !r->empty() ? (*r)[0] : Record{};
  }

  std::string HashSet(const Record& r) { return "hash = '" + r.hash + "', prev_hash = '" + r.prev_hash + "'"; }

  // Swaps `cols` of rows 4 and 7.
  std::string SwapRows(const std::string& cols) {
    return Raw("CREATE TEMP TABLE t AS SELECT * FROM audit_log WHERE id IN (4, 7); UPDATE audit_log SET (" + cols +
               ") = (SELECT " + cols + " FROM t WHERE t.id = 11 - audit_log.id) WHERE id IN (4, 7)");
  }

  // Inserts a copy of row `from` as row `id` by "mallory", with prev_hash and hash given as SQL expressions.
  std::string Forge(int64_t id, int64_t from, const std::string& prev_sql, const std::string& hash) {
    return Raw("INSERT INTO audit_log SELECT " + std::to_string(id) +
               ", time, org, 'mallory', actor_kind, surface, "
               "action, target, details, outcome, ip, user_agent, request_id, " +
               prev_sql + ", '" + hash + "' " + "FROM audit_log WHERE id = " + std::to_string(from));
  }

  // Moves rows 5..10 up by one, leaving id 5 free.
  std::string MakeRoomAt5() {
    return Raw("UPDATE audit_log SET id = -id WHERE id >= 5; UPDATE audit_log SET id = 1 - id WHERE id < 0");
  }

  std::vector<Head> heads_;  // heads_[i] is row i + 1
};

TEST_F(TamperTest, UntouchedChainVerifies) {
  VerifyResult v = MustVerify(heads_[9]);
  EXPECT_TRUE(v.ok);
  EXPECT_EQ(v.rows, 10);
  EXPECT_EQ(v.head, heads_[9]);
}

TEST_F(TamperTest, EditedFieldIsFoundAtItsRow) {
  ASSERT_EQ(Raw("UPDATE audit_log SET actor = 'nobody' WHERE id = 5"), "");
  VerifyResult v = MustVerify();
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.first_broken, (Broken{5, kReasonHash}));
  EXPECT_EQ(v.rows, 10);
  EXPECT_EQ(v.head, heads_[9]);
}

TEST_F(TamperTest, EditedTimeOrDetailsIsFoundAtItsRow) {
  ASSERT_EQ(Raw("UPDATE audit_log SET time = time + 1 WHERE id = 3"), "");
  EXPECT_EQ(MustVerify().first_broken, (Broken{3, kReasonHash}));
  ASSERT_EQ(Raw("UPDATE audit_log SET time = time - 1 WHERE id = 3; "
                "UPDATE audit_log SET details = '{\"argv\":[\"rm\"]}' WHERE id = 2"),
            "");
  EXPECT_EQ(MustVerify().first_broken, (Broken{2, kReasonHash}));
}

TEST_F(TamperTest, EditedRowWithItsHashRecomputedBreaksTheNextLink) {
  Record r = Row(5);
  r.actor = "nobody";
  r.hash = RecordHash(r);
  ASSERT_EQ(Raw("UPDATE audit_log SET actor = 'nobody', hash = '" + r.hash + "' WHERE id = 5"), "");
  EXPECT_EQ(MustVerify().first_broken, (Broken{6, kReasonLink}));
}

TEST_F(TamperTest, DeletedMiddleRowIsFoundAtItsId) {
  ASSERT_EQ(Raw("DELETE FROM audit_log WHERE id = 5"), "");
  VerifyResult v = MustVerify();
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.first_broken, (Broken{5, kReasonMissing}));
  EXPECT_EQ(v.rows, 9);
}

TEST_F(TamperTest, DeletedFirstRowIsFound) {
  ASSERT_EQ(Raw("DELETE FROM audit_log WHERE id = 1"), "");
  EXPECT_EQ(MustVerify().first_broken, (Broken{1, kReasonMissing}));
}

TEST_F(TamperTest, SwappedRowsAreFoundAtTheFirst) {
  std::string cols =
      "time, org, actor, actor_kind, surface, action, target, details, outcome, ip, user_agent, "
      "request_id, prev_hash, hash";
  ASSERT_EQ(SwapRows(cols), "");
  EXPECT_EQ(Row(4).actor, "user7");
  EXPECT_EQ(MustVerify().first_broken, (Broken{4, kReasonLink}));
}

TEST_F(TamperTest, SwappedContentsWithHashesLeftInPlaceAreFoundAtTheFirst) {
  std::string cols =
      "time, org, actor, actor_kind, surface, action, target, details, outcome, ip, user_agent, "
      "request_id";
  ASSERT_EQ(SwapRows(cols), "");
  EXPECT_EQ(MustVerify().first_broken, (Broken{4, kReasonHash}));
}

TEST_F(TamperTest, ForgedRowAtTheHeadWithAWrongHashIsFound) {
  ASSERT_EQ(Forge(11, 10, "hash", Sha256Hex("forged")), "");
  VerifyResult v = MustVerify();
  EXPECT_EQ(v.first_broken, (Broken{11, kReasonHash}));
  EXPECT_EQ(v.rows, 11);
}

TEST_F(TamperTest, ForgedRowInsertedInTheMiddleIsFound) {
  // Make room at id 5, then insert a row whose own hash is computed correctly.
  ASSERT_EQ(MakeRoomAt5(), "");
  Record forged = Row(4);
  forged.id = 5;
  forged.actor = "mallory";
  forged.prev_hash = heads_[3].hash;
  forged.hash = RecordHash(forged);
  ASSERT_EQ(Forge(5, 4, "'" + forged.prev_hash + "'", forged.hash), "");
  VerifyResult v = MustVerify();
  // The forged row links to row 4 and hashes right; the row after it no longer links.
  EXPECT_EQ(v.first_broken, (Broken{6, kReasonLink}));
  EXPECT_EQ(v.rows, 11);
}

TEST_F(TamperTest, ForgedRowWithAPlausibleHashInTheMiddleIsFoundAtItsId) {
  ASSERT_EQ(MakeRoomAt5(), "");
  ASSERT_EQ(Forge(5, 4, "hash", Sha256Hex("forged")), "");
  EXPECT_EQ(MustVerify().first_broken, (Broken{5, kReasonHash}));
}

TEST_F(TamperTest, TruncatedTailIsFoundOnlyAgainstAPinnedHead) {
  ASSERT_EQ(Raw("DELETE FROM audit_log WHERE id >= 9"), "");
  VerifyResult plain = MustVerify();
  EXPECT_TRUE(plain.ok);  // a shorter chain is a valid chain: why the head should be pinned elsewhere
  EXPECT_EQ(plain.head, heads_[7]);
  VerifyResult pinned = MustVerify(heads_[9]);
  EXPECT_FALSE(pinned.ok);
  EXPECT_EQ(pinned.first_broken, (Broken{9, kReasonTruncated}));
}

TEST_F(TamperTest, RebuiltChainIsFoundAgainstAPinnedHead) {
  // Rewrite row 8 and rehash rows 8..10: a consistent chain, but not the one that was pinned.
  for (int64_t id = 8; id <= 10; ++id) {
    Record r = Row(id);
    if (id == 8) r.actor = "nobody";
    if (id > 8) r.prev_hash = Row(id - 1).hash;
    r.hash = RecordHash(r);
    ASSERT_EQ(
        Raw("UPDATE audit_log SET actor = '" + r.actor + "', " + HashSet(r) + " WHERE id = " + std::to_string(id)), "");
  }
  EXPECT_TRUE(MustVerify().ok);
  EXPECT_EQ(MustVerify(heads_[8]).first_broken, (Broken{9, kReasonPinned}));
}

TEST_F(TamperTest, AlteredAnchorBreaksTheFirstRow) {
  ASSERT_EQ(Raw("UPDATE chain_anchors SET hash = '" + Sha256Hex("x") + "' WHERE chain = 'audit_log'"), "");
  EXPECT_EQ(MustVerify().first_broken, (Broken{1, kReasonLink}));
}

TEST_F(TamperTest, RowBeforeTheAnchorIsFound) {
  now_ms_ += 100'000;
  auto p = log_->Prune(std::chrono::milliseconds(110'000 - 3001));  // the rows at +1000..+3000 go
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->pruned_through, heads_[2]);
  EXPECT_TRUE(MustVerify().ok);
  ASSERT_EQ(Raw("INSERT INTO audit_log SELECT 2, time, org, actor, actor_kind, surface, action, target, details, "
                "outcome, ip, user_agent, request_id, prev_hash, hash FROM audit_log WHERE id = 4"),
            "");
  EXPECT_EQ(MustVerify().first_broken, (Broken{2, kReasonBeforeAnchor}));
}

}  // namespace
}  // namespace isb::audit
