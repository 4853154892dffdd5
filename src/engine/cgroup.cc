// cgroup setup and accounting for both hierarchies.
#include "engine/cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <cstdlib>
#include <sstream>
#include <tuple>
#include <thread>

#include "base/file.h"
#include "base/mutex.h"

namespace isb::engine {
namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

bool HasWord(const std::string& text, const std::string& word) {
  std::stringstream in(text);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

// Reads "key value" lines (memory.events, cpu.stat, memory.oom_control) and returns the value of `key`.
uint64_t KeyedValue(const std::string& text, const std::string& key) {
  std::stringstream in(text);
  std::string k;
  uint64_t v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return 0;
}

uint64_t ReadNumber(const std::string& path) {
  auto r = ReadFile(path);
  if (!r.ok()) return 0;
  try {
    return std::stoull(*r);
  } catch (...) {
    return 0;
  }
}

Status MakeGroupDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return Error::Sys("create cgroup " + path);
  return {};
}

// isb's parent group is bounded once per process and hierarchy (its pids.max outlives the process; a later one
// writes it again, in case kernel.pid_max changed or an older isb left it unbounded).
Status BoundParentPids(const std::string& parent) {
  static Mutex mu;
  static std::set<std::string> done ISB_GUARDED_BY(mu);
  MutexLock lock(mu);
  if (done.count(parent)) return {};
  // A lower bound an operator set stays.
  const uint32_t bound = HostPidsBound().sandboxes();
  auto now = ReadFile(parent + "/pids.max");
  const unsigned long current = now.ok() && !now->empty() && std::isdigit(static_cast<unsigned char>((*now)[0]))
                                    ? std::strtoul(now->c_str(), nullptr, 10)
                                    : 0;
  if (current == 0 || current > bound) ISB_TRY(WriteKernelFile(parent + "/pids.max", std::to_string(bound)));
  done.insert(parent);
  return {};
}

Status EnableV2Controllers(const std::string& dir) {
  // The "no internal processes" rule: controllers are enabled for children only in groups that hold no
  // processes themselves, so isb's own group (<root>/isb) only ever contains sandbox groups.
  return WriteKernelFile(dir + "/cgroup.subtree_control", "+memory +pids +cpu");
}

}  // namespace

const PidsBound& HostPidsBound() {
  static const PidsBound bound = [] {
    PidsBound b;
    b.pid_max = 32768;  // the kernel's default, should the file be unreadable
    if (auto text = ReadFile("/proc/sys/kernel/pid_max"); text.ok()) {
      unsigned long v = std::strtoul(text->c_str(), nullptr, 10);
      if (v > 0) b.pid_max = static_cast<uint32_t>(v);
    }
    // The kernel's other bound on tasks (from the host's memory) is often the lower one where systemd raised
    // pid_max to 4194304.
    if (auto text = ReadFile("/proc/sys/kernel/threads-max"); text.ok()) {
      unsigned long v = std::strtoul(text->c_str(), nullptr, 10);
      if (v > 0 && v < b.pid_max) b.pid_max = static_cast<uint32_t>(v);
    }
    b.reserve = std::max(kMinHostPidsReserve, b.pid_max / kHostPidsReserveDivisor);
    return b;
  }();
  return bound;
}

std::string PidsBound::Describe() const {
  return std::to_string(sandboxes()) + " (the host's " + std::to_string(pid_max) + " tasks less the " +
         std::to_string(reserve) + " this host keeps for itself)";
}

Result<CgroupLayout> ParseCgroupLayout(const std::string& mountinfo, const std::string& v2_controllers) {
  CgroupLayout layout;
  std::string v2_mount;
  std::stringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    auto fields = Split(line, ' ');
    auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || fields.end() - dash < 4) continue;
    const std::string& mount_point = fields[4];
    const std::string& fstype = *(dash + 1);
    const std::string& super = *(dash + 3);
    if (fstype == "cgroup2") {
      if (v2_mount.empty()) v2_mount = mount_point;
    } else if (fstype == "cgroup") {
      for (const auto& opt : Split(super, ',')) {
        if (opt == "memory") layout.memory = mount_point;
        if (opt == "pids") layout.pids = mount_point;
        if (opt == "cpu") layout.cpu = mount_point;
        if (opt == "cpuacct") layout.cpuacct = mount_point;
      }
    }
  }
  if (!v2_mount.empty() && HasWord(v2_controllers, "memory") && HasWord(v2_controllers, "pids") &&
      HasWord(v2_controllers, "cpu")) {
    return CgroupLayout{.v2 = true, .v2_root = v2_mount, .memory = {}, .pids = {}, .cpu = {}, .cpuacct = {}};
  }
  std::string missing;
  for (auto [name, path, v2_name] : {std::tuple{"memory", &layout.memory, "memory"},
                                     {"pids", &layout.pids, "pids"},
                                     {"cpu", &layout.cpu, "cpu"},
                                     {"cpuacct", &layout.cpuacct, "cpu"}}) {
    if (path->empty() && !HasWord(v2_controllers, v2_name))
      missing += std::string(missing.empty() ? "" : ", ") + "'" + name + "'";
  }
  if (!missing.empty() || layout.memory.empty() || layout.pids.empty() || layout.cpu.empty() || layout.cpuacct.empty())
    return Error::Msg("cgroup controllers " +
                      (missing.empty() ? std::string("are split between v1 and v2") : missing + " missing") +
                      ": a sandbox cannot be limited without them. Boot with cgroup v2 "
                      "(systemd.unified_cgroup_hierarchy=1) and enable memory, pids and cpu, or mount them as v1");
  return layout;
}

