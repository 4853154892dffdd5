#include "audit/log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <thread>

#include "audit/audit_fixture.h"
#include "audit/chain_encoding.h"

namespace isb::audit {
namespace {

using nlohmann::json;

class AuditLogTest : public testing::AuditDbTest {
 protected:
  static Entry Call(std::string org, std::string actor, std::string action, std::string outcome = "ok") {
    Entry e;
    e.org = std::move(org);
    e.actor = std::move(actor);
    e.actor_kind = "user";
    e.surface = "rest";
    e.action = std::move(action);
    e.target = "sb-1";
    e.outcome = std::move(outcome);
    e.ip = "127.0.0.1";
    e.user_agent = "curl/7.88";
    e.request_id = "req-1";
    return e;
  }

  Head MustAppend(const Entry& e) {
    auto h = log_->Append(e);
    EXPECT_TRUE(h.ok()) << h.error().message;
    return h.ok() ? *h : Head{};
  }
};

TEST_F(AuditLogTest, AppendedRecordsChainAndVerify) {
  Head h1 = MustAppend(Call("acme", "alice", "sandbox_create"));
  now_ms_ += 5;
  Head h2 = MustAppend(Call("acme", "bob", "sandbox_remove", "not_found"));
  Head h3 = MustAppend(Call("beta", "carol", "sandbox_list"));
  EXPECT_EQ(h1.id, 1);
  EXPECT_EQ(h3.id, 3);

  auto all = log_->List({});
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 3u);
  const Record& r1 = (*all)[0];
  EXPECT_EQ(r1.prev_hash, kGenesisHash);
  EXPECT_EQ(r1.hash, h1.hash);
  EXPECT_EQ(r1.hash, RecordHash(r1));
  EXPECT_EQ(r1.time_ms, 1'700'000'000'000);
  EXPECT_EQ((*all)[1].time_ms, 1'700'000'000'005);
  EXPECT_EQ((*all)[1].prev_hash, h1.hash);
  EXPECT_EQ((*all)[1].hash, h2.hash);
  EXPECT_EQ((*all)[1].outcome, "not_found");
  EXPECT_EQ((*all)[2].prev_hash, h2.hash);
  EXPECT_EQ(r1.org, "acme");
  EXPECT_EQ(r1.actor, "alice");
  EXPECT_EQ(r1.actor_kind, "user");
  EXPECT_EQ(r1.surface, "rest");
  EXPECT_EQ(r1.action, "sandbox_create");
  EXPECT_EQ(r1.target, "sb-1");
  EXPECT_EQ(r1.details, "{}");
  EXPECT_EQ(r1.ip, "127.0.0.1");
  EXPECT_EQ(r1.user_agent, "curl/7.88");
  EXPECT_EQ(r1.request_id, "req-1");

  auto v = log_->Verify();
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_TRUE(v->ok);
  EXPECT_EQ(v->rows, 3);
  EXPECT_EQ(v->head, h3);
  EXPECT_EQ(v->pruned_through, (Head{0, std::string(kGenesisHash)}));
  EXPECT_FALSE(v->first_broken.has_value());
}

TEST_F(AuditLogTest, EmptyLogVerifies) {
  auto v = log_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok);
  EXPECT_EQ(v->rows, 0);
  EXPECT_EQ(v->head, (Head{0, std::string(kGenesisHash)}));
}

TEST_F(AuditLogTest, AMessageIsNeverStoredAsTheOutcome) {
  MustAppend(Call("acme", "alice", "sandbox_get", "sandbox \"x\" not found"));
  auto all = log_->List({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)[0].outcome, "internal");
}

