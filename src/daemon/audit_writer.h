// Audit rows made on the egress proxy's event loop (secret_use, secret_leak), written to SQLite by a thread of their
// own: the loop only queues a row, never waits for the database. The queue is bounded; past it a row that may go
// (secret_use, whose uses are also counted in sandbox_get) is dropped and counted (and said once on stderr), so a
// database that stalls cannot grow the daemon's memory without end. A row that must stay (secret_leak, at most one
// per sandbox, secret, host and action a minute) is queued past the bound. Once the queue empties after drops, one
// audit_rows_dropped row says how many went.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>

#include "audit/log.h"
#include "base/mutex.h"
#include "base/result.h"

namespace isb::daemon {

class AuditWriter {
 public:
  static constexpr size_t kMaxQueued = 4096;
  enum class Overflow { kDrop, kKeep };  // what a full queue does with the row
  // How a row is written: AuditLog::Append in the daemon, something a test watches in its tests.
  using Sink = std::function<Status(const audit::Entry&)>;

  explicit AuditWriter(Sink sink);
  explicit AuditWriter(audit::AuditLog* log);
  AuditWriter(const AuditWriter&) = delete;
  AuditWriter& operator=(const AuditWriter&) = delete;
  ~AuditWriter();  // writes every row queued, then stops

  // Never blocks on the database: the row is written later, on the writer's thread.
  void Queue(audit::Entry entry, Overflow overflow = Overflow::kDrop);
  // Returns once every row queued before the call is written (or failed), and the row counting drops said:
  // for shutdown and tests.
  void Drain();
  // Rows dropped because the queue was full.
  uint64_t dropped() const;

 private:
  void Loop();
  // The row that says `count` rows were dropped.
  static audit::Entry DroppedRow(uint64_t count);

  Sink sink_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<audit::Entry> queue_ ISB_GUARDED_BY(mu_);
  uint64_t queued_ ISB_GUARDED_BY(mu_) = 0;   // rows ever queued
  uint64_t written_ ISB_GUARDED_BY(mu_) = 0;  // of those, written (or failed)
  uint64_t dropped_ ISB_GUARDED_BY(mu_) = 0;
  uint64_t unreported_ ISB_GUARDED_BY(mu_) = 0;  // of those, not yet said in an audit_rows_dropped row
  bool reporting_ ISB_GUARDED_BY(mu_) = false;   // an audit_rows_dropped row is being written
  bool done_ ISB_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace isb::daemon
