// isb ls's table and the short units it (and other commands) print durations, sizes and CPU time in.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {

std::string ShortDuration(int64_t s) {
  if (s < 0) s = 0;
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m";
  // Two units from an hour up, so that 1h59m does not read as 1h.
  auto two = [](int64_t big, const char* big_unit, int64_t small, const char* small_unit) {
    return std::to_string(big) + big_unit + (small > 0 ? std::to_string(small) + small_unit : "");
  };
  if (s < 86400) return two(s / 3600, "h", s % 3600 / 60, "m");
  return two(s / 86400, "d", s % 86400 / 3600, "h");
}

std::string ShortBytes(uint64_t bytes) {
  const char* units = "BKMGTPE";
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%lluB", static_cast<unsigned long long>(bytes));
  else if (v < 10 && v != static_cast<double>(static_cast<uint64_t>(v)))
    std::snprintf(buf, sizeof buf, "%.1f%c", v, units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.0f%c", v, units[u]);
  return buf;
}

namespace {

std::string CpuTime(uint64_t usec) {
  char buf[32];
  double s = static_cast<double>(usec) / 1e6;
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.2fs", s);
    return buf;
  }
  return ShortDuration(static_cast<int64_t>(s));
}

template <typename T>
T Field(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

}  // namespace

std::string ListTable(const json& result, int64_t now) {
  std::vector<std::vector<std::string>> rows = {{"ID", "NAME", "STATE", "CPU", "MEMORY", "AGE", "EXPIRES"}};
  const json empty = json::array();
  const json& list = result.is_object() && result.contains("sandboxes") && result["sandboxes"].is_array()
                         ? result["sandboxes"]
                         : empty;
  for (const json& s : list) {
    if (!s.is_object()) continue;
    const json usage = s.contains("usage") && s["usage"].is_object() ? s["usage"] : json::object();
    const json spec = s.contains("spec") && s["spec"].is_object() ? s["spec"] : json::object();
    std::string name = Field<std::string>(s, "name", "");
    int64_t expires = Field<int64_t>(s, "expires_at", 0) - now;
    rows.push_back({Field<std::string>(s, "id", "?"), name.empty() ? "-" : name, Field<std::string>(s, "state", "?"),
                    CpuTime(Field<uint64_t>(usage, "cpu_usec", 0)),
                    ShortBytes(Field<uint64_t>(usage, "memory_bytes", 0)) + " / " +
                        ShortBytes(Field<uint64_t>(spec, "mem_limit", 0)),
                    ShortDuration(now - Field<int64_t>(s, "created_at", now)),
                    expires > 0 ? "in " + ShortDuration(expires) : "expired"});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] - row[i].size() + 3, ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace isb::cli
