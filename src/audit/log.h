// The audit log: every call that changes something, every refusal, secret read and sign-in, append-only and
// hash-chained in the audit_log table.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/chain.h"
#include "audit/details.h"
#include "audit/record.h"
#include "base/result.h"
#include "store/db.h"

namespace isb::audit {

// Conditions are ANDed; an empty string or nullopt matches everything.
struct Filter {
  std::string org{};
  // The rows of no org instead (sign-ins and sign-outs, setup, refused credentials: events before any org is known).
  bool no_org = false;
  std::string actor{};
  std::string action{};
  std::optional<int64_t> since_ms{};  // time >= since
  std::optional<int64_t> until_ms{};  // time < until
  int64_t after_id = 0;               // for paging: pass the last id of the previous page
  int64_t limit = 100;                // List clamps it to 1..kMaxListLimit; Export ignores it (every match)
  bool latest = false;                // List: the last `limit` matches (after after_id), still in id order
};
inline constexpr int64_t kMaxListLimit = 1000;

// Thread-safe; one per daemon, shared by every surface. An append is one INSERT in its own transaction (WAL),
// serialized with the others, so the chain stays linear under any number of threads.
class AuditLog {
 public:
  // REQUIRES: `db` has the audit migration applied and outlives the log.
  static Result<std::unique_ptr<AuditLog>> Open(store::Db& db, DetailsPolicy policy = DefaultDetailsPolicy(),
                                                Clock clock = SystemClock());

  // Records one call. Details are reduced by the policy for e.action; every text is cleaned to valid UTF-8 and cut
  // to kMaxDetailBytes; an outcome other than "ok", "started" or a code name is stored as "internal". Returns the new
  // head.
  Result<Head> Append(const Entry& e);

  // Records matching `f`, in id order.
  Result<std::vector<Record>> List(const Filter& f);
  // Every record matching `f` as JSON lines (JsonLine, no newline), in id order, page by page.
  Status Export(const Filter& f, const std::function<Status(std::string_view line)>& sink);

  Result<VerifyResult> Verify(const std::optional<Head>& pinned = std::nullopt) { return chain_.Verify(pinned); }
  // Retention pruning (`--audit-retention`, default kDefaultRetention).
  Result<PruneResult> Prune(std::chrono::milliseconds retention) { return chain_.Prune(retention); }

 private:
  AuditLog(store::Db& db, DetailsPolicy policy, Clock clock);
  Result<std::vector<Record>> Page(const Filter& f, int64_t after_id, int64_t limit, bool latest = false);

  Chain chain_;
  const DetailsPolicy policy_;
};

inline constexpr std::chrono::milliseconds kDefaultRetention = std::chrono::hours(24 * 90);

}  // namespace isb::audit
