// Retention pruning of both chains (`isb serve --audit-retention`): once at start, then periodically on a thread.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "audit/history.h"
#include "audit/log.h"
#include "base/mutex.h"
#include "base/result.h"

namespace isb::audit {

// --audit-retention: a duration of at least kMinRetention ("90d", "12h"), or "off" / "0": nothing is ever pruned
// (nullopt). The error names the flag.
Result<std::optional<std::chrono::milliseconds>> ParseRetention(std::string_view text);
inline constexpr std::chrono::milliseconds kMinRetention = std::chrono::hours(1);
inline constexpr std::chrono::milliseconds kPruneInterval = std::chrono::hours(1);

struct RetentionResult {
  PruneResult audit_log{};
  PruneResult history{};
};

// Prunes the audit log, then the history; the first failure stops it.
Result<RetentionResult> PruneChains(AuditLog& log, History& history, std::chrono::milliseconds retention);

// "pruned 3 audit log rows (anchor 3) and 1 history rows (anchor 1)", or "" when nothing was removed.
std::string PruneLine(const RetentionResult& r);

// Prunes both chains every `interval` on a thread of its own until Stop (or destruction); each prune that removed
// rows, and each failure, goes to `report` as one line.
class RetentionPruner {
 public:
  // REQUIRES: `log` and `history` outlive the pruner.
  RetentionPruner(AuditLog& log, History& history, std::chrono::milliseconds retention,
                  std::chrono::milliseconds interval, std::function<void(const std::string&)> report);
  ~RetentionPruner() { Stop(); }
  RetentionPruner(const RetentionPruner&) = delete;
  RetentionPruner& operator=(const RetentionPruner&) = delete;

  // Prunes once on this thread, then starts the periodic one.
  void Start();
  // Wakes the thread and joins it; a prune in progress finishes first. Idempotent.
  void Stop();
  // Prunes once and reports; what the thread does each interval.
  void RunOnce();

 private:
  AuditLog& log_;
  History& history_;
  const std::chrono::milliseconds retention_, interval_;
  const std::function<void(const std::string&)> report_;
  Mutex mu_;
  CondVar cv_;
  bool stopping_ ISB_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace isb::audit
