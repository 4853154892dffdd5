// The e2e fixture: the daemon as a subprocess, curl and the CLI as subprocesses, and the leak check.
#include "e2e/daemon_fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "cgroup_parents.h"
#include "must_work.h"

extern char** environ;

namespace isb::e2e {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kHostLeaseDir = "/run/isb/ids";

std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// This process's environment with `extra` applied: "K=V" sets K, a bare "K" removes it.
std::vector<std::string> Environment(const std::vector<std::string>& extra) {
  auto key = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    bool overridden = false;
    for (const auto& x : extra) overridden = overridden || key(kv) == key(x);
    if (!overridden) env.push_back(kv);
  }
  for (const auto& x : extra)
    if (x.find('=') != std::string::npos) env.push_back(x);
  return env;
}

// posix_spawn with the given stdio fds (-1: /dev/null), every signal at its default and none blocked. Returns the
// pid or -errno.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, int in_fd, int out_fd,
            int err_fd) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  int fds[3] = {in_fd, out_fd, err_fd};
  for (int i = 0; i < 3; ++i) {
    if (fds[i] >= 0)
      posix_spawn_file_actions_adddup2(&fa, fds[i], i);
    else
      posix_spawn_file_actions_addopen(&fa, i, "/dev/null", i == 0 ? O_RDONLY : O_WRONLY, 0);
  }
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  auto cargv = CStrings(argv);
  auto cenv = CStrings(env);
  std::string path = argv[0].find('/') == std::string::npos ? FindProgram(argv[0]) : argv[0];
  pid_t pid = -1;
  int rc = path.empty() ? ENOENT : posix_spawn(&pid, path.c_str(), &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -rc;
}

std::set<std::string> Entries(const std::string& dir, bool dirs_only, const std::string& prefix = "") {
  std::set<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (dirs_only && (!it->is_directory(ec) || it->is_symlink(ec))) continue;
    if (name.rfind(prefix, 0) == 0) out.insert(name);
  }
  return out;
}

size_t CountLines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// The per-sandbox cgroup parents of this host (cpu and cpuacct may be one co-mounted hierarchy: listed once).
std::vector<std::string> IsbCgroupParents() { return testing::IsbCgroupParents(); }

std::string Cmdline(pid_t pid) {
  std::string cmd = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : cmd)
    if (c == '\0') c = ' ';
  while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
  return cmd;
}

std::vector<pid_t> AllPids() {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end == '\0' && pid > 0) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  return out;
}

void ReapOrKill(pid_t pid, std::chrono::milliseconds grace, int* status_out) {
  auto until = Clock::now() + grace;
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) break;
    if (Clock::now() > until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      status = -1;
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  if (status_out) *status_out = status;
}

}  // namespace

// ---- process helpers ---------------------------------------------------------------------------------------------

std::string ProcResult::Describe() const {
  std::ostringstream o;
  o << "exit_status=" << exit_status << " term_signal=" << term_signal
    << (killed_at_deadline ? " (killed at the deadline)" : "") << " stdout=[" << out.substr(0, 3000) << "] stderr=["
    << err.substr(0, 3000) << "]";
  return RedactSecrets(o.str());
}

std::string FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string full = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(full.c_str(), X_OK) == 0) return full;
  }
  return "";
}

