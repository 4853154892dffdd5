#include "store/db.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <stdlib.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <tuple>

#include "store/migrations.h"

namespace isb::store {
namespace {

class DbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-db-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

// Only the daemon's user can read the database and its WAL files, whatever the umask, and one an older isb made
// readable is narrowed when it is opened.
TEST_F(DbTest, TheDatabaseAndItsLogFilesAreTheOwnersAlone) {
  struct Umask {
    mode_t old = ::umask(022);
    ~Umask() { ::umask(old); }
  } umask_022;
  const std::string path = dir_ + "/isb.db";
  auto mode = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
  };
  {
    auto db = Db::Open(path, {"CREATE TABLE t(x)"});
    ASSERT_TRUE(db.ok()) << db.error().message;
    ASSERT_TRUE((*db)->Exec("INSERT INTO t VALUES(1)").ok());
    EXPECT_EQ(mode(path), 0600);
    EXPECT_EQ(mode(path + "-wal"), 0600);
    EXPECT_EQ(mode(path + "-shm"), 0600);
  }
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  {
    auto db = Db::Open(path, {"CREATE TABLE t(x)"});
    ASSERT_TRUE(db.ok()) << db.error().message;
    EXPECT_EQ(mode(path), 0600);
  }
}

TEST_F(DbTest, MigrationsApplyOnceAndInOrder) {
  std::vector<std::string> m = {"CREATE TABLE a(x INTEGER)", "ALTER TABLE a ADD COLUMN y TEXT"};
  {
    auto db = Db::Open(dir_ + "/s.db", {m[0]});
    ASSERT_TRUE(db.ok()) << db.error().message;
    EXPECT_EQ((*db)->schema_version(), 1);
  }
  auto db = Db::Open(dir_ + "/s.db", m);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ((*db)->schema_version(), 2);
  ASSERT_TRUE((*db)->Exec("INSERT INTO a(x, y) VALUES(?1, ?2)", {int64_t{7}, std::string("seven")}).ok());
  auto rows = (*db)->Query("SELECT x, y FROM a");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(AsInt((*rows)[0][0]), 7);
  EXPECT_EQ(AsText((*rows)[0][1]), "seven");
  auto wal = (*db)->Query("PRAGMA journal_mode");
  EXPECT_EQ(AsText((*wal)[0][0]), "wal");
}

TEST_F(DbTest, AnImmediateTransactionCommitsOnSuccessAndRollsBackOnFailureOrThrow) {
  auto opened = Db::Open(dir_ + "/s.db", {"CREATE TABLE a(x INTEGER)"});
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  Db& db = **opened;
  auto count = [&] { return AsInt((*db.Query("SELECT count(*) FROM a"))[0][0]); };
  ASSERT_TRUE(db.Immediate([&]() -> Status {
                  if (Status st = db.Exec("INSERT INTO a VALUES (1)"); !st.ok()) return st;
                  // Nested: joins the outer transaction, and is undone with it.
                  return db.Immediate([&] { return db.Exec("INSERT INTO a VALUES (2)"); });
                }).ok());
  EXPECT_EQ(count(), 2);
  Status failed = db.Immediate([&]() -> Status {
    if (Status st = db.Exec("INSERT INTO a VALUES (3)"); !st.ok()) return st;
    return Error::Of(Code::kConflict, "changed my mind");
  });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "changed my mind");
  EXPECT_EQ(count(), 2);
  EXPECT_THROW((void)db.Immediate([&]() -> Status {
    (void)db.Exec("INSERT INTO a VALUES (4)");
    throw std::runtime_error("thrown");
  }),
               std::runtime_error);
  EXPECT_EQ(count(), 2);
  // The connection is usable after each: no transaction was left open.
  ASSERT_TRUE(db.Immediate([&] { return db.Exec("INSERT INTO a VALUES (5)"); }).ok());
  EXPECT_EQ(count(), 3);
  // Not inside a read snapshot, whose end would commit what a failed body wrote.
  Status inside = db.Snapshot([&] { return db.Immediate([&] { return db.Exec("INSERT INTO a VALUES (6)"); }); });
  ASSERT_FALSE(inside.ok());
  EXPECT_EQ(inside.error().message, "a write transaction cannot begin inside a read snapshot");
  EXPECT_EQ(count(), 3);
}

