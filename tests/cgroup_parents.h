// Where isb makes its cgroups on this host, for the tests' leak checks: <hierarchy>/isb in each v1 hierarchy it
// uses, in a hybrid host's cgroup2 mount, and in the cgroup2 root of a v2 host.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <vector>

namespace isb::testing {

// Each hierarchy once (cpu and cpuacct may be one co-mounted hierarchy). A parent is listed even if it does not
// exist yet, as long as its hierarchy is mounted: a test may create it, and what it then holds was not there before.
inline std::vector<std::string> IsbCgroupParents() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::set<std::string> seen;
  // "": the cgroup2 root itself, on a host whose /sys/fs/cgroup is cgroup2.
  for (const char* c : {"memory", "pids", "cpu", "cpuacct", "unified", ""}) {
    const std::string hierarchy = std::string("/sys/fs/cgroup") + (*c ? std::string("/") + c : "");
    std::error_code ec;
    if (*c == '\0' ? !fs::exists(hierarchy + "/cgroup.controllers", ec) : !fs::exists(hierarchy, ec)) continue;
    const std::string dir = hierarchy + "/isb";
    std::string real = fs::weakly_canonical(dir, ec).string();
    if (ec) real = dir;
    if (!seen.insert(real).second) continue;
    out.push_back(dir);
  }
  return out;
}

}  // namespace isb::testing