TEST_F(AuditLogTest, ListFilters) {
  for (int i = 0; i < 6; ++i) {
    now_ms_ = 1000 * i;
    MustAppend(Call(i % 2 ? "acme" : "beta", i < 3 ? "alice" : "bob", i % 3 ? "sandbox_exec" : "sandbox_create"));
  }
  auto ids = [&](Filter f) {
    std::vector<int64_t> out;
    auto r = log_->List(f);
    EXPECT_TRUE(r.ok()) << r.error().message;
    if (r.ok())
      for (const auto& rec : *r) out.push_back(rec.id);
    return out;
  };
  EXPECT_EQ(ids({.org = "acme"}), (std::vector<int64_t>{2, 4, 6}));
  EXPECT_EQ(ids({.actor = "bob"}), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(ids({.action = "sandbox_create"}), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(ids({.org = "acme", .actor = "bob", .action = "sandbox_exec"}), (std::vector<int64_t>{6}));
  EXPECT_EQ(ids({.since_ms = 2000, .until_ms = 4000}), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ids({.after_id = 2, .limit = 3}), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(ids({.limit = 0}), (std::vector<int64_t>{1}));
  EXPECT_EQ(ids({.org = "nobody"}), (std::vector<int64_t>{}));
  // The last matches, oldest first, however many came before.
  EXPECT_EQ(ids({.limit = 2, .latest = true}), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(ids({.org = "acme", .limit = 2, .latest = true}), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(ids({.after_id = 4, .limit = 5, .latest = true}), (std::vector<int64_t>{5, 6}));
}

TEST_F(AuditLogTest, ExportWritesOneJsonObjectPerLine) {
  Entry e = Call("acme", "alice", "sandbox_exec");
  e.details = {{"argv", {"ls", "-l"}}, {"env", {{"HOME", "/root"}}}};
  MustAppend(e);
  MustAppend(Call("beta", "bob", "sandbox_list"));
  MustAppend(Call("acme", "carol", "sandbox_list"));
  std::vector<std::string> lines;
  ASSERT_TRUE(log_->Export({.org = "acme"},
                           [&](std::string_view l) {
                             lines.emplace_back(l);
                             return Status();
                           })
                  .ok());
  ASSERT_EQ(lines.size(), 2u);
  json first = json::parse(lines[0]);
  EXPECT_EQ(first["id"], 1);
  EXPECT_EQ(first["actor"], "alice");
  EXPECT_EQ(first["details"], json::parse(R"({"argv":["ls","-l"],"env":["HOME"]})"));
  EXPECT_EQ(first["prev_hash"], kGenesisHash);
  EXPECT_EQ(json::parse(lines[1])["id"], 3);
  EXPECT_EQ(lines[0].find('\n'), std::string::npos);
  // A failing sink stops the export with its error.
  Status st = log_->Export({}, [](std::string_view) { return Status(Error::Msg("disk full")); });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "disk full");
}

TEST_F(AuditLogTest, ExportPagesThroughLargeLogs) {
  for (int i = 0; i < 2500; ++i) MustAppend(Call("acme", "a", "sandbox_list"));
  int64_t n = 0, last = 0;
  ASSERT_TRUE(log_->Export({},
                           [&](std::string_view l) {
                             int64_t id = json::parse(l)["id"];
                             EXPECT_EQ(id, last + 1);
                             last = id;
                             ++n;
                             return Status();
                           })
                  .ok());
  EXPECT_EQ(n, 2500);
}

TEST_F(AuditLogTest, TriggersRefuseUpdateAndDelete) {
  MustAppend(Call("acme", "alice", "sandbox_create"));
  MustAppend(Call("acme", "alice", "sandbox_remove"));
  Status up = db_->Exec("UPDATE audit_log SET actor = 'mallory' WHERE id = 1");
  ASSERT_FALSE(up.ok());
  EXPECT_EQ(up.error().message, "sql: audit_log is append-only: rows cannot be changed");
  Status del = db_->Exec("DELETE FROM audit_log WHERE id = 1");
  ASSERT_FALSE(del.ok());
  EXPECT_EQ(del.error().message, "sql: audit_log is append-only: rows are deleted only by retention pruning");
  EXPECT_EQ(Raw("DELETE FROM audit_log"), "audit_log is append-only: rows are deleted only by retention pruning");
  // An insert anywhere but at the head, or not linked to it, is refused too.
  std::string forged = "INSERT INTO audit_log VALUES(?1, 0, '', '', '', '', '', '', '{}', 'ok', '', '', '', ?2, ?2)";
  Status mid = db_->Exec(forged, {int64_t{7}, std::string(kGenesisHash)});
  ASSERT_FALSE(mid.ok());
  EXPECT_EQ(mid.error().message, "sql: audit_log is append-only: a row must extend the chain at its head");
  EXPECT_EQ(mid.error().code, Code::kConflict);
  EXPECT_FALSE(db_->Exec(forged, {int64_t{3}, std::string(kGenesisHash)}).ok());
  // The anchor, which is what lets pruning delete, only advances, to a real row's hash; it cannot be removed.
  Status anchor = db_->Exec("UPDATE chain_anchors SET pruned_through = 2, hash = ?1 WHERE chain = 'audit_log'",
                            {std::string(64, 'f')});
  ASSERT_FALSE(anchor.ok());
  EXPECT_EQ(anchor.error().message, "sql: chain_anchors: an anchor only advances, to the hash of a row of its chain");
  EXPECT_EQ(Raw("DELETE FROM chain_anchors"), "chain_anchors: the set of chains is fixed");
  EXPECT_EQ(Raw("INSERT INTO chain_anchors VALUES('x', 0, '')"), "chain_anchors: the set of chains is fixed");
  auto v = log_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok);
  EXPECT_EQ(v->rows, 2);
}

TEST_F(AuditLogTest, PruningKeepsTheChainVerifiable) {
  for (int i = 0; i < 5; ++i) {
    now_ms_ = 1000 * (i + 1);
    MustAppend(Call("acme", "alice", "sandbox_list"));
  }
  auto before = log_->List({});
  ASSERT_TRUE(before.ok());
  now_ms_ = 10'000;
  // Rows at 1000..3000 are older than 10000 - 6500; 4000 and 5000 are not.
  auto p = log_->Prune(std::chrono::milliseconds(6500));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->rows, 3);
  EXPECT_EQ(p->pruned_through, (Head{3, (*before)[2].hash}));
  auto v = log_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok) << v->first_broken->reason;
  EXPECT_EQ(v->rows, 2);
  EXPECT_EQ(v->pruned_through, (Head{3, (*before)[2].hash}));
  EXPECT_EQ(v->head, (Head{5, (*before)[4].hash}));
  // Nothing more is old enough.
  auto again = log_->Prune(std::chrono::milliseconds(6500));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->rows, 0);
  EXPECT_EQ(again->pruned_through.id, 3);
  // Everything goes; the chain continues from the anchor.
  now_ms_ = 100'000;
  auto all = log_->Prune(std::chrono::milliseconds(1));
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->rows, 2);
  EXPECT_EQ(all->pruned_through, (Head{5, (*before)[4].hash}));
  Head h6 = MustAppend(Call("acme", "alice", "sandbox_list"));
  EXPECT_EQ(h6.id, 6);
  auto rows = log_->List({});
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].prev_hash, (*before)[4].hash);
  v = log_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok);
  EXPECT_EQ(v->rows, 1);
  EXPECT_EQ(v->pruned_through.id, 5);
  EXPECT_EQ(v->head, h6);
}