Result<CgroupLayout> DetectCgroupLayout() {
  ISB_ASSIGN_OR_RETURN(std::string mountinfo, ReadFile("/proc/self/mountinfo"));
  std::string controllers;
  // Find the cgroup2 mount the same way ParseCgroupLayout will, to read its controllers.
  auto probe = ParseCgroupLayout(mountinfo, "memory pids cpu");
  if (probe.ok() && probe->v2) {
    auto c = ReadFile(probe->v2_root + "/cgroup.controllers");
    if (c.ok()) controllers = *c;
  }
  return ParseCgroupLayout(mountinfo, controllers);
}

Cgroup& Cgroup::operator=(Cgroup&& o) noexcept {
  if (this != &o) {
    (void)Remove();
    layout_ = std::move(o.layout_);
    dirs_ = std::move(o.dirs_);
  }
  return *this;
}

Cgroup::~Cgroup() { (void)Remove(); }

Result<Cgroup> Cgroup::Create(const CgroupLayout& layout, const std::string& name, const Limits& limits) {
  Cgroup cg;
  cg.layout_ = layout;
  if (layout.v2) {
    std::string parent = layout.v2_root + "/isb";
    ISB_TRY(EnableV2Controllers(layout.v2_root));
    ISB_TRY(MakeGroupDir(parent));
    ISB_TRY(EnableV2Controllers(parent));
    ISB_TRY(BoundParentPids(parent));
    std::string dir = parent + "/" + name;
    ISB_TRY(MakeGroupDir(dir));
    cg.dirs_.push_back(dir);
    ISB_TRY(WriteKernelFile(dir + "/memory.swap.max", "0"));  // the memory limit includes swap
    ISB_TRY(cg.SetLimits(limits));
    return cg;
  }
  for (const std::string* root : {&layout.memory, &layout.pids, &layout.cpu, &layout.cpuacct}) {
    std::string dir = *root + "/isb/" + name;
    if (std::find(cg.dirs_.begin(), cg.dirs_.end(), dir) != cg.dirs_.end()) continue;
    ISB_TRY(MakeGroupDir(*root + "/isb"));
    ISB_TRY(MakeGroupDir(dir));
    cg.dirs_.push_back(dir);
  }
  std::string m = layout.memory + "/isb/" + name;
  // memsw is memory plus swap; without swap accounting (swapaccount=0) the file is absent and swap is unbounded,
  // which only matters when the host has swap: refuse then rather than run with a weaker limit.
  if (::access((m + "/memory.memsw.limit_in_bytes").c_str(), F_OK) != 0) {
    auto swaps = ReadFile("/proc/swaps");
    if (swaps.ok() && std::count(swaps->begin(), swaps->end(), '\n') > 1)
      return Error::Msg(
          "the host has swap but no swap accounting, so the memory limit could be bypassed; boot "
          "with swapaccount=1 or cgroup v2");
  }
  ISB_TRY(BoundParentPids(layout.pids + "/isb"));
  ISB_TRY(cg.SetLimits(limits));
  return cg;
}

