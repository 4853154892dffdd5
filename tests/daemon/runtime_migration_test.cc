// The database's rows from before runtime handles: a running sandbox's pid, start time and lease become the
// namespaces runtime's record of it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "daemon/sandbox_record.h"
#include "engine/namespaces_runtime.h"
#include "store/db.h"
#include "store/migrations.h"

namespace isb::store {
namespace {

TEST(RuntimeMigration, ARunningRowFromBeforeHandlesBecomesANamespacesRecordAndAStoppedOneNone) {
  char tmpl[] = "/tmp/isb-rt-migration-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::vector<std::string>& all = Migrations();
  ASSERT_GE(all.size(), 9u);
  {
    auto old = Db::Open(dir + "/s.db", std::vector<std::string>(all.begin(), all.begin() + 8));
    ASSERT_TRUE(old.ok()) << old.error().message;
    ASSERT_TRUE((*old)
                    ->Exec("INSERT INTO sandboxes(id, name, spec, state, created_at, expires_at, last_active_at, "
                           "pid, start_time, lease_index, uid_base) "
                           "VALUES('sb-1', '', '{}', 'running', 0, 0, 0, 4242, 987654, 3, 100000), "
                           "('sb-2', '', '{}', 'stopped', 0, 0, 0, 0, 0, -1, 200000)")
                    .ok());
  }
  auto db = Db::Open(dir + "/s.db", all);
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto rows = (*db)->Query("SELECT runtime, handle, pid FROM sandboxes ORDER BY id");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(AsText((*rows)[0][0]), "namespaces");
  EXPECT_EQ(AsText((*rows)[0][1]), "pid=4242 start=987654 lease=3");
  EXPECT_EQ(AsInt((*rows)[0][2]), 4242);  // kept, as what the host shows of it
  std::optional<engine::HostProcess> p = engine::NamespacesRuntime::ParseRecord(AsText((*rows)[0][1]));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->pid, 4242);
  EXPECT_EQ(p->start_time, 987654u);
  EXPECT_EQ(p->lease_index, 3);
  EXPECT_EQ(AsText((*rows)[1][0]), "");
  EXPECT_EQ(AsText((*rows)[1][1]), "");
  db->reset();
  std::filesystem::remove_all(dir);
}

// A daemon from before handles still serving beside a binary that migrated the database writes only the pid columns:
// its running rows are read as the namespaces records they are, and another runtime's rows and stopped ones as written.
TEST(RuntimeMigration, RowsAnOlderDaemonWritesAfterTheMigrationAreReadFromTheirPidColumns) {
  char tmpl[] = "/tmp/isb-rt-migration-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto db = Db::Open(dir + "/s.db", Migrations());
  ASSERT_TRUE(db.ok()) << db.error().message;
  ASSERT_TRUE((*db)
                  ->Exec("INSERT INTO sandboxes(id, name, spec, state, created_at, expires_at, last_active_at, "
                         "pid, start_time, lease_index, uid_base, runtime, handle) VALUES "
                         "('sb-1', '', '{}', 'running', 0, 0, 0, 4242, 987654, 3, 100000, '', ''), "
                         "('sb-2', '', '{}', 'running', 0, 0, 0, 5151, 111, 4, 100000, 'namespaces', "
                         "'pid=4242 start=987654 lease=3'), "
                         "('sb-3', '', '{}', 'running', 0, 0, 0, 0, 0, -1, 100000, 'vm', 'cid=9'), "
                         "('sb-4', '', '{}', 'stopped', 0, 0, 0, 0, 0, -1, 100000, '', '')")
                  .ok());
  auto rows = (*db)->Query(std::string("SELECT ") + daemon::kRuntimeHandleColumns + " FROM sandboxes ORDER BY id");
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ(AsText((*rows)[0][0]), "namespaces");
  EXPECT_EQ(AsText((*rows)[0][1]), "pid=4242 start=987654 lease=3");
  EXPECT_EQ(AsText((*rows)[1][0]), "namespaces");
  EXPECT_EQ(AsText((*rows)[1][1]), "pid=5151 start=111 lease=4");  // restarted by the older daemon: its new pid
  EXPECT_EQ(AsText((*rows)[2][0]), "vm");
  EXPECT_EQ(AsText((*rows)[2][1]), "cid=9");
  EXPECT_EQ(AsText((*rows)[3][0]), "");
  EXPECT_EQ(AsText((*rows)[3][1]), "");
  db->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace isb::store
