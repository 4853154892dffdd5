// The hash-chained table: serialized appends, pruning through the anchor, a paged verifying walk.
#include "audit/chain.h"

#include <algorithm>

#include "audit/chain_encoding.h"
#include "base/metric_families.h"

namespace isb::audit {
namespace {

using store::AsInt;
using store::AsText;

constexpr int64_t kPage = 512;

std::string Join(const std::vector<std::string>& v, const std::string& suffix) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s + suffix;
  return out;
}

// Rows written by one INSERT at most: a bound on its parameters (SQLite allows 32766) and on a caller's wait.
constexpr size_t kMaxBatch = 256;

// "(?first, ..., ?first+n-1)"
std::string RowParams(size_t first, size_t n) {
  std::string out = "(";
  for (size_t i = 0; i < n; ++i) out += (i ? ", ?" : "?") + std::to_string(first + i);
  return out + ")";
}

std::string InsertSql(const ChainDef& d) {
  return "INSERT INTO " + d.table + "(id, time, " + Join(d.columns, "") + ", prev_hash, hash) VALUES " +
         RowParams(1, d.columns.size() + 4);
}

ChainRow RowFrom(const store::Row& r, size_t ncols) {
  ChainRow row;
  row.id = AsInt(r[0]);
  row.time_ms = AsInt(r[1]);
  for (size_t i = 0; i < ncols; ++i) row.fields.push_back(AsText(r[2 + i]));
  row.prev_hash = AsText(r[2 + ncols]);
  row.hash = AsText(r[3 + ncols]);
  return row;
}

}  // namespace

Clock SystemClock() {
  return [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
}

Chain::Chain(store::Db& db, ChainDef def, Clock clock)
    : db_(db),
      def_(std::move(def)),
      clock_(std::move(clock)),
      insert_sql_(InsertSql(def_)),
      select_cols_("id, time, " + Join(def_.columns, "") + ", prev_hash, hash") {}

Result<Head> Chain::Anchor() {
  ISB_ASSIGN_OR_RETURN(auto rows,
                       db_.Query("SELECT pruned_through, hash FROM chain_anchors WHERE chain = ?1", {def_.table}));
  if (rows.empty()) return Error::Msg("chain_anchors has no row for " + def_.table + "; the database is damaged");
  return Head{AsInt(rows[0][0]), AsText(rows[0][1])};
}

Status Chain::LoadHead() {
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("SELECT id, hash FROM " + def_.table + " ORDER BY id DESC LIMIT 1"));
  if (!rows.empty()) {
    head_ = Head{AsInt(rows[0][0]), AsText(rows[0][1])};
  } else {
    ISB_ASSIGN_OR_RETURN(head_, Anchor());
  }
  loaded_ = true;
  return {};
}

struct Chain::Pending {
  std::vector<std::string> fields;
  Result<Head> result = Error::Msg("not written");
  bool done = false;
};

Status Chain::WriteBatch(const std::vector<Pending*>& batch) {
  if (!loaded_) ISB_TRY(LoadHead());
  const size_t per_row = def_.columns.size() + 4;
  for (int attempt = 0;; ++attempt) {
    std::string sql = insert_sql_;
    std::vector<store::Value> args;
    args.reserve(batch.size() * per_row);
    Head next = head_;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (i > 0) sql += ", " + RowParams(i * per_row + 1, per_row);
      int64_t time_ms = clock_();
      std::string prev = std::move(next.hash);
      next = Head{next.id + 1, LinkHash(prev, CanonicalEncoding(def_.domain, next.id + 1, time_ms, batch[i]->fields))};
      args.emplace_back(next.id);
      args.emplace_back(time_ms);
      for (const auto& f : batch[i]->fields) args.emplace_back(f);
      args.emplace_back(std::move(prev));
      args.emplace_back(next.hash);
      batch[i]->result = next;
    }
    Status st = db_.Exec(sql, args);
    if (st.ok()) {
      head_ = next;
      return {};
    }
    // Another process appended to the same file: continue the chain from its head, once.
    if (st.error().code != Code::kConflict || attempt > 0) return st;
    ISB_TRY(LoadHead());
  }
}

