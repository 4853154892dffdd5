// One append-only, hash-chained SQLite table (the audit log, the sandbox history): append, prune, verify, select.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "store/db.h"

namespace isb::audit {

// Milliseconds since the Unix epoch; injectable so tests can age rows.
using Clock = std::function<int64_t()>;
Clock SystemClock();

// A chain's table as the audit migration creates it: `id`, `time`, the text `columns` in encoding order, `prev_hash`,
// `hash`; its anchor is the row of chain_anchors named `table`.
struct ChainDef {
  std::string table{};
  std::string domain{};  // first field of every row's encoding, e.g. "isb.audit.v1"
  std::vector<std::string> columns;
};

struct ChainRow {
  int64_t id = 0;
  int64_t time_ms = 0;
  std::vector<std::string> fields;  // in ChainDef::columns order
  std::string prev_hash{};
  std::string hash{};
};

// A position in a chain: a row's id and hash. {0, kGenesisHash} before the first row.
struct Head {
  int64_t id = 0;
  std::string hash{};
  bool operator==(const Head&) const = default;
};

struct Broken {
  int64_t id = 0;
  std::string reason{};  // one of the kReason* below
  bool operator==(const Broken&) const = default;
};

// Why Verify stopped; each names what is wrong with the row at Broken::id.
inline constexpr const char* kReasonMissing = "row missing: ids are not consecutive";
inline constexpr const char* kReasonLink = "prev_hash is not the hash of the row before";
inline constexpr const char* kReasonHash = "hash does not match the row's contents";
inline constexpr const char* kReasonPinned = "hash differs from the pinned head";
inline constexpr const char* kReasonTruncated = "row missing: the chain ends before the pinned head";
inline constexpr const char* kReasonPinnedPruned =
    "the pinned head was pruned: rows through it are gone, so the pin vouches for nothing kept; pin a newer head";
inline constexpr const char* kReasonBeforeAnchor = "row at or before pruned_through, where pruning removed every row";
// The hash covers a field's bytes, not how SQLite stores them: a text field stored as a blob hashes the same but
// matches no filter (org = ?), which would hide the row from every listing.
inline constexpr const char* kReasonType = "a field is not stored as text, or the time not as an integer";

struct VerifyResult {
  bool ok = false;
  int64_t rows = 0;                      // rows in the table up to head
  Head head{};                           // the last row when the walk began, or the anchor if there is none
  Head pruned_through{};                 // the anchor: {0, kGenesisHash} if nothing was ever pruned
  std::optional<Broken> first_broken{};  // set exactly when !ok
};

struct PruneResult {
  int64_t rows = 0;       // rows deleted by this call
  Head pruned_through{};  // the anchor after it
};

// An AND of conditions over a chain's columns with numbered parameters, for Chain::Select.
struct Where {
  std::string sql{};
  std::vector<store::Value> args;
  // column = value; nothing when value is empty (an empty filter field matches everything).
  Where& Eq(const std::string& column, const std::string& value);
  // since <= time < until, each bound only when set.
  Where& Time(const std::optional<int64_t>& since_ms, const std::optional<int64_t>& until_ms);
  Where& Add(const std::string& condition_before_param, store::Value v);
};

// Thread-safe. Appends are serialized, so the chain is linear however many threads append; another process
// appending to the same file is caught by the table's INSERT trigger and continued from its head. Appends that
// arrive while one is being written are written together by one multi-row INSERT (one commit), so concurrent
// callers share the commit's cost; a lone append is one INSERT.
// Verify and Prune exclude each other (Verify never sees half a prune); neither blocks appends for long.
class Chain {
 public:
  // REQUIRES: `db` has the audit migration (store/migrations.cc) applied and outlives the chain.
  Chain(store::Db& db, ChainDef def, Clock clock);

  // Appends one row stamped with the clock; `fields` in ChainDef::columns order. Returns once it is committed.
  Result<Head> Append(std::vector<std::string> fields);

  // Deletes the longest run of rows from the start that are all older than now - retention, after checking that
  // run is intact (pruning never erases evidence of tampering); the last one's id and hash become the anchor.
  Result<PruneResult> Prune(std::chrono::milliseconds retention);

  // Walks the chain from the anchor. With `pinned` (a head copied elsewhere earlier), also checks that row is still
  // there with that hash, which detects a truncated tail or a rewritten chain.
  Result<VerifyResult> Verify(const std::optional<Head>& pinned = std::nullopt);

  // Rows with id > after_id that satisfy `where`, in id order, at most `limit`.
  // `newest`: the last `limit` matches rather than the first (in id order all the same).
  Result<std::vector<ChainRow>> Select(Where where, int64_t after_id, int64_t limit, bool newest = false);

  const ChainDef& def() const { return def_; }

 private:
  struct Pending;
  Status LoadHead();
  // Writes `batch` as one INSERT after head_; REQUIRES: this thread is the writer.
  Status WriteBatch(const std::vector<Pending*>& batch);
  Result<Head> Anchor();
  Result<std::vector<ChainRow>> Page(int64_t after_id, int64_t through_id, int64_t limit);
  // Walks rows after the anchor up to `through` (inclusive); returns the first broken row, if any.
  Result<std::optional<Broken>> Walk(const Head& anchor, int64_t through, const std::optional<Head>& pinned,
                                     Head* last);
  // The hash chain alone, without the type check Walk adds.
  Result<std::optional<Broken>> WalkRows(const Head& anchor, int64_t through, const std::optional<Head>& pinned,
                                         Head* last);

  store::Db& db_;
  const ChainDef def_;
  const Clock clock_;
  const std::string insert_sql_;
  const std::string select_cols_;
  Mutex queue_mu_;
  CondVar written_;
  std::vector<Pending*> queue_ ISB_GUARDED_BY(queue_mu_);
  bool writing_ ISB_GUARDED_BY(queue_mu_) = false;  // one thread writes at a time; head_ and loaded_ belong to it
  Head head_{};
  bool loaded_ = false;
  Mutex walk_mu_;  // Verify and Prune, one at a time
};

}  // namespace isb::audit
