// The ledger of a test's calls, and its check against the audit_log table.
#include "e2e/audit_ledger.h"

#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <set>

namespace isb::e2e {
namespace {

bool Matches(const ExpectedRow& c, const AuditRow& r) {
  auto same = [](const std::string& want, const std::string& got) { return want.empty() || want == got; };
  return c.action == r.action && c.surface == r.surface && same(c.outcome, r.outcome) &&
         same(c.actor_kind, r.actor_kind) && same(c.org, r.org);
}

std::string Text(sqlite3_stmt* st, int col) {
  const unsigned char* t = sqlite3_column_text(st, col);
  return t == nullptr ? "" : reinterpret_cast<const char*>(t);
}

}  // namespace

std::string ExpectedRow::Describe() const {
  std::string s = where + " (" + action + " on " + surface + ", outcome " + (outcome.empty() ? "any" : outcome);
  if (!actor_kind.empty()) s += ", actor_kind " + actor_kind;
  if (!org.empty()) s += ", org " + org;
  if (!request_id.empty()) s += ", request " + request_id;
  return s + ")";
}

std::string AuditRow::Describe() const {
  return "row " + std::to_string(id) + " [" + action + " on " + surface + ", outcome " + outcome + ", actor_kind " +
         actor_kind + ", org " + org + ", request " + request_id + "]";
}

std::vector<AuditRow> ReadAuditRows(const std::string& db_path, std::string* error) {
  std::vector<AuditRow> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    *error = db_path + ": " + sqlite3_errmsg(db);
    sqlite3_close(db);
    return rows;
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db,
                         "SELECT id, action, surface, outcome, actor_kind, org, request_id FROM audit_log ORDER BY id",
                         -1, &st, nullptr) != SQLITE_OK) {
    *error = db_path + ": " + sqlite3_errmsg(db);
  } else {
    while (sqlite3_step(st) == SQLITE_ROW) {
      rows.push_back(
          {sqlite3_column_int64(st, 0), Text(st, 1), Text(st, 2), Text(st, 3), Text(st, 4), Text(st, 5), Text(st, 6)});
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rows;
}

uint64_t AuditLedger::Tick() {
  std::lock_guard lock(mu_);
  return ++clock_;
}

void AuditLedger::Add(ExpectedRow row, uint64_t started, uint64_t finished) {
  std::lock_guard lock(mu_);
  entries_.push_back({{std::move(row)}, started, finished});
}

void AuditLedger::AddGroup(std::vector<ExpectedRow> group) {
  std::lock_guard lock(mu_);
  ++clock_;
  entries_.push_back({std::move(group), clock_, clock_});
}

size_t AuditLedger::size() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const Entry& e : entries_) n += e.calls.size();
  return n;
}