Result<Head> Chain::Append(std::vector<std::string> fields) {
  if (fields.size() != def_.columns.size())
    return Error::Msg(def_.table + ": " + std::to_string(fields.size()) + " fields for " +
                      std::to_string(def_.columns.size()) + " columns");
  Pending me{std::move(fields)};
  MutexLock lock(queue_mu_);
  queue_.push_back(&me);
  while (!me.done) {
    if (writing_) {
      written_.Wait(queue_mu_);
      continue;
    }
    // Become the writer for everything queued so far, this call's row among them.
    writing_ = true;
    size_t n = std::min(queue_.size(), kMaxBatch);
    std::vector<Pending*> batch(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    lock.Unlock();
    Status st = WriteBatch(batch);
    lock.Lock();
    for (Pending* p : batch) {
      if (!st.ok()) p->result = st.error();
      p->done = true;
    }
    writing_ = false;
    written_.NotifyAll();
  }
  if (me.result.ok()) metrics::AuditRows().With({def_.table}).Inc();
  return std::move(me.result);
}

Where& Where::Add(const std::string& condition_before_param, store::Value v) {
  args.push_back(std::move(v));
  sql += (sql.empty() ? "" : " AND ") + condition_before_param + " ?" + std::to_string(args.size());
  return *this;
}

Where& Where::Eq(const std::string& column, const std::string& value) {
  return value.empty() ? *this : Add(column + " =", value);
}

Where& Where::Time(const std::optional<int64_t>& since_ms, const std::optional<int64_t>& until_ms) {
  if (since_ms) Add("time >=", *since_ms);
  if (until_ms) Add("time <", *until_ms);
  return *this;
}

Result<std::vector<ChainRow>> Chain::Select(Where where, int64_t after_id, int64_t limit, bool newest) {
  where.Add("id >", after_id);
  std::string sql = "SELECT " + select_cols_ + " FROM " + def_.table + " WHERE " + where.sql + " ORDER BY id" +
                    (newest ? " DESC" : "") + " LIMIT ?" + std::to_string(where.args.size() + 1);
  where.args.emplace_back(limit);
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query(sql, where.args));
  std::vector<ChainRow> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(RowFrom(r, def_.columns.size()));
  if (newest) std::reverse(out.begin(), out.end());
  return out;
}

Result<std::vector<ChainRow>> Chain::Page(int64_t after_id, int64_t through_id, int64_t limit) {
  return Select(Where().Add("id <=", through_id), after_id, limit);
}

Result<std::optional<Broken>> Chain::Walk(const Head& anchor, int64_t through, const std::optional<Head>& pinned,
                                          Head* last) {
  ISB_ASSIGN_OR_RETURN(std::optional<Broken> broken, WalkRows(anchor, through, pinned, last));
  // The first row stored with a wrong type, if it comes before what the walk found.
  std::string typed = "typeof(time) = 'integer' AND typeof(prev_hash) = 'text' AND typeof(hash) = 'text'";
  for (const std::string& c : def_.columns) typed += " AND typeof(" + c + ") = 'text'";
  ISB_ASSIGN_OR_RETURN(
      auto wrong, db_.Query("SELECT min(id) FROM " + def_.table + " WHERE id > ?1 AND id <= ?2 AND NOT (" + typed + ")",
                            {anchor.id, through}));
  if (!std::holds_alternative<std::nullptr_t>(wrong[0][0]) && (!broken || AsInt(wrong[0][0]) < broken->id))
    return std::optional(Broken{AsInt(wrong[0][0]), kReasonType});
  return broken;
}

