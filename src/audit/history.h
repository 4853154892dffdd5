// The sandbox history: every lifecycle event of every sandbox and who asked for it, on a hash chain of its own
// (the sandbox_history table, domain "isb.history.v1").
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/chain.h"
#include "base/result.h"
#include "store/db.h"

namespace isb::audit {

// The events a sandbox goes through; History::Record refuses any other.
// "network": the host's side of its network was changed by another program (reason "rules_deleted" or
// "rules_changed").
inline constexpr std::string_view kHistoryEvents[] = {"created", "started", "stopped",  "oom",    "reaped",
                                                      "adopted", "removed", "extended", "network"};

struct HistoryEntry {
  std::string sandbox{};  // the sandbox's id
  std::string org{};
  std::string event{};  // one of kHistoryEvents
  std::string actor{};  // who asked; "" with actor_kind "system" for the daemon's own (reaper, OOM, adoption)
  std::string actor_kind{};
  std::string reason{};  // a short code such as "expired" or "idle"; never command output
  std::string request_id{};
};

// Encoding order after id and time: sandbox, org, event, actor, actor_kind, reason, request_id.
struct HistoryEvent {
  int64_t id = 0;
  int64_t time_ms = 0;
  HistoryEntry entry{};
  std::string prev_hash, hash;
};

struct HistoryFilter {
  std::string sandbox{};
  std::string org{};
  std::optional<int64_t> since_ms{};  // time >= since
  std::optional<int64_t> until_ms{};  // time < until
  int64_t after_id = 0;
  int64_t limit = 100;  // clamped to 1..1000
};

const ChainDef& HistoryChain();

// Thread-safe; same guarantees as AuditLog.
class History {
 public:
  // REQUIRES: `db` has the audit migration applied and outlives the history.
  static Result<std::unique_ptr<History>> Open(store::Db& db, Clock clock = SystemClock());

  Result<Head> Record(const HistoryEntry& e);
  Result<std::vector<HistoryEvent>> Query(const HistoryFilter& f);
  Result<VerifyResult> Verify(const std::optional<Head>& pinned = std::nullopt) { return chain_.Verify(pinned); }
  Result<PruneResult> Prune(std::chrono::milliseconds retention) { return chain_.Prune(retention); }

 private:
  History(store::Db& db, Clock clock) : chain_(db, HistoryChain(), std::move(clock)) {}
  Chain chain_;
};

}  // namespace isb::audit