TEST_F(DbTest, FailedMigrationLeavesTheOldVersion) {
  auto db = Db::Open(dir_ + "/s.db", {"CREATE TABLE a(x)", "THIS IS NOT SQL"});
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message.find("migration 2 failed"), std::string::npos) << db.error().message;
  auto again = Db::Open(dir_ + "/s.db", {"CREATE TABLE a(x)"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->schema_version(), 1);
}

TEST_F(DbTest, NewerSchemaIsRefused) {
  ASSERT_TRUE(Db::Open(dir_ + "/s.db", {"CREATE TABLE a(x)", "CREATE TABLE b(x)"}).ok());
  auto db = Db::Open(dir_ + "/s.db", {"CREATE TABLE a(x)"});
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message.find("newer than this isb"), std::string::npos);
}

TEST_F(DbTest, ConstraintViolationIsConflict) {
  auto db = Db::Open(dir_ + "/s.db", Migrations());
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto ins = [&](const std::string& id) {
    return (*db)->Exec(
        "INSERT INTO sandboxes(id, name, spec, state, created_at, expires_at, last_active_at) "
        "VALUES(?1, 'same', '{}', 'running', 0, 0, 0)",
        {id});
  };
  ASSERT_TRUE(ins("sb-1").ok());
  auto second = ins("sb-2");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, Code::kConflict);
}

// Migration 5: names are unique per org. Rows written before it get their org from the spec's isb.org label, or
// `default` without one; afterwards the same name may be used once in each org.
// Statements are prepared once and reused: a reuse sees its own values only, one that failed or stopped early
// leaves nothing behind (no bound value, no open read that would hold back another connection's view), and more
// distinct statements than the cache keeps still run.
TEST_F(DbTest, ReusedStatementsStartClean) {
  auto opened = Db::Open(dir_ + "/s.db", {"CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)"});
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  Db& db = **opened;
  const std::string insert = "INSERT INTO t(k, v) VALUES(?1, ?2)";
  ASSERT_TRUE(db.Exec(insert, {int64_t{1}, std::string("one")}).ok());
  Status dup = db.Exec(insert, {int64_t{1}, std::string("again")});
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, Code::kConflict);
  // Fewer values than the statement has: the last call's second value must not be reused.
  ASSERT_TRUE(db.Exec(insert, {int64_t{2}}).ok());
  auto rows = db.Query("SELECT k, v FROM t ORDER BY k");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(AsText((*rows)[0][1]), "one");
  EXPECT_TRUE(std::holds_alternative<std::nullptr_t>((*rows)[1][1])) << AsText((*rows)[1][1]);

  // A second connection writes and checkpoints; this one's reused read sees the new row (no snapshot kept open).
  ASSERT_EQ(db.Query("SELECT count(*) FROM t")->at(0).at(0), Value(int64_t{2}));
  {
    auto other = Db::Open(dir_ + "/s.db", {"CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)"});
    ASSERT_TRUE(other.ok()) << other.error().message;
    ASSERT_TRUE((*other)->Exec(insert, {int64_t{3}, std::string("three")}).ok());
    auto ck = (*other)->Query("PRAGMA wal_checkpoint(TRUNCATE)");
    ASSERT_TRUE(ck.ok()) << ck.error().message;
    EXPECT_EQ(AsInt(ck->at(0).at(0)), 0) << "the checkpoint was blocked by a reader";
  }
  EXPECT_EQ(db.Query("SELECT count(*) FROM t")->at(0).at(0), Value(int64_t{3}));

  // Many distinct statements: past what the cache keeps, each still runs.
  for (int i = 0; i < 600; ++i) {
    auto r = db.Query("SELECT " + std::to_string(i) + " + count(*) FROM t");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(AsInt(r->at(0).at(0)), i + 3);
  }
}

