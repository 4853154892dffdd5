// SQLite access: one connection (WAL, foreign keys, busy timeout), statements with bound values, numbered migrations.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"

namespace isb::store {

using Value = std::variant<std::nullptr_t, int64_t, double, std::string>;
using Row = std::vector<Value>;

int64_t AsInt(const Value& v);
std::string AsText(const Value& v);

// Thread-safe: every call holds the connection's mutex. Transactions are per call (Exec of several statements)
// or explicit through Transaction.
class Db {
 public:
  ~Db();
  // Opens (creating) `path` and applies every migration not yet applied, each in its own transaction.
  static Result<std::unique_ptr<Db>> Open(const std::string& path, const std::vector<std::string>& migrations);

  // Runs one statement with `args` bound to ?1..?N; returns its rows.
  Result<std::vector<Row>> Query(const std::string& sql, const std::vector<Value>& args = {});
  Status Exec(const std::string& sql, const std::vector<Value>& args = {});
  int64_t LastInsertId();
  int schema_version() const { return version_; }

  // Runs `body` in one read transaction, the connection this thread's for its duration: every Query in `body` sees
  // the database as of its first read, whatever other connections (other processes) commit meanwhile; in WAL mode
  // they go on writing. Other threads' calls on this connection wait until it ends, so it is for a process of its
  // own reading several statements that must agree, such as `isb audit verify` beside a daemon that prunes.
  // Nested, the inner one joins the outer transaction. `body` reads: a write in it would hold every other writer
  // off until it ends.
  Status Snapshot(const std::function<Status()>& body);
  // Runs `body` in one write transaction (BEGIN IMMEDIATE: the write lock is taken first, so no other writer, in
  // this process or another, commits between its statements). Committed when `body` succeeds, rolled back when it
  // fails or throws. Nested in another Immediate it joins that transaction (its failure must fail the outer one);
  // inside a Snapshot it is refused.
  Status Immediate(const std::function<Status()>& body);

 private:
  Db() = default;
  Result<std::vector<Row>> QueryLocked(const std::string& sql, const std::vector<Value>& args) ISB_REQUIRES(mu_);
  // A prepared statement for `sql`: from the cache, or prepared now (and kept while the cache has room). Null on
  // error (sqlite3_errmsg says why). The caller resets it after use.
  sqlite3_stmt* Prepare(const std::string& sql, bool* cached) ISB_REQUIRES(mu_);
  sqlite3* db_ = nullptr;
  RecursiveMutex mu_;  // recursive: Snapshot's body makes calls of its own
  int snapshot_depth_ ISB_GUARDED_BY(mu_) = 0;
  int write_depth_ ISB_GUARDED_BY(mu_) = 0;  // of Immediate
  // The daemon runs the same few dozen statements over and over: each is parsed once. Bounded, for callers that
  // build their SQL (a cache full keeps what it has and prepares the rest per call).
  static constexpr size_t kMaxCachedStatements = 256;
  std::unordered_map<std::string, sqlite3_stmt*> statements_ ISB_GUARDED_BY(mu_);
  int version_ = 0;
};

}  // namespace isb::store
