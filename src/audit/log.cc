// The audit log over its chain: cleaning what callers report, filtered listing and export.
#include "audit/log.h"

#include <algorithm>

namespace isb::audit {

AuditLog::AuditLog(store::Db& db, DetailsPolicy policy, Clock clock)
    : chain_(db, AuditChain(), std::move(clock)), policy_(std::move(policy)) {}

Result<std::unique_ptr<AuditLog>> AuditLog::Open(store::Db& db, DetailsPolicy policy, Clock clock) {
  std::unique_ptr<AuditLog> log(new AuditLog(db, std::move(policy), std::move(clock)));
  // Fails early, with SQLite's message, when the table is missing.
  ISB_TRY(log->chain_.Select(Where(), 0, 1));
  return log;
}

Result<Head> AuditLog::Append(const Entry& e) {
  Record r;
  r.org = CleanText(e.org);
  r.actor = CleanText(e.actor);
  r.actor_kind = CleanText(e.actor_kind);
  r.surface = CleanText(e.surface);
  r.action = CleanText(e.action);
  r.target = CleanText(e.target);
  r.details = policy_.Filter(e.action, e.details).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  r.outcome = IsOutcome(e.outcome) ? e.outcome : std::string(CodeName(Code::kInternal));
  r.ip = CleanText(e.ip);
  r.user_agent = CleanText(e.user_agent);
  r.request_id = CleanText(e.request_id);
  return chain_.Append(Fields(r));
}

Result<std::vector<Record>> AuditLog::Page(const Filter& f, int64_t after_id, int64_t limit, bool latest) {
  Where w;
  if (f.no_org)
    w.Add("org =", std::string());
  else
    w.Eq("org", f.org);
  w.Eq("actor", f.actor).Eq("action", f.action).Time(f.since_ms, f.until_ms);
  ISB_ASSIGN_OR_RETURN(auto rows, chain_.Select(std::move(w), after_id, limit, latest));
  std::vector<Record> out;
  out.reserve(rows.size());
  for (const auto& row : rows) out.push_back(RecordFrom(row));
  return out;
}

Result<std::vector<Record>> AuditLog::List(const Filter& f) {
  return Page(f, f.after_id, std::clamp<int64_t>(f.limit, 1, kMaxListLimit), f.latest);
}

Status AuditLog::Export(const Filter& f, const std::function<Status(std::string_view line)>& sink) {
  int64_t after = f.after_id;
  for (;;) {
    ISB_ASSIGN_OR_RETURN(auto page, Page(f, after, kMaxListLimit));
    for (const Record& r : page) ISB_TRY(sink(JsonLine(r)));
    if (static_cast<int64_t>(page.size()) < kMaxListLimit) return {};
    after = page.back().id;
  }
}

}  // namespace isb::audit
