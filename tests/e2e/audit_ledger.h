// What the audit log must hold after an e2e test: every tool call the test made, as its row must read, and the check
// of the daemon's audit_log table against that list.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace isb::e2e {

// One call as its audit row must read. Empty outcome, actor_kind or org: not checked.
struct ExpectedRow {
  enum class Rows {
    kOne,    // exactly one row
    kNone,   // no row: a read-only call that succeeded
    kMaybe,  // a call cut short (a client or a daemon that went away): at most one row, as described
    kAny,    // calls a client makes as many times as it needs (a terminal's keystrokes): any number of rows
  };
  std::string action{};      // the tool's name
  std::string surface{};     // "unix", "rest", "mcp"
  std::string outcome{};     // "ok" or an error code
  std::string actor_kind{};  // "superadmin", "token", "session"
  std::string org{};
  std::string request_id{};  // the X-Request-Id the fixture sent; "": matched in order among calls without one
  Rows rows = Rows::kOne;
  std::string where{};  // names the call in a failure
  std::string Describe() const;
};

// A row of audit_log, the fields the check compares.
struct AuditRow {
  int64_t id = 0;
  std::string action, surface, outcome, actor_kind, org, request_id;
  std::string Describe() const;
};

// Every row of the audit_log table of the SQLite file at `db_path`, in id order; *error says why when it cannot.
std::vector<AuditRow> ReadAuditRows(const std::string& db_path, std::string* error);

// Thread-safe: calls may be logged from any thread.
class AuditLedger {
 public:
  // The ledger's clock. A call takes a tick before it is sent and one after its answer, so that two calls that did
  // not overlap are known to have happened in that order.
  uint64_t Tick();
  // A call the fixture made; a row of it must come after the rows of every call that finished before `started`.
  void Add(ExpectedRow row, uint64_t started, uint64_t finished);
  // Calls an external client made, in the order made; the calls of one group may have overlapped (their rows may
  // come in any order among themselves).
  void AddGroup(std::vector<ExpectedRow> group);
  size_t size() const;

  // Every way `rows` differ from the calls: a call without its row (named by its where), a row of a call that must
  // leave none, a row out of order, a row no call explains. Empty when they agree. The row of a long call's start
  // ("started") is not a call's row here.
  std::vector<std::string> Check(const std::vector<AuditRow>& rows) const;

 private:
  struct Entry {
    std::vector<ExpectedRow> calls;  // one, or an external group
    uint64_t started = 0, finished = 0;
  };
  mutable std::mutex mu_;
  uint64_t clock_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace isb::e2e
