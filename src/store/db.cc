// SQLite wrapper and migration runner.
#include "store/db.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "base/fd.h"

namespace isb::store {
namespace {

// The database holds every org's sandbox specs, the password hashes and the audit log: only the daemon's user may
// read it, whatever the umask. SQLite gives the -wal and -shm files it makes the database file's mode, so the
// file is made 0600 before SQLite opens it; files an older isb left readable are narrowed.
Status KeepPrivate(const std::string& path) {
  if (path.empty() || path == ":memory:" || path.rfind("file:", 0) == 0) return {};
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return Error::Sys("open database " + path);
  if (::fchmod(fd.get(), 0600) != 0) return Error::Sys("chmod 0600 " + path);
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    const std::string side = path + suffix;
    if (::chmod(side.c_str(), 0600) != 0 && errno != ENOENT) return Error::Sys("chmod 0600 " + side);
  }
  return {};
}

}  // namespace

int64_t AsInt(const Value& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  if (auto* d = std::get_if<double>(&v)) return static_cast<int64_t>(*d);
  return 0;
}

std::string AsText(const Value& v) {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  return "";
}

Db::~Db() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  if (db_) sqlite3_close_v2(db_);
}

Result<std::unique_ptr<Db>> Db::Open(const std::string& path, const std::vector<std::string>& migrations) {
  ISB_TRY(KeepPrivate(path));
  std::unique_ptr<Db> db(new Db());
  int rc = sqlite3_open_v2(path.c_str(), &db->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) return Error::Msg("open database " + path + ": " + sqlite3_errstr(rc));
  sqlite3_busy_timeout(db->db_, 5000);
  RecursiveMutexLock lock(db->mu_);
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON"}) {
    auto r = db->QueryLocked(pragma, {});
    if (!r.ok()) return r.error();
  }
  auto v = db->QueryLocked("PRAGMA user_version", {});
  if (!v.ok()) return v.error();
  db->version_ = static_cast<int>(AsInt((*v)[0][0]));
  if (db->version_ > static_cast<int>(migrations.size()))
    return Error::Msg("database " + path + " has schema version " + std::to_string(db->version_) +
                      ", newer than this isb (" + std::to_string(migrations.size()) + "); upgrade isb");
  for (size_t i = static_cast<size_t>(db->version_); i < migrations.size(); ++i) {
    std::string sql =
        "BEGIN IMMEDIATE;\n" + migrations[i] + ";\nPRAGMA user_version=" + std::to_string(i + 1) + ";\nCOMMIT;";
    char* err = nullptr;
    if (sqlite3_exec(db->db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      sqlite3_exec(db->db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return Error::Msg("migration " + std::to_string(i + 1) + " failed: " + msg);
    }
    db->version_ = static_cast<int>(i + 1);
  }
  return db;
}

Result<std::vector<Row>> Db::Query(const std::string& sql, const std::vector<Value>& args) {
  RecursiveMutexLock lock(mu_);
  return QueryLocked(sql, args);
}

Status Db::Exec(const std::string& sql, const std::vector<Value>& args) {
  auto r = Query(sql, args);
  if (!r.ok()) return r.error();
  return {};
}

Status Db::Snapshot(const std::function<Status()>& body) {
  RecursiveMutexLock lock(mu_);
  if (snapshot_depth_ > 0) return body();
  // Deferred: the snapshot is taken by the first read in `body`, and kept until the end.
  if (char* err = nullptr; sqlite3_exec(db_, "BEGIN", nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return Error::Msg("begin a read transaction: " + msg);
  }
  ++snapshot_depth_;
  struct End {
    Db* db;
    ~End() {
      --db->snapshot_depth_;
      // A read-only transaction commits nothing: this only lets go of the snapshot.
      if (sqlite3_exec(db->db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
        sqlite3_exec(db->db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
  } end{this};
  return body();
}

Status Db::Immediate(const std::function<Status()>& body) {
  RecursiveMutexLock lock(mu_);
  if (write_depth_ > 0) return body();
  // A read transaction cannot take the write lock first, and what a failed body wrote would be committed with it.
  if (snapshot_depth_ > 0) return Error::Msg("a write transaction cannot begin inside a read snapshot");
  if (char* err = nullptr; sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return Error::Msg("begin a write transaction: " + msg);
  }
  ++snapshot_depth_;
  ++write_depth_;
  // Rolled back unless committed below, a `body` that throws included.
  struct End {
    Db* db;
    bool done = false;
    ~End() {
      --db->snapshot_depth_;
      --db->write_depth_;
      if (!done) sqlite3_exec(db->db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
  } end{this};
  Status result = body();
  if (!result.ok()) return result;
  char* err = nullptr;
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return Error::Msg("commit: " + msg);
  }
  end.done = true;
  return result;
}

int64_t Db::LastInsertId() {
  RecursiveMutexLock lock(mu_);
  return sqlite3_last_insert_rowid(db_);
}

sqlite3_stmt* Db::Prepare(const std::string& sql, bool* cached) {
  if (auto it = statements_.find(sql); it != statements_.end()) {
    *cached = true;
    return it->second;
  }
  *cached = statements_.size() < kMaxCachedStatements;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), *cached ? SQLITE_PREPARE_PERSISTENT : 0, &stmt,
                         nullptr) != SQLITE_OK)
    return nullptr;
  if (*cached && stmt != nullptr) statements_.emplace(sql, stmt);
  return stmt;
}

Result<std::vector<Row>> Db::QueryLocked(const std::string& sql, const std::vector<Value>& args) {
  bool cached = false;
  sqlite3_stmt* raw = Prepare(sql, &cached);
  if (raw == nullptr) return Error::Msg(std::string("sql: ") + sqlite3_errmsg(db_));
  // Reset after every use, whatever happened: a cached statement left stepping would hold its read snapshot (and
  // its bound text) until the next call.
  auto done = [cached](sqlite3_stmt* s) {
    if (!cached) {
      sqlite3_finalize(s);
      return;
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  };
  std::unique_ptr<sqlite3_stmt, decltype(done)> stmt(raw, done);
  for (size_t i = 0; i < args.size(); ++i) {
    int idx = static_cast<int>(i + 1);
    const Value& v = args[i];
    int rc = SQLITE_OK;
    if (std::holds_alternative<std::nullptr_t>(v))
      rc = sqlite3_bind_null(raw, idx);
    else if (auto* n = std::get_if<int64_t>(&v))
      rc = sqlite3_bind_int64(raw, idx, *n);
    else if (auto* d = std::get_if<double>(&v))
      rc = sqlite3_bind_double(raw, idx, *d);
    else {
      const auto& s = std::get<std::string>(v);
      rc = sqlite3_bind_text(raw, idx, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    }
    if (rc != SQLITE_OK) return Error::Msg(std::string("sql bind: ") + sqlite3_errmsg(db_));
  }
  std::vector<Row> rows;
  for (;;) {
    int rc = sqlite3_step(raw);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) {
      Error e = Error::Msg(std::string("sql: ") + sqlite3_errmsg(db_));
      if (rc == SQLITE_CONSTRAINT) e.code = Code::kConflict;
      return e;
    }
    Row row;
    int n = sqlite3_column_count(raw);
    for (int c = 0; c < n; ++c) {
      switch (sqlite3_column_type(raw, c)) {
        case SQLITE_INTEGER:
          row.emplace_back(static_cast<int64_t>(sqlite3_column_int64(raw, c)));
          break;
        case SQLITE_FLOAT:
          row.emplace_back(sqlite3_column_double(raw, c));
          break;
        case SQLITE_NULL:
          row.emplace_back(nullptr);
          break;
        default: {
          const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(raw, c));
          row.emplace_back(std::string(t ? t : "", static_cast<size_t>(sqlite3_column_bytes(raw, c))));
        }
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace isb::store