ProcResult RunProcess(const std::vector<std::string>& argv, const std::string& stdin_data,
                      std::chrono::milliseconds deadline, const std::vector<std::string>& extra_env) {
  ProcResult r;
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    r.err = std::string("pipe2: ") + std::strerror(errno);
    return r;
  }
  pid_t pid = Spawn(argv, Environment(extra_env), in[0], out[1], err[1]);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    for (int fd : {in[1], out[0], err[0]}) ::close(fd);
    r.err = "cannot start " + argv[0] + ": " + std::strerror(-pid);
    return r;
  }
  int wfd = in[1];
  ::fcntl(wfd, F_SETFL, O_NONBLOCK);
  size_t written = 0;
  if (stdin_data.empty()) {
    ::close(wfd);
    wfd = -1;
  }
  int rfds[2] = {out[0], err[0]};
  std::string* sinks[2] = {&r.out, &r.err};
  auto until = Clock::now() + deadline;
  while (rfds[0] >= 0 || rfds[1] >= 0) {
    pollfd p[3] = {{rfds[0], POLLIN, 0}, {rfds[1], POLLIN, 0}, {wfd, POLLOUT, 0}};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    int n = ::poll(p, 3, static_cast<int>(std::max<int64_t>(0, left)));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      if (r.killed_at_deadline) break;
      r.killed_at_deadline = true;
      ::kill(pid, SIGKILL);
      until = Clock::now() + 5s;
      continue;
    }
    if (wfd >= 0 && p[2].revents != 0) {
      ssize_t w = ::write(wfd, stdin_data.data() + written, stdin_data.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == stdin_data.size()) {
        ::close(wfd);
        wfd = -1;
      }
    }
    for (int i = 0; i < 2; ++i) {
      if (rfds[i] < 0 || p[i].revents == 0) continue;
      char buf[65536];
      ssize_t got = ::read(rfds[i], buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        ::close(rfds[i]);
        rfds[i] = -1;
        continue;
      }
      sinks[i]->append(buf, static_cast<size_t>(got));
    }
  }
  for (int fd : {rfds[0], rfds[1], wfd})
    if (fd >= 0) ::close(fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) r.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  return r;
}

std::vector<std::pair<pid_t, std::string>> ProcessesMatching(const std::string& needle) {
  std::vector<std::pair<pid_t, std::string>> out;
  const pid_t self = ::getpid();
  for (pid_t pid : AllPids()) {
    if (pid == self) continue;
    std::string cmd = Cmdline(pid);
    if (cmd.find(needle) != std::string::npos) out.emplace_back(pid, cmd);
  }
  return out;
}

pid_t SandboxInitPid(const std::string& id) {
  for (pid_t pid : AllPids()) {
    if (Cmdline(pid) != "isb-init") continue;
    if (ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/cgroup").find("/isb/" + id) != std::string::npos) return pid;
  }
  return 0;
}

bool ProcessAlive(pid_t pid) {
  // A zombie is not alive: it has let go of everything but its pid.
  std::string stat = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::string data;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
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

std::string Base64(const std::string& bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8) | uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(k[(v >> s) & 63]);
  }
  if (i + 1 == bytes.size()) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    out += {k[(v >> 18) & 63], k[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    uint32_t v = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8);
    out += {k[(v >> 18) & 63], k[(v >> 12) & 63], k[(v >> 6) & 63], '='};
  }
  return out;
}

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (::getrandom(raw.data(), bytes, 0) != static_cast<ssize_t>(bytes)) std::abort();
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

std::string CurlResult::Describe() const {
  return "curl " + (proc.exit_status == 0 ? std::string() : "failed: " + proc.Describe() + "; ") + http.Describe();
}

// ---- the fixture -------------------------------------------------------------------------------------------------

void E2eTest::SetUp() {
  ISB_REQUIRE_ROOT();
  ASSERT_EQ(::access(ISB_BINARY, X_OK), 0) << "no isb binary at " << ISB_BINARY;
  ASSERT_FALSE(FindProgram("curl").empty()) << "the e2e suite needs curl in PATH";
  ::signal(SIGPIPE, SIG_IGN);  // a daemon that hangs up on us is a test failure, not our death
  char tmpl[] = "/tmp/isb-e2e.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
  temp_dir_ = tmpl;
  // The sandbox's root is an unprivileged host uid: it must traverse to its layer under the state dir.
  ASSERT_EQ(::chmod(temp_dir_.c_str(), 0711), 0) << std::strerror(errno);
  state_dir_ = temp_dir_ + "/state";
  socket_path_ = state_dir_ + "/api/isb.sock";
  for (const auto& parent : IsbCgroupParents()) cgroups_before_[parent] = Entries(parent, true, "sb-");
  leases_before_ = Entries(kHostLeaseDir, false);
  mounts_before_ = CountLines(ReadFileOrEmpty("/proc/self/mountinfo"));
  ready_ = true;
  StartDaemon();
}

