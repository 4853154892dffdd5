// The boundary suite's fixture: `isb run` as a subprocess, and the leak check after every test.
#include "sandbox_fixture.h"

#include "cgroup_parents.h"
#include "base/random.h"
#include "must_work.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace isb::escape {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using isb::testing::MustWork;

std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

std::vector<std::string> Environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// posix_spawn with stdin on /dev/null and stdout/stderr on the given fds (-1: /dev/null), every signal at its
// default disposition and none blocked. Returns the pid, or -errno.
pid_t SpawnProcess(const std::string& path, const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   int out_fd, int err_fd) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (out_fd >= 0)
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  else
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  if (err_fd >= 0)
    posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
  else
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  auto cargv = CStrings(argv);
  auto cenv = CStrings(env);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, path.c_str(), &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -rc;
}

constexpr const char* kHostLeaseDir = "/run/isb/ids";

std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    out.insert(it->path().filename().string());
  return out;
}

std::set<std::string> Subdirectories(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec) && !it->is_symlink(ec)) out.insert(it->path().filename().string());
  return out;
}

size_t CountLines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Whether `isb run -- /bin/true` works here; why not, when it does not. Computed once per process.
struct Probe {
  bool ok = false;
  std::string why;
};

Probe RunProbe() {
  if (::geteuid() != 0) return {false, "the boundary suite needs root (isb creates cgroups and maps uid ranges)"};
  if (::access(ISB_BINARY, X_OK) != 0) return {false, std::string("no isb binary at ") + ISB_BINARY};
  if (::access(ESCAPE_HELPER, X_OK) != 0) return {false, std::string("no escape helper at ") + ESCAPE_HELPER};
  char tmpl[] = "/tmp/isb-escape-probe.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return {false, std::string("mkdtemp: ") + std::strerror(errno)};
  ::chmod(tmpl, 0711);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return {false, "pipe"};
  std::vector<std::string> argv = {ISB_BINARY, "run", "--runtime-dir", std::string(tmpl) + "/run", "--", "/bin/true"};
  pid_t pid = SpawnProcess(ISB_BINARY, argv, Environment({}), -1, p[1]);
  ::close(p[1]);
  std::string err;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) err.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  int status = 0;
  if (pid > 0) ::waitpid(pid, &status, 0);
  std::error_code ec;
  fs::remove_all(tmpl, ec);
  if (pid < 0) return {false, std::string("cannot start isb: ") + std::strerror(-pid)};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return {false, "`isb run -- /bin/true` cannot start a sandbox here (" +
                       (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                          : "signal " + std::to_string(WTERMSIG(status))) +
                       "): " + err};
  return {true, ""};
}

}  // namespace

// ---- IsbOutcome ---------------------------------------------------------------------------------------------------

int IsbOutcome::exit_code() const {
  if (!has_json() || !json.contains("exit_code") || !json["exit_code"].is_number_integer()) {
    ADD_FAILURE() << "no integer exit_code in the JSON result: " << Describe();
    return -1000;
  }
  return json["exit_code"].get<int>();
}

int IsbOutcome::signal() const {
  if (!has_json() || !json.contains("signal") || !json["signal"].is_number_integer()) {
    ADD_FAILURE() << "no integer signal in the JSON result: " << Describe();
    return -1000;
  }
  return json["signal"].get<int>();
}

bool IsbOutcome::flag(const char* name) const {
  if (!has_json() || !json.contains(name) || !json[name].is_boolean()) {
    ADD_FAILURE() << "no boolean " << name << " in the JSON result: " << Describe();
    return false;
  }
  return json[name].get<bool>();
}

double IsbOutcome::number(const char* name) const {
  if (!has_json() || !json.contains(name) || !json[name].is_number()) {
    ADD_FAILURE() << "no number " << name << " in the JSON result: " << Describe();
    return -1;
  }
  return json[name].get<double>();
}

std::string IsbOutcome::text(const char* name) const {
  if (!has_json() || !json.contains(name) || !json[name].is_string()) {
    ADD_FAILURE() << "no string " << name << " in the JSON result: " << Describe();
    return "";
  }
  return json[name].get<std::string>();
}

