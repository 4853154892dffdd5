// The sandbox history's hash chain, end to end: a real daemon records each lifecycle event on it, `isb audit verify`
// walks it, and an edit made straight in the SQLite file is found at its row.
#include <sqlite3.h>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

class AuditTest : public E2eTest {};

TEST_F(AuditTest, HistoryRecordsTheLifecycleAndVerifyFindsAnEditedRow) {
  std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  MustTool("sandbox_stop", {{"sandbox", id}});
  MustTool("sandbox_start", {{"sandbox", id}});
  MustTool("sandbox_remove", {{"sandbox", id}});

  ProcResult ok = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", state_dir(), "--json"});
  ASSERT_EQ(ok.exit_status, 0) << ok.Describe();
  json report = json::parse(ok.out);
  EXPECT_EQ(report["history"]["ok"], true) << ok.out;
  EXPECT_EQ(report["history"]["rows"], 4) << "created, stopped, started, removed: " << ok.out;
  EXPECT_EQ(report["history"]["first_broken"], nullptr) << ok.out;
  EXPECT_EQ(report["audit_log"]["ok"], true) << ok.out;

  // An attacker with the file: drops the trigger that refuses edits, then changes the second event's reason.
  ASSERT_EQ(StopDaemon(), 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((state_dir() + "/isb.db").c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db,
                        "DROP TRIGGER sandbox_history_no_update;"
                        "UPDATE sandbox_history SET reason = 'nothing happened' WHERE id = 2;",
                        nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);

  ProcResult broken = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", state_dir()});
  EXPECT_EQ(broken.exit_status, 1) << broken.Describe();
  EXPECT_NE(broken.out.find("\nhistory BROKEN at row 2: "), std::string::npos) << broken.out;

  ProcResult nowhere = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", temp_dir() + "/none"});
  EXPECT_EQ(nowhere.exit_status, 125) << nowhere.Describe();
  EXPECT_EQ(nowhere.err, "isb audit verify: no isb state at " + temp_dir() + "/none (see --state-dir)\n");
}

}  // namespace
}  // namespace isb::e2e
