// Sandbox lifecycle events on their own chain.
#include "audit/history.h"

#include <algorithm>

#include "audit/details.h"

namespace isb::audit {

const ChainDef& HistoryChain() {
  static const ChainDef def{
      "sandbox_history", "isb.history.v1", {"sandbox", "org", "event", "actor", "actor_kind", "reason", "request_id"}};
  return def;
}

Result<std::unique_ptr<History>> History::Open(store::Db& db, Clock clock) {
  std::unique_ptr<History> h(new History(db, std::move(clock)));
  ISB_TRY(h->chain_.Select(Where(), 0, 1));
  return h;
}

Result<Head> History::Record(const HistoryEntry& e) {
  if (std::find(std::begin(kHistoryEvents), std::end(kHistoryEvents), e.event) == std::end(kHistoryEvents))
    return Error::Of(Code::kInvalidArgument, "history: unknown sandbox event \"" + CleanText(e.event) + "\"");
  return chain_.Append({CleanText(e.sandbox), CleanText(e.org), e.event, CleanText(e.actor), CleanText(e.actor_kind),
                        CleanText(e.reason), CleanText(e.request_id)});
}

Result<std::vector<HistoryEvent>> History::Query(const HistoryFilter& f) {
  Where w;
  w.Eq("sandbox", f.sandbox).Eq("org", f.org).Time(f.since_ms, f.until_ms);
  ISB_ASSIGN_OR_RETURN(auto rows, chain_.Select(std::move(w), f.after_id, std::clamp<int64_t>(f.limit, 1, 1000)));
  std::vector<HistoryEvent> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    const auto& v = r.fields;
    out.push_back(
        HistoryEvent{r.id, r.time_ms, HistoryEntry{v[0], v[1], v[2], v[3], v[4], v[5], v[6]}, r.prev_hash, r.hash});
  }
  return out;
}

}  // namespace isb::audit