std::string IsbOutcome::Describe() const {
  std::ostringstream o;
  o << "isb exit_status=" << exit_status << " term_signal=" << term_signal
    << (killed_by_fixture ? " (killed by the fixture's deadline)" : "");
  if (has_json()) {
    nlohmann::json brief = json;
    for (const char* s : {"stdout", "stderr"}) {
      if (brief.contains(s) && brief[s].is_string() && brief[s].get<std::string>().size() > 2000)
        brief[s] = brief[s].get<std::string>().substr(0, 2000) + "...(" +
                   std::to_string(brief[s].get<std::string>().size()) + " bytes)";
    }
    o << " json=" << brief.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    o << " stdout=[" << out.substr(0, 2000) << "]";
  }
  o << " isb-stderr=[" << err.substr(0, 2000) << "]";
  return o.str();
}

// ---- IsbProcess ---------------------------------------------------------------------------------------------------

IsbProcess::~IsbProcess() {
  if (!done_) Stop(0ms);
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

IsbOutcome IsbProcess::Wait(std::chrono::milliseconds deadline) {
  if (done_) return outcome_;
  auto until = Clock::now() + deadline;
  IsbOutcome& r = outcome_;
  int fds[2] = {out_fd_, err_fd_};
  std::string* sinks[2] = {&r.out, &r.err};
  while (fds[0] >= 0 || fds[1] >= 0) {
    pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    int n = ::poll(p, 2, static_cast<int>(std::max<int64_t>(0, left)));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      if (r.killed_by_fixture) break;  // even SIGKILL did not close the pipes: give up on the rest
      // isb hangs: kill it (its sandbox dies with it, PR_SET_PDEATHSIG) and drain what is left.
      r.killed_by_fixture = true;
      ::kill(pid_, SIGKILL);
      until = Clock::now() + 5s;
      continue;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0 || p[i].revents == 0) continue;
      char buf[65536];
      ssize_t got = ::read(fds[i], buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        ::close(fds[i]);
        fds[i] = -1;
        continue;
      }
      sinks[i]->append(buf, static_cast<size_t>(got));
    }
  }
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
  out_fd_ = err_fd_ = -1;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  done_ = true;
  if (WIFEXITED(status)) r.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  // With --json, isb prints exactly one JSON object on one line.
  if (!r.out.empty() && r.out.back() == '\n' && CountLines(r.out) == 1) {
    r.json = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    if (r.json.is_discarded() || !r.json.is_object()) r.json = nullptr;
  }
  return r;
}

void IsbProcess::Stop(std::chrono::milliseconds grace) {
  if (done_) return;
  ::kill(pid_, SIGTERM);  // isb forwards it into the sandbox and then cleans up
  Wait(grace);            // past `grace`: SIGKILL
}

// ---- EscapeTest ---------------------------------------------------------------------------------------------------

void EscapeTest::SetUp() {
  static const Probe probe = RunProbe();
  if (!probe.ok) {
    if (MustWork()) FAIL() << probe.why << " (ISB_MUST_WORK=1: this is a failure, not a skip)";
    GTEST_SKIP() << probe.why << " (set ISB_MUST_WORK=1 to make this a failure)";
  }
  marker_ = "isb-escape-" + RandomHex(8);
  char tmpl[] = "/tmp/isb-escape.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
  temp_dir_ = tmpl;
  // The sandbox's root is an unprivileged host uid: it must be able to traverse to binds and images in here.
  ASSERT_EQ(::chmod(temp_dir_.c_str(), 0711), 0) << std::strerror(errno);
  runtime_dir_ = temp_dir_ + "/run";
  for (const auto& parent : IsbCgroupParents()) cgroups_before_[parent] = Subdirectories(parent);
  leases_before_ = Entries(kHostLeaseDir);
  mounts_before_ = CountLines(ReadHostFile("/proc/self/mountinfo"));
  ready_ = true;
}