Result<std::optional<Broken>> Chain::WalkRows(const Head& anchor, int64_t through, const std::optional<Head>& pinned,
                                              Head* last) {
  *last = anchor;
  // A head pinned at or before the anchor: the rows through it were pruned, and a match with the anchor would say
  // only that the whole pinned log is gone (pruning it all takes one update of the anchor). Never "ok".
  if (pinned && pinned->id <= anchor.id) {
    if (pinned->id == anchor.id && pinned->hash != anchor.hash) return std::optional(Broken{anchor.id, kReasonPinned});
    return std::optional(Broken{pinned->id, kReasonPinnedPruned});
  }
  for (;;) {
    ISB_ASSIGN_OR_RETURN(auto page, Page(last->id, through, kPage));
    for (const ChainRow& row : page) {
      if (row.id != last->id + 1) return std::optional(Broken{last->id + 1, kReasonMissing});
      if (row.prev_hash != last->hash) return std::optional(Broken{row.id, kReasonLink});
      if (LinkHash(row.prev_hash, CanonicalEncoding(def_.domain, row.id, row.time_ms, row.fields)) != row.hash)
        return std::optional(Broken{row.id, kReasonHash});
      if (pinned && pinned->id == row.id && pinned->hash != row.hash)
        return std::optional(Broken{row.id, kReasonPinned});
      *last = Head{row.id, row.hash};
    }
    if (static_cast<int64_t>(page.size()) < kPage) break;
  }
  if (pinned && pinned->id > last->id) return std::optional(Broken{last->id + 1, kReasonTruncated});
  return std::optional<Broken>();
}

Result<VerifyResult> Chain::Verify(const std::optional<Head>& pinned) {
  MutexLock lock(walk_mu_);
  VerifyResult out;
  ISB_ASSIGN_OR_RETURN(out.pruned_through, Anchor());
  // The head as of now: rows appended while the walk runs are left for the next verify.
  ISB_ASSIGN_OR_RETURN(auto top, db_.Query("SELECT id, hash FROM " + def_.table + " ORDER BY id DESC LIMIT 1"));
  out.head = top.empty() ? out.pruned_through : Head{AsInt(top[0][0]), AsText(top[0][1])};
  ISB_ASSIGN_OR_RETURN(auto count, db_.Query("SELECT count(*) FROM " + def_.table + " WHERE id <= ?1", {out.head.id}));
  out.rows = AsInt(count[0][0]);
  ISB_ASSIGN_OR_RETURN(auto stale,
                       db_.Query("SELECT min(id) FROM " + def_.table + " WHERE id <= ?1", {out.pruned_through.id}));
  if (!std::holds_alternative<std::nullptr_t>(stale[0][0])) {
    out.first_broken = Broken{AsInt(stale[0][0]), kReasonBeforeAnchor};
  } else {
    Head last;
    ISB_ASSIGN_OR_RETURN(out.first_broken, Walk(out.pruned_through, out.head.id, pinned, &last));
  }
  out.ok = !out.first_broken.has_value();
  if (!out.ok) metrics::AuditVerifyFailures().With({def_.table}).Inc();
  return out;
}

Result<PruneResult> Chain::Prune(std::chrono::milliseconds retention) {
  MutexLock lock(walk_mu_);
  int64_t cutoff = clock_() - retention.count();
  ISB_ASSIGN_OR_RETURN(Head anchor, Anchor());
  // Only a prefix can go: the rows before the first one young enough to keep.
  ISB_ASSIGN_OR_RETURN(auto keep,
                       db_.Query("SELECT id FROM " + def_.table + " WHERE id > ?1 AND time >= ?2 ORDER BY id LIMIT 1",
                                 {anchor.id, cutoff}));
  int64_t through = 0;
  if (!keep.empty()) {
    through = AsInt(keep[0][0]) - 1;
  } else {
    ISB_ASSIGN_OR_RETURN(auto top, db_.Query("SELECT max(id) FROM " + def_.table));
    through = AsInt(top[0][0]);
  }
  if (through <= anchor.id) return PruneResult{0, anchor};
  Head last;
  ISB_ASSIGN_OR_RETURN(auto broken, Walk(anchor, through, std::nullopt, &last));
  if (broken)
    return Error::Of(Code::kConflict, "refusing to prune " + def_.table + ": the chain is broken at row " +
                                          std::to_string(broken->id) + " (" + broken->reason +
                                          "); pruning would erase the evidence");
  if (last.id != through)
    return Error::Of(Code::kConflict,
                     "refusing to prune " + def_.table + ": row " + std::to_string(through) + " is missing");
  ISB_TRY(db_.Exec("UPDATE chain_anchors SET pruned_through = ?1, hash = ?2 WHERE chain = ?3",
                   {last.id, last.hash, def_.table}));
  return PruneResult{last.id - anchor.id, last};
}

}  // namespace isb::audit
