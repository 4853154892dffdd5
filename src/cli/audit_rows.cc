// The audit rows the CLI prints: a table for people, JSON lines for export.
#include "cli/audit_rows.h"

#include <ctime>

namespace isb::cli {

std::string UtcTime(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string AuditTable(const json& result) {
  char line[512];
  std::snprintf(line, sizeof line, "%-8s %-20s %-24s %-20s %-22s %-18s %s\n", "ID", "TIME", "ACTOR", "ACTION", "TARGET",
                "OUTCOME", "SURFACE");
  std::string out = line;
  for (const json& r : result.value("records", json::array())) {
    std::snprintf(line, sizeof line, "%-8lld %-20s %-24s %-20s %-22s %-18s %s\n",
                  static_cast<long long>(r.value("id", int64_t{0})), UtcTime(r.value("time", int64_t{0})).c_str(),
                  r.value("actor", "").c_str(), r.value("action", "").c_str(), r.value("target", "").c_str(),
                  r.value("outcome", "").c_str(), r.value("surface", "").c_str());
    out += line;
  }
  return out;
}

std::string HistoryTable(const json& result) {
  char line[512];
  std::snprintf(line, sizeof line, "%-8s %-20s %-20s %-14s %-24s %s\n", "ID", "TIME", "SANDBOX", "EVENT", "ACTOR",
                "REASON");
  std::string out = line;
  for (const json& e : result.value("events", json::array())) {
    std::snprintf(line, sizeof line, "%-8lld %-20s %-20s %-14s %-24s ",
                  static_cast<long long>(e.value("id", int64_t{0})), UtcTime(e.value("time", int64_t{0})).c_str(),
                  e.value("sandbox", "").c_str(), e.value("event", "").c_str(), e.value("actor", "").c_str());
    out += line + e.value("reason", "") + "\n";
  }
  return out;
}

Status ExportAudit(const ToolClient& client, const std::function<void(const std::string& line)>& line, bool platform) {
  json in = {{"limit", kAuditPage}};
  if (platform) in["platform"] = true;
  for (;;) {
    ISB_ASSIGN_OR_RETURN(json page, client.Call("audit_list", in));
    const json records = page.value("records", json::array());
    for (const json& r : records) line(r.dump(-1, ' ', false, json::error_handler_t::replace));
    const json next = page.value("next_after", json());
    if (!next.is_number_integer()) return {};
    if (next.get<int64_t>() <= in.value("after", int64_t{0}))
      return Error::Msg("audit_list: next_after does not advance");  // a daemon bug; never loop on it
    in["after"] = next;
  }
}

}  // namespace isb::cli