Status Cgroup::SetLimits(const Limits& limits) const {
  if (dirs_.empty()) return Error::Msg("cgroup already removed");
  const std::string mem = std::to_string(limits.memory_bytes);
  const uint64_t period = 100000;
  const std::string quota = std::to_string(uint64_t{limits.millicpus} * period / 1000);
  const std::string pids = std::to_string(limits.pids);
  if (layout_.v2) {
    const std::string& dir = dirs_[0];
    ISB_TRY(WriteKernelFile(dir + "/memory.max", mem));
    ISB_TRY(WriteKernelFile(dir + "/cpu.max", quota + " " + std::to_string(period)));
    return WriteKernelFile(dir + "/pids.max", pids);
  }
  const std::string m = layout_.memory + "/isb/" + name();
  const std::string memsw = m + "/memory.memsw.limit_in_bytes";
  const bool swap_accounted = ::access(memsw.c_str(), F_OK) == 0;
  // The kernel refuses a memory limit above memsw and a memsw below the memory limit: a limit that grows takes
  // memsw first, one that shrinks the memory limit first.
  const uint64_t before = ReadNumber(m + "/memory.limit_in_bytes");
  if (swap_accounted && limits.memory_bytes > before) ISB_TRY(WriteKernelFile(memsw, mem));
  ISB_TRY(WriteKernelFile(m + "/memory.limit_in_bytes", mem));
  if (swap_accounted && limits.memory_bytes <= before) ISB_TRY(WriteKernelFile(memsw, mem));
  const std::string c = layout_.cpu + "/isb/" + name();
  ISB_TRY(WriteKernelFile(c + "/cpu.cfs_period_us", std::to_string(period)));
  ISB_TRY(WriteKernelFile(c + "/cpu.cfs_quota_us", quota));
  return WriteKernelFile(layout_.pids + "/isb/" + name() + "/pids.max", pids);
}

Cgroup Cgroup::Adopt(const CgroupLayout& layout, const std::string& name) {
  Cgroup cg;
  cg.layout_ = layout;
  // No name, or one that is not a single path component, names no sandbox's cgroup: an empty one would be isb's own
  // parent of them all (and Remove would kill every sandbox).
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) return cg;
  if (layout.v2) {
    cg.dirs_.push_back(layout.v2_root + "/isb/" + name);
    return cg;
  }
  for (const std::string* root : {&layout.memory, &layout.pids, &layout.cpu, &layout.cpuacct}) {
    std::string dir = *root + "/isb/" + name;
    if (std::find(cg.dirs_.begin(), cg.dirs_.end(), dir) == cg.dirs_.end()) cg.dirs_.push_back(dir);
  }
  return cg;
}

std::string Cgroup::Release() {
  std::string n = name();
  dirs_.clear();
  return n;
}

std::string Cgroup::name() const { return dirs_.empty() ? "" : dirs_[0].substr(dirs_[0].rfind('/') + 1); }

Status Cgroup::AddProcess(pid_t pid) const {
  for (const auto& dir : dirs_) ISB_TRY(WriteKernelFile(dir + "/cgroup.procs", std::to_string(pid)));
  return {};
}

Result<uint64_t> Cgroup::OomKills() const {
  if (dirs_.empty()) return Error::Msg("cgroup already removed");
  const std::string file =
      layout_.v2 ? dirs_[0] + "/memory.events" : layout_.memory + "/isb/" + name() + "/memory.oom_control";
  ISB_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
  return KeyedValue(text, "oom_kill");
}

Result<CgroupStats> Cgroup::ReadStats() const {
  CgroupStats s;
  ISB_ASSIGN_OR_RETURN(s.oom_kills, OomKills());
  if (layout_.v2) {
    const std::string& d = dirs_[0];
    s.peak_memory_bytes = ReadNumber(d + "/memory.peak");  // absent before Linux 5.19: reported as 0
    ISB_ASSIGN_OR_RETURN(std::string cpu, ReadFile(d + "/cpu.stat"));
    s.cpu_usec = KeyedValue(cpu, "usage_usec");
    s.memory_bytes = ReadNumber(d + "/memory.current");
    s.pids = ReadNumber(d + "/pids.current");
    return s;
  }
  std::string m = layout_.memory + "/isb/" + name();
  s.peak_memory_bytes = ReadNumber(m + "/memory.max_usage_in_bytes");
  s.cpu_usec = ReadNumber(layout_.cpuacct + "/isb/" + name() + "/cpuacct.usage") / 1000;
  s.memory_bytes = ReadNumber(m + "/memory.usage_in_bytes");
  s.pids = ReadNumber(layout_.pids + "/isb/" + name() + "/pids.current");
  return s;
}

void Cgroup::KillAll() const {
  if (dirs_.empty()) return;
  if (layout_.v2 && WriteKernelFile(dirs_[0] + "/cgroup.kill", "1").ok()) return;
  for (const auto& dir : dirs_) {
    auto procs = ReadFile(dir + "/cgroup.procs");
    if (!procs.ok()) continue;
    std::stringstream in(*procs);
    pid_t pid;
    while (in >> pid) ::kill(pid, SIGKILL);
  }
}

Status Cgroup::Remove() {
  if (dirs_.empty()) return {};
  Status result;
  for (int attempt = 0; attempt < 200 && !dirs_.empty(); ++attempt) {
    if (attempt > 0) {
      KillAll();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::erase_if(dirs_, [](const std::string& d) { return ::rmdir(d.c_str()) == 0 || errno == ENOENT; });
  }
  if (!dirs_.empty()) result = Error::Sys("remove cgroup " + dirs_[0]);
  dirs_.clear();
  return result;
}

}  // namespace isb::engine