std::vector<std::string> AuditLedger::Check(const std::vector<AuditRow>& all_rows) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  // The row of a long call's start ("started") comes with its outcome's row, which is what a call is checked by;
  // AdoptionTest.AnExecTheDaemonDiedDuringIsInTheAuditLog checks the starts.
  // A request refused as malformed or too large before it was read (action "http_request") is no call either: it
  // must read as one, and MalformedTest.EachMalformedRequestIsRecordedWithinItsAddresssBudget counts them.
  std::vector<AuditRow> rows;
  for (const AuditRow& r : all_rows) {
    if (r.action == "http_request") {
      if (r.surface != "http" || r.actor_kind != "anonymous" || !r.org.empty() ||
          (r.outcome != "invalid_argument" && r.outcome != "too_large"))
        out.push_back("a malformed request's row reads otherwise: " + r.Describe());
      continue;
    }
    if (r.outcome != "started") rows.push_back(r);
  }

  // 1. Calls with a request id of the fixture's: their row is the one that carries it.
  std::map<std::string, std::vector<const AuditRow*>> by_request;
  for (const AuditRow& r : rows) by_request[r.request_id].push_back(&r);
  std::set<int64_t> explained;
  struct Placed {
    uint64_t started, finished;
    const AuditRow* row;
    const ExpectedRow* call;
  };
  std::vector<Placed> placed;
  for (const Entry& e : entries_) {
    for (const ExpectedRow& c : e.calls) {
      if (c.request_id.empty()) continue;
      auto it = by_request.find(c.request_id);
      if (it == by_request.end()) {
        if (c.rows == ExpectedRow::Rows::kOne) out.push_back("no audit row for " + c.Describe());
        continue;
      }
      for (const AuditRow* r : it->second) explained.insert(r->id);
      const AuditRow& r = *it->second.front();
      if (it->second.size() > 1) {
        out.push_back(std::to_string(it->second.size()) + " audit rows for " + c.Describe() + ", the second " +
                      it->second[1]->Describe());
      }
      if (c.rows == ExpectedRow::Rows::kNone) {
        out.push_back(c.Describe() + " must leave no audit row, yet " + r.Describe());
      } else if (!Matches(c, r)) {
        out.push_back("the audit row of " + c.Describe() + " is " + r.Describe());
      } else {
        placed.push_back({e.started, e.finished, &r, &c});
      }
    }
  }
  // In order: a call that finished before another started has the lower row id.
  std::vector<const Placed*> by_start, by_finish;
  for (const Placed& p : placed) by_start.push_back(&p), by_finish.push_back(&p);
  std::sort(by_start.begin(), by_start.end(), [](auto* a, auto* b) { return a->started < b->started; });
  std::sort(by_finish.begin(), by_finish.end(), [](auto* a, auto* b) { return a->finished < b->finished; });
  const Placed* latest = nullptr;  // of the calls finished so far, the one with the highest row id
  size_t f = 0;
  for (const Placed* p : by_start) {
    for (; f < by_finish.size() && by_finish[f]->finished < p->started; ++f) {
      if (latest == nullptr || by_finish[f]->row->id > latest->row->id) latest = by_finish[f];
    }
    if (latest != nullptr && latest->row->id > p->row->id) {
      out.push_back("out of order: " + p->call->Describe() + " was made after " + latest->call->Describe() +
                    " had its answer, yet its " + p->row->Describe() + " precedes " + latest->row->Describe());
    }
  }

  // 2. The other calls, in the order made, take the other rows in id order; a group's rows in any order.
  // A sandbox's refused connections (surface egress) are its own, not calls of the test: the egress tests check them.
  std::vector<const AuditRow*> rest;
  for (const AuditRow& r : rows)
    if (!explained.count(r.id) && r.surface != "egress") rest.push_back(&r);
  size_t next = 0;
  for (const Entry& e : entries_) {
    std::vector<const ExpectedRow*> open;
    for (const ExpectedRow& c : e.calls)
      if (c.request_id.empty() && c.rows != ExpectedRow::Rows::kNone) open.push_back(&c);
    while (next < rest.size() && !open.empty()) {
      // The row is taken by a call that must have one, else one that may, else one that repeats.
      int pick = -1;
      for (size_t i = 0; i < open.size(); ++i) {
        if (Matches(*open[i], *rest[next]) && (pick < 0 || open[i]->rows < open[pick]->rows))
          pick = static_cast<int>(i);
      }
      if (pick < 0) break;
      if (open[pick]->rows != ExpectedRow::Rows::kAny) open.erase(open.begin() + pick);
      ++next;
    }
    for (const ExpectedRow* c : open) {
      if (c->rows != ExpectedRow::Rows::kOne) continue;
      out.push_back("no audit row for " + c->Describe() + "; the next unexplained " +
                    (next < rest.size() ? rest[next]->Describe() : "row: none"));
    }
  }
  for (; next < rest.size(); ++next)
    out.push_back("an audit row no call of the test explains: " + rest[next]->Describe());
  return out;
}

}  // namespace isb::e2e