void E2eTest::TearDown() {
  if (!ready_) return;
  // A test that stopped or killed the daemon: a new one adopts what is left, so that it can be removed.
  if (!daemon_running()) StartDaemon(daemon_args_);
  if (daemon_running()) {
    RemoveAllSandboxes();
    EXPECT_EQ(StopDaemon(), 0) << "isb serve did not exit 0 on SIGTERM; its log:\n" << DaemonLog();
  }
  if (!daemon_running()) CheckAuditLog();
  CheckNothingLeaked();
}

void E2eTest::StartDaemon(const std::vector<std::string>& extra_args) {
  ASSERT_FALSE(daemon_running()) << "the daemon is running already";
  daemon_args_ = extra_args;
  log_path_ = temp_dir_ + "/daemon-" + std::to_string(++daemon_starts_) + ".log";
  int log = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(log, 0) << log_path_ << ": " << std::strerror(errno);
  // A table, veth prefix and subnet of the suite's own, apart from a daemon a developer may be running.
  std::vector<std::string> argv = {ISB_BINARY, "serve",          "--listen",   "127.0.0.1:0",      "--state-dir",
                                   state_dir_, "--egress-table", kEgressTable, "--sandbox-subnet", "198.19.0.0/16"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  pid_t pid = Spawn(argv, Environment({}), -1, log, log);
  ::close(log);
  ASSERT_GT(pid, 0) << "cannot start isb serve: " << std::strerror(-pid);
  daemon_pid_ = pid;

  static const std::regex kListening(
      R"(listening on http://127\.0\.0\.1:(\d+) \(MCP at /mcp, REST at /api/v1\) and unix:(\S+))");
  std::smatch m;
  auto until = Clock::now() + 20s;
  std::string text;
  for (;;) {
    text = DaemonLog();
    if (std::regex_search(text, m, kListening)) break;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      daemon_pid_ = 0;
      FAIL() << "isb serve exited during start-up (status " << status << "); its log:\n" << text;
    }
    if (Clock::now() > until) FAIL() << "isb serve did not say where it listens within 20 s; its log:\n" << text;
    std::this_thread::sleep_for(10ms);
  }
  port_ = static_cast<uint16_t>(std::stoi(m[1].str()));
  ASSERT_NE(port_, 0) << "isb serve printed port 0 instead of the bound port: " << text;
  ASSERT_EQ(m[2].str(), socket_path_) << text;

  HttpResponse health;
  for (auto h_until = Clock::now() + 10s; Clock::now() < h_until; std::this_thread::sleep_for(20ms)) {
    health = Http(tcp_endpoint(), "GET", "/healthz");
    if (health.status == 200) break;
  }
  ASSERT_EQ(health.status, 200) << health.Describe();
  ASSERT_EQ(health.j, json({{"ok", true}})) << health.Describe();

  // The suite's HTTP caller: user "e2e", owner of the default org, with an unscoped token minted by the host.
  if (token_.empty()) {
    CheckReadOnlyTools();
    MustTool("user_create", {{"name", "e2e"}});
    MustTool("member_add", {{"user", "e2e"}, {"role", "owner"}});
    json minted = MustTool("token_create", {{"name", "e2e"}, {"user", "e2e"}});
    ASSERT_TRUE(minted.is_object() && minted["token"].is_string()) << minted.dump();
    token_ = minted["token"].get<std::string>();
    ASSERT_EQ(token_.rfind("isb_tok_", 0), 0u) << "a minted API token starts with isb_tok_";
  }
}

void E2eTest::TrackStateDir() {
  for (const auto& name : Entries(state_dir_ + "/sandboxes", false)) Track(name);
}