TEST_F(DbTest, ASnapshotSeesOneStateWhileAnotherConnectionWrites) {
  auto a = Db::Open(dir_ + "/s.db", {"CREATE TABLE t(x INTEGER)"});
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto b = Db::Open(dir_ + "/s.db", {"CREATE TABLE t(x INTEGER)"});
  ASSERT_TRUE(b.ok()) << b.error().message;
  ASSERT_TRUE((*a)->Exec("INSERT INTO t VALUES(1), (2)").ok());
  auto sum = [](Db& db) { return AsInt((*db.Query("SELECT sum(x) FROM t"))[0][0]); };
  std::vector<int64_t> seen;
  Status st = (*a)->Snapshot([&]() -> Status {
    seen.push_back(sum(**a));
    EXPECT_TRUE((*b)->Exec("INSERT INTO t VALUES(3)").ok());  // another connection commits meanwhile
    seen.push_back(sum(**a));
    EXPECT_TRUE((*b)->Exec("DELETE FROM t WHERE x = 1").ok());
    // Nested: the same snapshot.
    EXPECT_TRUE((*a)->Snapshot([&]() -> Status {
                      seen.push_back(sum(**a));
                      return {};
                    })
                    .ok());
    return {};
  });
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(seen, (std::vector<int64_t>{3, 3, 3}));
  EXPECT_EQ(sum(**a), 5);  // 2 and 3: the snapshot has ended
  // A body's failure is its result, and the transaction still ends.
  Status failed = (*a)->Snapshot([]() -> Status { return Error::Msg("the body failed"); });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "the body failed");
  EXPECT_TRUE((*a)->Exec("INSERT INTO t VALUES(4)").ok());
  EXPECT_EQ(sum(**b), 9);
}

TEST_F(DbTest, SandboxNamesBecomeUniquePerOrg) {
  const std::vector<std::string>& all = Migrations();
  ASSERT_GE(all.size(), 5u);
  {
    auto old = Db::Open(dir_ + "/s.db", std::vector<std::string>(all.begin(), all.begin() + 4));
    ASSERT_TRUE(old.ok()) << old.error().message;
    for (const auto& [id, name, spec] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"sb-1", "web", R"({"labels":{}})"},
             {"sb-2", "db", R"({"labels":{"isb.org":"acme","isb.owner":"rest:user:ann"}})"},
             {"sb-3", "", "{}"}}) {
      ASSERT_TRUE((*old)
                      ->Exec("INSERT INTO sandboxes(id, name, spec, state, created_at, expires_at, last_active_at) "
                             "VALUES(?1, ?2, ?3, 'running', 0, 0, 0)",
                             {id, name, spec})
                      .ok());
    }
  }
  auto db = Db::Open(dir_ + "/s.db", all);
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto orgs = (*db)->Query("SELECT id, org FROM sandboxes ORDER BY id");
  ASSERT_TRUE(orgs.ok());
  ASSERT_EQ(orgs->size(), 3u);
  EXPECT_EQ(AsText((*orgs)[0][1]), "default");
  EXPECT_EQ(AsText((*orgs)[1][1]), "acme");
  EXPECT_EQ(AsText((*orgs)[2][1]), "default");
  auto ins = [&](const std::string& id, const std::string& name, const std::string& org) {
    return (*db)->Exec(
        "INSERT INTO sandboxes(id, name, spec, state, created_at, expires_at, last_active_at, org) "
        "VALUES(?1, ?2, '{}', 'running', 0, 0, 0, ?3)",
        {id, name, org});
  };
  EXPECT_TRUE(ins("sb-4", "web", "acme").ok());
  EXPECT_TRUE(ins("sb-5", "db", "default").ok());
  EXPECT_TRUE(ins("sb-6", "", "default").ok());
  for (const auto& [name, org] :
       std::vector<std::pair<std::string, std::string>>{{"web", "default"}, {"web", "acme"}, {"db", "acme"}}) {
    auto dup = ins("sb-7", name, org);
    ASSERT_FALSE(dup.ok()) << name << " in " << org;
    EXPECT_EQ(dup.error().code, Code::kConflict);
  }
}

}  // namespace
}  // namespace isb::store
