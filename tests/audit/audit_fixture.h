// A fresh database with every migration in a temporary directory, an audit log on it, a settable clock, and raw
// SQLite access for tampering with the file the way someone with write access to it could.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "audit/chain.h"
#include "audit/history.h"
#include "audit/log.h"
#include "store/db.h"
#include "store/migrations.h"

namespace isb::audit::testing {

class AuditDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-audit-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/isb.db";
    auto db = store::Db::Open(path_, store::Migrations());
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(*db);
    auto log = AuditLog::Open(*db_, DefaultDetailsPolicy(), TestClock());
    ASSERT_TRUE(log.ok()) << log.error().message;
    log_ = std::move(*log);
  }
  void TearDown() override {
    log_.reset();
    db_.reset();
    std::filesystem::remove_all(dir_);
  }

  Clock TestClock() {
    return [this] { return now_ms_.load(); };
  }

  // Runs `sql` on a connection of its own, bypassing isb entirely; returns SQLite's error message or "".
  std::string Raw(const std::string& sql) {
    sqlite3* raw = nullptr;
    if (sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
      sqlite3_close_v2(raw);
      return "cannot open";
    }
    char* err = nullptr;
    int rc = sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &err);
    std::string msg = rc == SQLITE_OK ? "" : (err ? err : "error");
    sqlite3_free(err);
    sqlite3_close_v2(raw);
    return msg;
  }

  std::string dir_;
  std::string path_;
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<AuditLog> log_;  // on db_, with the default policy and the test clock
  std::atomic<int64_t> now_ms_{1'700'000'000'000};
};

// The same, with the sandbox history on the database too.
class HistoryDbTest : public AuditDbTest {
 protected:
  void SetUp() override {
    AuditDbTest::SetUp();
    auto h = History::Open(*db_, TestClock());
    ASSERT_TRUE(h.ok()) << h.error().message;
    history_ = std::move(*h);
  }
  void TearDown() override {
    history_.reset();
    AuditDbTest::TearDown();
  }

  std::unique_ptr<History> history_;  // on db_, with the test clock
};

}  // namespace isb::audit::testing