int E2eTest::StopDaemon() {
  if (!daemon_running()) return -1;
  TrackStateDir();
  ::kill(daemon_pid_, SIGTERM);
  int status = 0;
  ReapOrKill(daemon_pid_, 10s, &status);
  daemon_pid_ = 0;
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void E2eTest::KillDaemon() {
  if (!daemon_running()) return;
  TrackStateDir();
  ::kill(daemon_pid_, SIGKILL);
  ReapOrKill(daemon_pid_, 10s, nullptr);
  daemon_pid_ = 0;
}

std::string E2eTest::DaemonLog() const { return ReadFileOrEmpty(log_path_); }

void E2eTest::Track(const std::string& id) {
  if (id.rfind("sb-", 0) != 0) return;
  std::lock_guard lock(mu_);
  ids_.insert(id);
}

void E2eTest::TrackFrom(const json& j) {
  if (j.is_object()) {
    if (auto it = j.find("id"); it != j.end() && it->is_string()) Track(it->get<std::string>());
    for (const auto& [k, v] : j.items()) TrackFrom(v);
  } else if (j.is_array()) {
    for (const auto& v : j) TrackFrom(v);
  }
}

HttpResponse E2eTest::Tool(const std::string& tool, const json& input, const std::vector<std::string>& headers,
                           std::chrono::milliseconds timeout) {
  return Request(unix_endpoint(), "POST", "/api/v1/tools/" + tool, input.dump(), headers, timeout);
}

HttpResponse E2eTest::Request(const Endpoint& ep, const std::string& method, const std::string& target,
                              const std::string& body, const std::vector<std::string>& headers,
                              std::chrono::milliseconds timeout) {
  uint64_t started = audit_.Tick();
  std::vector<std::string> h = headers;
  const std::string request_id = LabelCall(method, target, &h, started);
  HttpResponse r = Http(ep, method, target, body, h, timeout);
  TrackFrom(r.j);
  LogCall(!ep.unix_path.empty(), method, target, h, body, r, started, request_id);
  return r;
}

json E2eTest::MustTool(const std::string& tool, const json& input) {
  HttpResponse r = Tool(tool, input);
  EXPECT_EQ(r.status, 200) << tool << " " << input.dump() << ": " << r.Describe();
  if (r.status != 200 || !r.j.is_object() || !r.j.contains("result")) return nullptr;
  return r.j["result"];
}

std::string E2eTest::CreateSandbox(const json& spec) {
  json info = MustTool("sandbox_create", spec);
  if (!info.is_object() || !info.contains("id")) return "";
  EXPECT_EQ(info["state"], "running") << info.dump();
  return info["id"].get<std::string>();
}

json E2eTest::Exec(const std::string& sandbox, const std::vector<std::string>& argv, const json& extra) {
  json in = extra;
  in["sandbox"] = sandbox;
  in["argv"] = argv;
  return MustTool("sandbox_exec", in);
}

CurlResult E2eTest::Curl(std::vector<std::string> args, const std::string& method, const std::string& url,
                         const std::string& body, const std::vector<std::string>& test_headers) {
  uint64_t started = audit_.Tick();
  std::vector<std::string> headers = test_headers;
  const std::string target = url.substr(url.find('/', url.find("//") + 2));
  const std::string request_id = LabelCall(method, target, &headers, started);
  std::vector<std::string> argv = {"curl", "-sS", "--max-time", "60", "-D", "-"};
  argv.insert(argv.end(), args.begin(), args.end());
  if (method == "HEAD")
    argv.push_back("-I");
  else if (method != "GET" || !body.empty())
    argv.insert(argv.end(), {"-X", method});
  bool has_type = false;
  for (const auto& h : headers) has_type = has_type || h.rfind("Content-Type:", 0) == 0;
  if ((method == "POST" || !body.empty()) && !has_type) headers.push_back("Content-Type: application/json");
  for (const auto& h : headers) argv.insert(argv.end(), {"-H", h});
  if (method == "POST" || !body.empty()) {
    std::string file;
    {
      std::lock_guard lock(mu_);
      file = temp_dir_ + "/body-" + std::to_string(++body_files_);
    }
    FILE* f = std::fopen(file.c_str(), "wb");
    if (f != nullptr) {
      std::fwrite(body.data(), 1, body.size(), f);
      std::fclose(f);
    }
    argv.insert(argv.end(), {"--data-binary", "@" + file});
  }
  argv.push_back(url);
  CurlResult r;
  r.proc = RunProcess(argv, "", 90s);
  r.http = ParseHttpResponse(r.proc.out, /*decoded=*/true);
  TrackFrom(r.http.j);
  bool via_unix = std::find(args.begin(), args.end(), "--unix-socket") != args.end();
  LogCall(via_unix, method, target, headers, body, r.http, started, request_id);
  return r;
}

CurlResult E2eTest::CurlUnix(const std::string& method, const std::string& path, const std::string& body,
                             const std::vector<std::string>& headers, const std::vector<std::string>& curl_args) {
  std::vector<std::string> args = {"--unix-socket", socket_path_};
  args.insert(args.end(), curl_args.begin(), curl_args.end());
  return Curl(args, method, "http://localhost" + path, body, headers);
}

CurlResult E2eTest::CurlTcp(const std::string& method, const std::string& path, const std::string& body,
                            const std::vector<std::string>& headers, const std::string& bearer,
                            const std::vector<std::string>& curl_args) {
  std::vector<std::string> h = headers;
  if (!bearer.empty()) h.push_back("Authorization: Bearer " + (bearer == "<token>" ? token_ : bearer));
  return Curl(curl_args, method, base_url() + path, body, h);
}

ProcResult E2eTest::Isb(const std::vector<std::string>& args, const std::string& stdin_data) {
  // --socket follows the command's name: one word, or two for a command of a group (isb user revoke), after any
  // options given before it (isb --org acme invitation ls).
  static const std::set<std::string> kGroups = {"user",   "token", "audit",  "org",   "invitation",
                                                "secret", "image", "egress", "member"};
  size_t lead = 0;
  while (lead + 1 < args.size() && args[lead].starts_with("--")) lead += 2;
  size_t words =
      lead + std::min(args.size() - lead, lead < args.size() && kGroups.contains(args[lead]) ? size_t{2} : size_t{1});
  std::vector<std::string> argv = {ISB_BINARY};
  argv.insert(argv.end(), args.begin(), args.begin() + static_cast<std::ptrdiff_t>(words));
  argv.insert(argv.end(), {"--socket", socket_path_});
  argv.insert(argv.end(), args.begin() + static_cast<std::ptrdiff_t>(words), args.end());
  // Neither the environment nor a default socket may steer the CLI elsewhere.
  ProcResult r = RunProcess(argv, stdin_data, 60s, {"ISB_URL", "ISB_TOKEN", "ISB_SOCKET"});
  if (json j = json::parse(r.out, nullptr, false); !j.is_discarded()) TrackFrom(j);
  static const std::regex kId("sb-[0-9a-f]{16}");
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), kId), end; it != end; ++it) Track(it->str());
  return r;
}

