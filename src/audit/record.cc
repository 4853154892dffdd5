// Audit records as chain rows.
#include "audit/record.h"

#include "audit/chain_encoding.h"

namespace isb::audit {

const ChainDef& AuditChain() {
  static const ChainDef def{"audit_log",
                            "isb.audit.v1",
                            {"org", "actor", "actor_kind", "surface", "action", "target", "details", "outcome", "ip",
                             "user_agent", "request_id"}};
  return def;
}

std::vector<std::string> Fields(const Record& r) {
  return {r.org,     r.actor,   r.actor_kind, r.surface,    r.action,    r.target,
          r.details, r.outcome, r.ip,         r.user_agent, r.request_id};
}

Record RecordFrom(const ChainRow& row) {
  Record r;
  r.id = row.id;
  r.time_ms = row.time_ms;
  const auto& f = row.fields;
  r.org = f[0], r.actor = f[1], r.actor_kind = f[2], r.surface = f[3], r.action = f[4], r.target = f[5];
  r.details = f[6], r.outcome = f[7], r.ip = f[8], r.user_agent = f[9], r.request_id = f[10];
  r.prev_hash = row.prev_hash;
  r.hash = row.hash;
  return r;
}

std::string RecordHash(const Record& r) {
  return LinkHash(r.prev_hash, CanonicalEncoding(AuditChain().domain, r.id, r.time_ms, Fields(r)));
}

nlohmann::json ToJson(const Record& r) {
  auto details = nlohmann::json::parse(r.details, nullptr, false);
  if (details.is_discarded()) details = r.details;  // a tampered row: show what is there
  return {{"id", r.id},
          {"time", r.time_ms},
          {"org", r.org},
          {"actor", r.actor},
          {"actor_kind", r.actor_kind},
          {"surface", r.surface},
          {"action", r.action},
          {"target", r.target},
          {"details", std::move(details)},
          {"outcome", r.outcome},
          {"ip", r.ip},
          {"user_agent", r.user_agent},
          {"request_id", r.request_id},
          {"prev_hash", r.prev_hash},
          {"hash", r.hash}};
}

std::string JsonLine(const Record& r) {
  return ToJson(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace isb::audit