// A field stored as a blob hashes as the same bytes but matches no listing's filter: verify names the row.
TEST_F(AuditLogTest, AFieldStoredAsABlobIsFoundByVerify) {
  for (int i = 0; i < 4; ++i) MustAppend(Call("acme", "alice", "sandbox_list"));
  auto clean = log_->Verify();
  ASSERT_TRUE(clean.ok());
  EXPECT_TRUE(clean->ok);
  ASSERT_EQ(Raw("DROP TRIGGER audit_log_no_update; UPDATE audit_log SET org = CAST(org AS BLOB) WHERE id = 3"), "");
  auto v = log_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->ok);
  EXPECT_EQ(v->first_broken, (Broken{3, kReasonType}));
  // An edit further on than a broken link is not what verify names first.
  ASSERT_EQ(Raw("UPDATE audit_log SET actor = 'x' WHERE id = 2"), "");
  EXPECT_EQ(log_->Verify()->first_broken, (Broken{2, kReasonHash}));
}

TEST_F(AuditLogTest, PruningRefusesToEraseEvidence) {
  for (int i = 0; i < 4; ++i) MustAppend(Call("acme", "alice", "sandbox_list"));
  ASSERT_EQ(Raw("DROP TRIGGER audit_log_no_update; UPDATE audit_log SET actor = 'x' WHERE id = 2"), "");
  now_ms_ += 1000;
  auto p = log_->Prune(std::chrono::milliseconds(1));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, Code::kConflict);
  EXPECT_EQ(p.error().message,
            "refusing to prune audit_log: the chain is broken at row 2 (hash does not match the row's contents); "
            "pruning would erase the evidence");
  auto v = log_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->first_broken, (Broken{2, kReasonHash}));
  EXPECT_EQ(v->pruned_through.id, 0);
}

