// Retention pruning: both chains, a log line for each prune that removed rows, the periodic thread.
#include "audit/retention.h"

#include "base/units.h"

namespace isb::audit {

Result<std::optional<std::chrono::milliseconds>> ParseRetention(std::string_view text) {
  if (text == "off" || text == "0") return std::optional<std::chrono::milliseconds>();
  auto d = ParseDuration(text);
  if (!d.ok()) return Error::Of(Code::kInvalidArgument, "--audit-retention: " + d.error().message);
  if (*d < kMinRetention)
    return Error::Of(Code::kInvalidArgument, "--audit-retention: must be at least 1h, or off (never prune)");
  return std::optional(*d);
}

Result<RetentionResult> PruneChains(AuditLog& log, History& history, std::chrono::milliseconds retention) {
  RetentionResult r;
  ISB_ASSIGN_OR_RETURN(r.audit_log, log.Prune(retention));
  ISB_ASSIGN_OR_RETURN(r.history, history.Prune(retention));
  return r;
}

std::string PruneLine(const RetentionResult& r) {
  if (r.audit_log.rows == 0 && r.history.rows == 0) return "";
  return "pruned " + std::to_string(r.audit_log.rows) + " audit log rows (anchor " +
         std::to_string(r.audit_log.pruned_through.id) + ") and " + std::to_string(r.history.rows) +
         " history rows (anchor " + std::to_string(r.history.pruned_through.id) + ")";
}

RetentionPruner::RetentionPruner(AuditLog& log, History& history, std::chrono::milliseconds retention,
                                 std::chrono::milliseconds interval, std::function<void(const std::string&)> report)
    : log_(log), history_(history), retention_(retention), interval_(interval), report_(std::move(report)) {}

void RetentionPruner::RunOnce() {
  auto r = PruneChains(log_, history_, retention_);
  if (!r.ok()) {
    report_("audit retention: " + r.error().message);
    return;
  }
  if (std::string line = PruneLine(*r); !line.empty()) report_("audit retention: " + line);
}

void RetentionPruner::Start() {
  RunOnce();
  thread_ = std::thread([this] {
    MutexLock lock(mu_);
    while (!cv_.WaitForFlag(mu_, stopping_, interval_)) {
      lock.Unlock();
      RunOnce();
      lock.Lock();
    }
  });
}

void RetentionPruner::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

}  // namespace isb::audit