void EscapeTest::TearDown() {
  if (!ready_) return;
  // What the test started and did not finish: stop it (a test that failed half-way), then check.
  for (auto& p : started_)
    if (!p->done()) p->Stop();
  started_.clear();
  for (pid_t pid : host_processes_) KillHostProcess(pid);
  host_processes_.clear();
  CheckNothingLeaked();
}

void EscapeTest::CheckNothingLeaked() {
  // 1. No process carries the marker: every sandbox process (command, forks, daemons) is gone with its isb.
  auto left = HostProcessesMatching(marker_);
  for (const auto& [pid, cmd] : left) {
    ADD_FAILURE() << "process " << pid << " outlived its sandbox: " << cmd;
    ::kill(pid, SIGKILL);  // clean up so later tests start clean
  }

  // 2. No cgroup directory that was not there before the test. isb removes its sandbox's cgroup before it returns,
  //    so one of ours never goes away by itself; a directory that vanishes within a few seconds belongs to someone
  //    else's sandbox running on this host at the same time (nothing of ours runs now). Nothing is removed here:
  //    a directory may not be ours, and the next test compares against its own "before".
  auto new_cgroups = [&] {
    std::vector<std::string> out;
    for (const auto& parent : IsbCgroupParents())
      for (const auto& name : Subdirectories(parent))
        if (!cgroups_before_[parent].count(name)) out.push_back(parent + "/" + name);
    return out;
  };
  auto appeared = new_cgroups();
  for (int i = 0; i < 300 && !appeared.empty(); ++i) {
    std::this_thread::sleep_for(10ms);
    appeared = new_cgroups();
  }
  for (const auto& dir : appeared)
    ADD_FAILURE() << "cgroup directory left behind: " << dir << " (cgroup.procs: ["
                  << ReadHostFile(dir + "/cgroup.procs") << "])";

  // 3a. Every uid-range lease was returned to the host's pool (leases are host-wide, whatever the runtime dir).
  auto new_leases = [&] {
    std::vector<std::string> out;
    for (const auto& name : Entries(kHostLeaseDir))
      if (!leases_before_.count(name)) out.push_back(name);
    return out;
  };
  auto leased = new_leases();
  for (int i = 0; i < 300 && !leased.empty(); ++i) {
    std::this_thread::sleep_for(10ms);
    leased = new_leases();
  }
  EXPECT_TRUE(leased.empty()) << "uid-range leases left in " << kHostLeaseDir << ": "
                              << ::testing::PrintToString(leased);

  // 3. Every uid-range lease was returned; nothing stayed in the staging dir (its mounts live in the sandbox's own
  //    mount namespace, so the host sees it empty).
  std::error_code ec;
  for (const char* sub : {"/ids", "/staging"}) {
    std::string dir = runtime_dir_ + sub;
    if (!fs::exists(dir, ec)) continue;
    std::vector<std::string> entries;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      entries.push_back(it->path().filename().string());
    EXPECT_TRUE(entries.empty()) << dir << " is not empty: " << ::testing::PrintToString(entries);
  }

  // 4. The host's mount table did not grow or shrink.
  EXPECT_EQ(CountLines(ReadHostFile("/proc/self/mountinfo")), mounts_before_)
      << "the host's mount table changed during the test";

  // 5. The per-test temp dir goes, entirely.
  fs::remove_all(temp_dir_, ec);
  EXPECT_FALSE(ec) << "removing " << temp_dir_ << ": " << ec.message();
  EXPECT_FALSE(fs::exists(temp_dir_)) << temp_dir_ << " is still there";
}

std::vector<std::string> EscapeTest::Helper(const std::vector<std::string>& args) const {
  std::vector<std::string> cmd = {kHelperPath, "--tag=" + marker_};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return cmd;
}

std::vector<std::string> EscapeTest::RunArgv(const std::vector<std::string>& options,
                                             const std::vector<std::string>& cmd) const {
  std::vector<std::string> argv = {ISB_BINARY, "run"};
  argv.insert(argv.end(), options.begin(), options.end());
  // --json and --runtime-dir come LAST, right before "--": when a repeatable option (--bind, --env) is the last
  // one before "--", isb's CLI takes that "--" as the end of the option's values and then parses the command's own
  // arguments as isb options (see EscapeTest.CommandArgumentsAreNotIsbOptions).
  argv.insert(argv.end(), {"--json", "--runtime-dir", runtime_dir_, "--"});
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return argv;
}

