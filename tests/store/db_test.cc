#include "store/db.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

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
    return (*db)->Exec("INSERT INTO sandboxes(id, name, spec, state, created_at, expires_at, last_active_at) "
                       "VALUES(?1, 'same', '{}', 'running', 0, 0, 0)",
                       {id});
  };
  ASSERT_TRUE(ins("sb-1").ok());
  auto second = ins("sb-2");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, Code::kConflict);
}

}  // namespace
}  // namespace isb::store