void E2eTest::RemoveAllSandboxes() {
  // In every org, not only the default one a call on the socket acts in.
  HttpResponse orgs = Tool("org_list", json::object());
  ASSERT_EQ(orgs.status, 200) << orgs.Describe();
  for (const auto& org : orgs.j["result"]["orgs"]) {
    const std::vector<std::string> in_org = {"X-Isb-Org: " + org["name"].get<std::string>()};
    HttpResponse list = Tool("sandbox_list", json::object(), in_org);
    ASSERT_EQ(list.status, 200) << list.Describe();
    for (const auto& sb : list.j["result"]["sandboxes"]) {
      std::string id = sb["id"].get<std::string>();
      HttpResponse r = Tool("sandbox_remove", {{"sandbox", id}}, in_org);
      EXPECT_EQ(r.status, 200) << "removing " << id << ": " << r.Describe();
    }
    list = Tool("sandbox_list", json::object(), in_org);
    EXPECT_EQ(list.status, 200) << list.Describe();
    EXPECT_EQ(list.j["result"]["sandboxes"], json::array()) << list.Describe();
  }
}

bool E2eTest::ForeignIsbRunning() const {
  for (pid_t pid : AllPids()) {
    if (pid == ::getpid()) continue;
    std::string cmd = Cmdline(pid);
    if (cmd.empty() || cmd.find(state_dir_) != std::string::npos) continue;
    std::string arg0 = cmd.substr(0, cmd.find(' '));
    std::string base = arg0.substr(arg0.rfind('/') + 1);
    if (base == "isb" || base == "isb-init" || base.rfind("isb_", 0) == 0) return true;
  }
  return false;
}