IsbOutcome EscapeTest::Run(const std::vector<std::string>& options, const std::vector<std::string>& cmd,
                           std::chrono::milliseconds deadline) {
  return Exec(RunArgv(options, cmd), deadline);
}

IsbProcess* EscapeTest::Start(const std::vector<std::string>& options, const std::vector<std::string>& cmd) {
  return Spawn(RunArgv(options, cmd));
}

IsbOutcome EscapeTest::RunIsbVerbatim(const std::vector<std::string>& args, std::chrono::milliseconds deadline) {
  std::vector<std::string> argv = {ISB_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return Exec(argv, deadline);
}

IsbOutcome EscapeTest::RunHelper(const std::vector<std::string>& options, const std::vector<std::string>& args,
                                 std::chrono::milliseconds deadline) {
  std::vector<std::string> opts = options;
  auto bind = HelperBind();
  opts.insert(opts.end(), bind.begin(), bind.end());
  return Run(opts, Helper(args), deadline);
}

std::string EscapeTest::Attack(const std::vector<std::string>& args, const std::vector<std::string>& options) {
  IsbOutcome r = RunHelper(options, args);
  EXPECT_EQ(r.exit_status, 0) << ::testing::PrintToString(args) << ": " << r.Describe();
  EXPECT_EQ(r.exit_code(), 0) << ::testing::PrintToString(args) << ": " << r.Describe();
  return r.has_json() ? r.text("stdout") : "";
}

IsbOutcome EscapeTest::Exec(const std::vector<std::string>& argv, std::chrono::milliseconds deadline) {
  IsbProcess* p = Spawn(argv);
  if (p == nullptr) return {};
  return p->Wait(deadline);
}

IsbProcess* EscapeTest::Spawn(const std::vector<std::string>& argv) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2: " << std::strerror(errno);
    return nullptr;
  }
  pid_t pid = SpawnProcess(argv[0], argv, Environment(extra_env_), out[1], err[1]);
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ADD_FAILURE() << "posix_spawn " << argv[0] << ": " << std::strerror(-pid);
    ::close(out[0]);
    ::close(err[0]);
    return nullptr;
  }
  started_.push_back(std::make_unique<IsbProcess>(pid, out[0], err[0]));
  return started_.back().get();
}

pid_t EscapeTest::StartHostProcess(const std::string& path, const std::vector<std::string>& argv) {
  pid_t pid = SpawnProcess(path, argv, Environment({}), -1, -1);
  if (pid < 0) {
    ADD_FAILURE() << "posix_spawn " << path << ": " << std::strerror(-pid);
    return -1;
  }
  host_processes_.push_back(pid);
  return pid;
}

void EscapeTest::KillHostProcess(pid_t pid) {
  if (pid <= 0) return;
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  std::erase(host_processes_, pid);
}

// ---- host-side utilities ------------------------------------------------------------------------------------------

std::vector<std::pair<pid_t, std::string>> HostProcessesMatching(const std::string& needle) {
  std::vector<std::pair<pid_t, std::string>> out;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return out;
  const pid_t self = ::getpid();
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == self) continue;
    std::string cmd = ReadHostFile(std::string("/proc/") + e->d_name + "/cmdline");
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(needle) != std::string::npos) out.emplace_back(static_cast<pid_t>(pid), cmd);
  }
  ::closedir(d);
  return out;
}

std::string ReadHostFile(const std::string& path, bool* ok) {
  std::string data;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (ok) *ok = fd >= 0;
  if (fd < 0) return data;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

std::string HostHostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

std::string RandomHex(size_t bytes) {
  auto hex = isb::RandomHex(bytes);
  if (!hex.ok()) std::abort();  // a test without randomness cannot make unique markers
  return *hex;
}

std::string ToHex(const std::string& s) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::vector<std::string> IsbCgroupParents() { return testing::IsbCgroupParents(); }

}  // namespace isb::escape
