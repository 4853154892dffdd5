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

// Rows of the audit log, as "action target outcome" lines, read from the state file.
std::vector<std::string> AuditRows(const std::string& db_path) {
  std::vector<std::string> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return rows;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT action, target, outcome, surface FROM audit_log ORDER BY id", -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::string row;
    for (int i = 0; i < 4; ++i) {
      const unsigned char* t = sqlite3_column_text(st, i);
      row += (i ? " " : "") + std::string(t ? reinterpret_cast<const char*>(t) : "");
    }
    rows.push_back(row);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rows;
}

TEST_F(AuditTest, EveryChangeAndEveryRefusalIsRecordedAndNoValueIsKept) {
  std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  json r = Exec(id, {"sh", "-c", "test -n \"$API_KEY\""}, {{"env", {{"API_KEY", "s3cr3t-value-1f2e"}}}});
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  MustTool("sandbox_get", {{"sandbox", id}});  // a read that succeeds: not recorded
  EXPECT_EQ(Tool("sandbox_get", {{"sandbox", "sb-doesnotexist"}}).status, 404);
  EXPECT_EQ(Tool("sandbox_create", {{"cpus", 0}}).status, 400);
  MustTool("sandbox_remove", {{"sandbox", id}});
  ASSERT_EQ(StopDaemon(), 0);

  // The fixture's set-up on the socket (its user, membership and token), then the test's calls.
  std::vector<std::string> want = {"user_create e2e ok unix", "member_add e2e ok unix", "token_create e2e ok unix",
                                   "sandbox_create " + id + " ok unix", "sandbox_exec " + id + " ok unix",
                                   "sandbox_get sb-doesnotexist not_found unix", "sandbox_create  invalid_argument unix",
                                   "sandbox_remove " + id + " ok unix"};
  EXPECT_EQ(AuditRows(state_dir() + "/isb.db"), want);
  ProcResult ok = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", state_dir()});
  EXPECT_EQ(ok.exit_status, 0) << ok.Describe();
  EXPECT_EQ(ok.out.rfind("audit log ok: 8 rows, head 8 ", 0), 0u) << ok.out;
  // The exec's env key is kept, its value nowhere in the state files.
  std::string files;
  for (const char* f : {"/isb.db", "/isb.db-wal"}) files += ReadFileOrEmpty(state_dir() + f);
  EXPECT_NE(files.find("API_KEY"), std::string::npos);
  EXPECT_EQ(files.find("s3cr3t-value-1f2e"), std::string::npos) << "an env value reached the database";
}

}  // namespace
}  // namespace isb::e2e