TEST_F(AuditLogTest, EightThreadsAppendOneLinearChain) {
  constexpr int kThreads = 8, kEach = 250;
  std::vector<std::thread> threads;
  std::vector<std::vector<int64_t>> got(kThreads);
  auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto h = log_->Append(Call("acme", "t" + std::to_string(t), "sandbox_list"));
        if (h.ok()) got[t].push_back(h->id);
      }
    });
  for (auto& th : threads) th.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::set<int64_t> ids;
  for (const auto& g : got) {
    EXPECT_EQ(g.size(), static_cast<size_t>(kEach));
    EXPECT_TRUE(std::is_sorted(g.begin(), g.end()));
    ids.insert(g.begin(), g.end());
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kThreads * kEach));
  EXPECT_EQ(*ids.rbegin(), kThreads * kEach);
  auto v = log_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok);
  EXPECT_EQ(v->rows, kThreads * kEach);
  std::cout << "[ measure  ] " << kThreads * kEach << " appends from " << kThreads
            << " threads: " << static_cast<int64_t>(kThreads * kEach / secs) << " appends/s\n";
}

TEST_F(AuditLogTest, AppendsQueuedBehindAWriterAreWrittenTogether) {
  // The first writer stalls in the clock, so the other seven calls queue and the next writer takes them as one
  // multi-row INSERT, through the same triggers.
  std::atomic<int> calls{0};
  auto slow_first = [&] {
    if (calls++ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return now_ms_.load();
  };
  auto log = AuditLog::Open(*db_, DefaultDetailsPolicy(), slow_first);
  ASSERT_TRUE(log.ok());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] { ok += (*log)->Append(Call("acme", "a", "sandbox_list")).ok(); });
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_EQ(calls.load(), 8);
  auto v = (*log)->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok);
  EXPECT_EQ(v->rows, 8);
  EXPECT_EQ(v->head.id, 8);
}

TEST_F(AuditLogTest, TwoConnectionsToOneFileContinueEachOthersChain) {
  auto db2 = store::Db::Open(path_, store::Migrations());
  ASSERT_TRUE(db2.ok());
  auto other = AuditLog::Open(**db2, DefaultDetailsPolicy(), TestClock());
  ASSERT_TRUE(other.ok());
  MustAppend(Call("acme", "alice", "sandbox_list"));
  auto h2 = (*other)->Append(Call("acme", "bob", "sandbox_list"));
  ASSERT_TRUE(h2.ok()) << h2.error().message;
  EXPECT_EQ(h2->id, 2);
  Head h3 = MustAppend(Call("acme", "alice", "sandbox_list"));  // its head is stale: caught, reloaded, appended
  EXPECT_EQ(h3.id, 3);
  auto v = log_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok);
  EXPECT_EQ(v->rows, 3);
}

TEST_F(AuditLogTest, NoSecretValueReachesTheDatabaseFile) {
  const std::string secret = "sk_live_Zx81QqVtP0aLm3";
  Entry e = Call("acme", "alice", "sandbox_exec");
  e.details = {{"argv", {"deploy"}},
               {"env", {{"STRIPE_API_KEY", secret}}},
               {"stdin", secret},
               {"secret", secret},
               {"timeout", {{"nested", secret}}}};
  MustAppend(e);
  Entry w = Call("acme", "alice", "sandbox_file_write");
  w.details = {{"path", "/etc/app.env"}, {"content", "KEY=" + secret}};
  MustAppend(w);
  log_.reset();
  db_.reset();  // closing checkpoints the WAL into the main file
  std::string bytes;
  for (const char* suffix : {"", "-wal", "-journal"}) {
    std::ifstream in(path_ + suffix, std::ios::binary);
    bytes.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  EXPECT_NE(bytes.find("STRIPE_API_KEY"), std::string::npos);  // the grep sees what was recorded
  EXPECT_NE(bytes.find("/etc/app.env"), std::string::npos);
  EXPECT_EQ(bytes.find(secret), std::string::npos);
  EXPECT_EQ(bytes.find("Zx81QqVtP0aLm3"), std::string::npos);
}

}  // namespace
}  // namespace isb::audit
