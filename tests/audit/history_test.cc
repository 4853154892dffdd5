#include "audit/history.h"

#include <gtest/gtest.h>

#include "audit/audit_fixture.h"
#include "audit/chain_encoding.h"
#include "audit/log.h"

namespace isb::audit {
namespace {

class HistoryTest : public testing::HistoryDbTest {
 protected:
  Head MustRecord(std::string sandbox, std::string org, std::string event, std::string actor = "") {
    auto h = history_->Record({.sandbox = std::move(sandbox),
                               .org = std::move(org),
                               .event = std::move(event),
                               .actor = actor,
                               .actor_kind = actor.empty() ? "system" : "user"});
    EXPECT_TRUE(h.ok()) << h.error().message;
    return h.ok() ? *h : Head{};
  }

  std::vector<std::string> Events(const HistoryFilter& f) {
    std::vector<std::string> out;
    auto r = history_->Query(f);
    EXPECT_TRUE(r.ok()) << r.error().message;
    if (r.ok())
      for (const auto& e : *r) out.push_back(std::to_string(e.id) + ":" + e.entry.sandbox + ":" + e.entry.event);
    return out;
  }
};

TEST_F(HistoryTest, LifecycleEventsChainAndQuery) {
  now_ms_ = 1000;
  MustRecord("sb1", "acme", "created", "alice");
  MustRecord("sb1", "acme", "started", "alice");
  now_ms_ = 2000;
  MustRecord("sb2", "beta", "created", "bob");
  MustRecord("sb1", "acme", "oom");
  now_ms_ = 3000;
  MustRecord("sb1", "acme", "reaped");
  MustRecord("sb2", "beta", "adopted");
  MustRecord("sb2", "beta", "stopped", "bob");
  Head last = MustRecord("sb2", "beta", "removed", "bob");
  EXPECT_EQ(last.id, 8);

  EXPECT_EQ(Events({.sandbox = "sb1"}),
            (std::vector<std::string>{"1:sb1:created", "2:sb1:started", "4:sb1:oom", "5:sb1:reaped"}));
  EXPECT_EQ(Events({.org = "beta", .since_ms = 3000}),
            (std::vector<std::string>{"6:sb2:adopted", "7:sb2:stopped", "8:sb2:removed"}));
  EXPECT_EQ(Events({.until_ms = 2000, .after_id = 1}), (std::vector<std::string>{"2:sb1:started"}));
  EXPECT_EQ(Events({.limit = 2}), (std::vector<std::string>{"1:sb1:created", "2:sb1:started"}));

  auto first = history_->Query({.limit = 1});
  ASSERT_TRUE(first.ok());
  const HistoryEvent& e = (*first)[0];
  EXPECT_EQ(e.time_ms, 1000);
  EXPECT_EQ(e.entry.actor, "alice");
  EXPECT_EQ(e.entry.actor_kind, "user");
  EXPECT_EQ(e.prev_hash, kGenesisHash);
  EXPECT_EQ(e.hash, LinkHash(kGenesisHash, CanonicalEncoding("isb.history.v1", 1, 1000,
                                                             {"sb1", "acme", "created", "alice", "user", "", ""})));

  auto v = history_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok);
  EXPECT_EQ(v->rows, 8);
  EXPECT_EQ(v->head, last);
}

TEST_F(HistoryTest, UnknownEventIsRefused) {
  auto h = history_->Record({.sandbox = "sb1", .event = "exploded"});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().code, Code::kInvalidArgument);
  EXPECT_EQ(h.error().message, "history: unknown sandbox event \"exploded\"");
}

TEST_F(HistoryTest, ItsChainIsApartFromTheAuditLog) {
  ASSERT_TRUE(log_->Append({.action = "sandbox_create"}).ok());
  MustRecord("sb1", "acme", "created");
  Head second = MustRecord("sb1", "acme", "started");
  EXPECT_EQ(second.id, 2);
  auto a = log_->Verify();
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->ok);
  EXPECT_EQ(a->rows, 1);
  Status up = db_->Exec("UPDATE sandbox_history SET event = 'created' WHERE id = 2");
  ASSERT_FALSE(up.ok());
  EXPECT_EQ(up.error().message, "sql: sandbox_history is append-only: rows cannot be changed");
  Status del = db_->Exec("DELETE FROM sandbox_history");
  ASSERT_FALSE(del.ok());
  EXPECT_EQ(del.error().message, "sql: sandbox_history is append-only: rows are deleted only by retention pruning");
}

TEST_F(HistoryTest, TamperingIsFoundAndPruningKeepsItVerifiable) {
  for (int i = 0; i < 4; ++i) {
    now_ms_ = 1000 * (i + 1);
    MustRecord("sb" + std::to_string(i), "acme", "created");
  }
  now_ms_ = 10'000;
  auto p = history_->Prune(std::chrono::milliseconds(7500));  // 1000 and 2000 go
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->rows, 2);
  EXPECT_EQ(p->pruned_through.id, 2);
  auto v = history_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok);
  EXPECT_EQ(v->pruned_through.id, 2);
  ASSERT_EQ(Raw("DROP TRIGGER sandbox_history_no_update; UPDATE sandbox_history SET actor = 'x' WHERE id = 4"), "");
  v = history_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->first_broken, (Broken{4, kReasonHash}));
}

}  // namespace
}  // namespace isb::audit
