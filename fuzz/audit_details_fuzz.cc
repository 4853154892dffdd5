// Fuzzes what the audit log keeps of a caller's input: the details allow-list and text cleaning. The first byte
// picks the action; the rest is the JSON a caller sent (or, when it is not JSON, a text field). Whatever comes in,
// what is kept must be an object of allow-listed keys holding scalars, lists of strings, or (Keep::kRecords, as
// sandbox_create's ports) lists of records of scalars, all valid UTF-8, cut.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "audit/details.h"

namespace {

using nlohmann::json;

const isb::audit::DetailsPolicy& Policy() {
  static const isb::audit::DetailsPolicy p = [] {
    isb::audit::DetailsPolicy d = isb::audit::DefaultDetailsPolicy();
    d.Allow("all", {{"s"},
                    {"l", isb::audit::Keep::kStrings},
                    {"k", isb::audit::Keep::kKeyNames},
                    {"r", isb::audit::Keep::kRecords}});
    return d;
  }();
  return p;
}

constexpr const char* kActions[] = {"all", "sandbox_exec", "sandbox_create", "sandbox_file_write", "unknown"};
constexpr size_t kMaxString = isb::audit::kMaxDetailBytes + 3;  // plus the ellipsis

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckText(const std::string& s) {
  Check(s.size() <= kMaxString);
  (void)json(s).dump();  // strict: throws (and fails the run) on invalid UTF-8
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string action = kActions[data[0] % std::size(kActions)];
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  CheckText(isb::audit::CleanText(body));
  json in = json::parse(body, nullptr, false);
  if (in.is_discarded()) return 0;
  json out = Policy().Filter(action, in);
  Check(out.is_object());
  if (action == "unknown") Check(out.empty());
  for (const auto& [key, value] : out.items()) {
    Check(in.is_object() && in.contains(key));
    if (value.is_string()) {
      CheckText(value.get<std::string>());
    } else if (value.is_array()) {
      Check(value.size() <= isb::audit::kMaxDetailItems + 1);
      const bool records = (action == "sandbox_create" && key == "ports") || (action == "all" && key == "r");
      for (const auto& e : value) {
        if (e.is_object()) {
          // A record: its scalar members only, keys and strings cleaned.
          Check(records);
          for (const auto& [k, member] : e.items()) {
            CheckText(k);
            if (member.is_string()) {
              CheckText(member.get<std::string>());
            } else {
              Check(member.is_number() || member.is_boolean());
            }
          }
          continue;
        }
        Check(e.is_string());
        CheckText(e.get<std::string>());
      }
    } else {
      Check(value.is_number() || value.is_boolean());
    }
  }
  return 0;
}
