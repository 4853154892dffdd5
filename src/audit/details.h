// What an audit record may say about a call: per action, an allow-list of detail keys and how each is kept.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace isb::audit {

enum class Keep {
  kScalar,    // a string, number or boolean; anything else is dropped
  kStrings,   // an array of strings (argv): each string kept, other elements dropped
  kKeyNames,  // an object (env) or an array of "NAME=value" strings: only the names, sorted; never a value
  kRecords,   // an array of objects (published ports): each object's scalar members kept, other members dropped
};

struct DetailField {
  std::string key;
  Keep keep = Keep::kScalar;
};

// Long values are cut so that one call cannot make a huge record: strings (and key names) to kMaxDetailBytes on a
// UTF-8 boundary with "…" appended, lists to kMaxDetailItems with a last element "… N more".
inline constexpr size_t kMaxDetailBytes = 512;
inline constexpr size_t kMaxDetailItems = 64;

// `s` as valid UTF-8 (invalid bytes become U+FFFD) of at most kMaxDetailBytes plus "…".
std::string CleanText(std::string_view s);

// Immutable once built; Filter is safe from any thread.
class DetailsPolicy {
 public:
  // Allows `fields` in the details of `action`, in addition to any allowed before.
  DetailsPolicy& Allow(const std::string& action, std::vector<DetailField> fields);

  // The details an audit record keeps for `action`: a JSON object with only the allow-listed keys, each reduced as
  // its Keep says. An action without an allow-list keeps nothing; `details` that is not an object yields {}.
  nlohmann::json Filter(std::string_view action, const nlohmann::json& details) const;

 private:
  std::map<std::string, std::vector<DetailField>, std::less<>> allowed_;
};

// The allow-lists of the tools isb has: sandbox_* (argv and env names for sandbox_exec; no file content).
DetailsPolicy DefaultDetailsPolicy();

// An audit outcome: "ok", or the error's code ("not_found", "forbidden", ...), never its message; or "started", the
// row of a long-running call that has begun (its outcome follows in a row of its own).
// IsOutcome: "ok", "started" or one of CodeName's names (base/result.h).
inline constexpr const char* kOutcomeStarted = "started";
bool IsOutcome(std::string_view outcome);
std::string OutcomeOf(const Status& status);
std::string OutcomeOf(const Error& error);
template <typename T>
std::string OutcomeOf(const Result<T>& r) {
  return r.ok() ? "ok" : OutcomeOf(r.error());
}

}  // namespace isb::audit
