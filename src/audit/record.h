// An audit record: who did what to what, from where, with what outcome; its canonical encoding and hash.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/chain.h"

namespace isb::audit {

// What a caller (the authorizer, a tool) reports about one call. The log fills id, time and the hashes.
struct Entry {
  std::string org{};
  std::string actor{};                                // an identity's name or id; never a credential
  std::string actor_kind{};                           // "user", "token", "superadmin", "system", ...
  std::string surface{};                              // "rest", "mcp", "unix", "cli", ...
  std::string action{};                               // the tool's name, or an event such as "sign_in"
  std::string target{};                               // the object acted on: a sandbox, a user, a token's id
  nlohmann::json details = nlohmann::json::object();  // raw input; the log keeps only what DetailsPolicy allows
  std::string outcome = "ok";  // "ok", "started" or an error code (OutcomeOf); anything else is stored as "internal"
  std::string ip{};
  std::string user_agent{};
  std::string request_id{};
};

struct Record {
  int64_t id = 0;
  int64_t time_ms = 0;
  std::string org, actor, actor_kind, surface, action, target;
  std::string details{};  // a JSON object, exactly as stored and hashed
  std::string outcome, ip, user_agent, request_id;
  std::string prev_hash, hash;
};

// The audit_log table and the order of its fields in the encoding: domain "isb.audit.v1", id, time_ms, then
//   org, actor, actor_kind, surface, action, target, details, outcome, ip, user_agent, request_id
// each length-prefixed (see chain_encoding.h). hash = SHA-256(prev_hash's 32 bytes || encoding), as hex; the first
// row's prev_hash is kGenesisHash, and after pruning the first row's prev_hash is the anchor's hash.
const ChainDef& AuditChain();

std::vector<std::string> Fields(const Record& r);
Record RecordFrom(const ChainRow& row);
// The hash `r` must carry: LinkHash(r.prev_hash, encoding of r).
std::string RecordHash(const Record& r);

// One JSON object per record, details as an object. Every stored text is valid UTF-8 (the log cleans it on
// append), but a tampered file may not be: dump with nlohmann::json::error_handler_t::replace, as JsonLine does.
nlohmann::json ToJson(const Record& r);
// ToJson(r) on one line, without the newline.
std::string JsonLine(const Record& r);

}  // namespace isb::audit