void E2eTest::CheckNothingLeaked() {
  std::set<std::string> ids;
  {
    std::lock_guard lock(mu_);
    ids = ids_;
  }
  // 1. No process of ours: the daemon and its spawner carry the state dir on their command lines.
  auto ours = ProcessesMatching(state_dir_);
  for (auto until = Clock::now() + 3s; !ours.empty() && Clock::now() < until; ours = ProcessesMatching(state_dir_))
    std::this_thread::sleep_for(20ms);
  for (const auto& [pid, cmd] : ours) {
    ADD_FAILURE() << "process " << pid << " outlived the daemon: " << cmd;
    ::kill(pid, SIGKILL);
  }

  // 2. No process inside any sandbox this test saw.
  for (pid_t pid : AllPids()) {
    std::string cg = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/cgroup");
    for (const auto& id : ids) {
      if (cg.find("/isb/" + id) == std::string::npos || !ProcessAlive(pid)) continue;
      ADD_FAILURE() << "process " << pid << " (" << Cmdline(pid) << ") is still in removed sandbox " << id;
      ::kill(pid, SIGKILL);
    }
  }

  // 3. No new sandbox cgroup. Other isb processes may share this host (other suites, other daemons): a new
  //    directory that is not one of our ids is only held against us when nothing else of isb is running.
  auto appeared = [&] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& parent : IsbCgroupParents())
      for (const auto& name : Entries(parent, true, "sb-"))
        if (!cgroups_before_[parent].count(name)) out.emplace_back(parent, name);
    return out;
  };
  auto fresh = appeared();
  for (auto until = Clock::now() + 3s; !fresh.empty() && Clock::now() < until; fresh = appeared())
    std::this_thread::sleep_for(20ms);
  bool foreign = ForeignIsbRunning();
  for (const auto& [parent, name] : fresh) {
    std::string dir = parent + "/" + name;
    if (ids.count(name) || !foreign) {
      ADD_FAILURE() << "cgroup left behind: " << dir << " (procs: [" << ReadFileOrEmpty(dir + "/cgroup.procs") << "])";
      ::rmdir(dir.c_str());
    } else {
      std::printf("[ note     ] new cgroup %s is not one of this test's sandboxes (another isb is running)\n",
                  dir.c_str());
    }
  }

  // 4. Every uid-range lease went back to the host's pool.
  auto new_leases = [&] {
    std::vector<std::string> out;
    for (const auto& name : Entries(kHostLeaseDir, false))
      if (!leases_before_.count(name)) out.push_back(name);
    return out;
  };
  auto leased = new_leases();
  for (auto until = Clock::now() + 3s; !leased.empty() && Clock::now() < until; leased = new_leases())
    std::this_thread::sleep_for(20ms);
  if (!leased.empty() && ForeignIsbRunning()) {
    std::printf("[ note     ] new leases in %s while another isb runs: %s\n", kHostLeaseDir,
                ::testing::PrintToString(leased).c_str());
  } else {
    EXPECT_TRUE(leased.empty()) << "uid-range leases left in " << kHostLeaseDir << ": "
                                << ::testing::PrintToString(leased);
  }

  // 5. The host's mount table is as it was.
  EXPECT_EQ(CountLines(ReadFileOrEmpty("/proc/self/mountinfo")), mounts_before_)
      << "the host's mount table changed during the test";

  // 6. No veth and no nftables table of the suite's daemons: with their sandboxes gone, the daemon dropped both.
  for (const auto& name : Entries("/sys/class/net", false))
    if (name.rfind(kEgressTable, 0) == 0) ADD_FAILURE() << "network interface left behind: " << name;
  EXPECT_NE(std::system((std::string("nft list table inet ") + kEgressTable + " >/dev/null 2>&1").c_str()), 0)
      << "nftables table inet " << kEgressTable << " left behind";

  // 7. The temp dir (state, sandboxes' layers, logs) goes entirely.
  std::error_code ec;
  fs::remove_all(temp_dir_, ec);
  EXPECT_FALSE(ec) << "removing " << temp_dir_ << ": " << ec.message();
  EXPECT_FALSE(fs::exists(temp_dir_)) << temp_dir_ << " is still there";
}

}  // namespace isb::e2e
