// Terminal execs end to end: sandbox_exec with tty over REST (SSE) and MCP, the session tools, and `isb exec -it`
// driven from a real pseudo-terminal.
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <condition_variable>
#include <regex>
#include <thread>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kNoSession = "' (a session ends with its command and serves only the caller that started it)";

std::string NoSessionMessage(const std::string& session, const std::string& sandbox) {
  return "no running terminal session '" + session + "' in sandbox '" + sandbox + kNoSession;
}

// SSE events (event, data) in order, from a text/event-stream body.
std::vector<std::pair<std::string, json>> Events(const std::string& body) {
  std::vector<std::pair<std::string, json>> out;
  static const std::regex kEvent("event: ([a-z]+)\ndata: ([^\n]*)\n\n");
  for (std::sregex_iterator it(body.begin(), body.end(), kEvent), end; it != end; ++it)
    out.emplace_back((*it)[1].str(), json::parse((*it)[2].str(), nullptr, false));
  return out;
}

// A streaming call read on a thread of its own, so that the test can act while it runs.
class StreamingCall {
 public:
  StreamingCall(const Endpoint& ep, const std::string& request) : conn_(ep) {
    if (!conn_.ok() || !conn_.Send(request)) return;
    reader_ = std::thread([this] {
      std::string all = conn_.ReadAll(60s, [this](std::string_view piece) {
        std::lock_guard lock(mu_);
        raw_.append(piece);
        cv_.notify_all();
      });
      std::lock_guard lock(mu_);
      done_ = true;
      cv_.notify_all();
    });
  }
  ~StreamingCall() {
    if (reader_.joinable()) reader_.join();
  }
  // Waits until the raw response matches `re` (or the call ends, or 20 s pass); returns the first match group.
  std::string WaitFor(const std::regex& re) {
    std::unique_lock lock(mu_);
    std::string found;
    cv_.wait_for(lock, 20s, [&] {
      std::smatch m;
      if (std::regex_search(raw_, m, re)) found = m.size() > 1 ? m[1].str() : m[0].str();
      return !found.empty() || done_;
    });
    return found;
  }
  // Hangs up, as a caller that goes away does.
  void Close() {
    conn_.Shutdown();
    if (reader_.joinable()) reader_.join();
  }
  // The whole response, once the call has ended.
  HttpResponse Finish() {
    if (reader_.joinable()) reader_.join();
    return ParseHttpResponse(raw_);
  }

 private:
  RawConnection conn_;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string raw_;
  bool done_ = false;
};

class TerminalTest : public E2eTest {
 protected:
  CurlResult Input(const json& in) { return CurlTcp("POST", "/api/v1/tools/sandbox_exec_input", in.dump()); }
  CurlResult Resize(const json& in) { return CurlTcp("POST", "/api/v1/tools/sandbox_exec_resize", in.dump()); }
};

// Everything written to stdout events, in order.
std::string StdoutOf(const std::vector<std::pair<std::string, json>>& events) {
  std::string out;
  for (const auto& [name, data] : events)
    if (name == "stdout") out += data.value("data", "");
  return out;
}

TEST_F(TerminalTest, ShellOnATerminalOverRestSse) {
  const std::string id = CreateSandbox(), other = CreateSandbox();
  ASSERT_FALSE(id.empty());
  ASSERT_FALSE(other.empty());

  // Without streaming there is no one to hand the session to.
  CurlResult plain =
      CurlTcp("POST", "/api/v1/tools/sandbox_exec", json{{"sandbox", id}, {"argv", {"sh"}}, {"tty", true}}.dump());
  EXPECT_EQ(plain.http.status, 400) << plain.Describe();
  EXPECT_EQ(plain.http.j, json({{"error", "invalid_argument"},
                                {"message",
                                 "tty: needs a streaming call (REST ?stream=1 or Accept: "
                                 "text/event-stream; MCP with a progressToken), which announces the "
                                 "session to send input to"}}));

  json in = {{"sandbox", id}, {"argv", {"sh"}}, {"tty", true}, {"rows", 24}, {"cols", 80}};
  StreamingCall call(tcp_endpoint(), BuildRequest("POST", "/api/v1/tools/sandbox_exec?stream=1", in.dump(),
                                                  {"Authorization: Bearer " + token()}));
  const std::string session = call.WaitFor(std::regex("\"session\":\"(ts-[0-9a-f]{32})\""));
  ASSERT_FALSE(session.empty()) << "no session event";
  ASSERT_EQ(call.WaitFor(std::regex("# ")), "# ") << "no prompt";

  // The size it started with, then the size after a resize; the terminal is a pty of the sandbox's own devpts.
  CurlResult typed = Input({{"sandbox", id}, {"session", session}, {"data", "stty size\n"}});
  ASSERT_EQ(typed.http.status, 200) << typed.Describe();
  EXPECT_EQ(typed.http.j["result"], json({{"session", session}, {"written", 10}, {"eof", false}}));
  EXPECT_EQ(call.WaitFor(std::regex("24 80")), "24 80");
  CurlResult resized = Resize({{"sandbox", id}, {"session", session}, {"rows", 33}, {"cols", 121}});
  ASSERT_EQ(resized.http.status, 200) << resized.Describe();
  EXPECT_EQ(resized.http.j["result"], json({{"session", session}, {"rows", 33}, {"cols", 121}}));
  ASSERT_EQ(Input({{"sandbox", id},
                   {"session", session},
                   {"data_base64", Base64("stty size; tty; test -t 0 && echo t0-$((1+1))\n")}})
                .http.status,
            200);
  EXPECT_EQ(call.WaitFor(std::regex("t0-2")), "t0-2");

  // Refusals, all with the same answer: another sandbox's session, a made-up one, another caller (the unix
  // socket's superadmin is not the token that started it).
  for (const auto& [sandbox, sess] : {std::pair{other, session}, std::pair{id, std::string("ts-") + RandomHex(16)}}) {
    CurlResult r = Input({{"sandbox", sandbox}, {"session", sess}, {"data", "x"}});
    EXPECT_EQ(r.http.status, 404) << r.Describe();
    EXPECT_EQ(r.http.j, json({{"error", "not_found"}, {"message", NoSessionMessage(sess, sandbox)}})) << r.Describe();
    r = Resize({{"sandbox", sandbox}, {"session", sess}, {"rows", 1}, {"cols", 1}});
    EXPECT_EQ(r.http.j, json({{"error", "not_found"}, {"message", NoSessionMessage(sess, sandbox)}})) << r.Describe();
  }
  CurlResult foreign = CurlUnix("POST", "/api/v1/tools/sandbox_exec_input",
                                json{{"sandbox", id}, {"session", session}, {"data", "x"}}.dump());
  EXPECT_EQ(foreign.http.j, json({{"error", "not_found"}, {"message", NoSessionMessage(session, id)}}))
      << foreign.Describe();
  // Input is bounded per call.
  CurlResult big = Input({{"sandbox", id}, {"session", session}, {"data_base64", Base64(std::string(65537, 'a'))}});
  EXPECT_EQ(big.http.status, 400) << big.Describe();
  EXPECT_EQ(big.http.j,
            json({{"error", "invalid_argument"}, {"message", "data_base64: at most 65536 bytes, got 65537"}}));

  ASSERT_EQ(Input({{"sandbox", id}, {"session", session}, {"data", "exit 7\n"}}).http.status, 200);
  HttpResponse h = call.Finish();
  ExpectAudit("the terminal exec over TCP", {ByToken("rest", "sandbox_exec")});
  ASSERT_EQ(h.status, 200) << h.Describe();
  auto events = Events(h.body);
  ASSERT_GE(events.size(), 3u) << h.body;
  EXPECT_EQ(events.front(), std::make_pair(std::string("session"), json({{"session", session}}))) << h.body;
  EXPECT_EQ(events.back().first, "result") << h.body;
  const json result = events.back().second["result"];
  EXPECT_EQ(result["exit_code"], 7) << result.dump();
  EXPECT_EQ(result["session"], session);
  EXPECT_EQ(result["stderr"], "") << "a terminal merges stderr into stdout";
  const std::string out = StdoutOf(events);
  EXPECT_EQ(result["stdout"], out);
  for (const auto& e : events) EXPECT_NE(e.first, "stderr") << h.body;
  // Exact lines, CR LF as a terminal writes them: the sizes before and after the resize, the pty, stdin a tty.
  EXPECT_NE(out.find("\r\n24 80\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\n33 121\r\n/dev/pts/0\r\nt0-2\r\n"), std::string::npos) << out;

  // The session ended with its command.
  CurlResult late = Input({{"sandbox", id}, {"session", session}, {"data", "x"}});
  EXPECT_EQ(late.http.j, json({{"error", "not_found"}, {"message", NoSessionMessage(session, id)}}));
}

// A program that waits for SIGWINCH sees it when the terminal is resized; the exit code comes back; closing the
// stream ends the command.
TEST_F(TerminalTest, ResizeDeliversSigwinch) {
  const std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  json in = {{"sandbox", id},
             {"tty", true},
             {"rows", 5},
             {"cols", 6},
             {"argv", {"sh", "-c", "trap 'stty size; exit 9' WINCH; echo armed; while :; do sleep 0.05; done"}}};
  StreamingCall call(unix_endpoint(), BuildRequest("POST", "/api/v1/tools/sandbox_exec?stream=1", in.dump()));
  const std::string session = call.WaitFor(std::regex("\"session\":\"(ts-[0-9a-f]{32})\""));
  ASSERT_FALSE(session.empty());
  ASSERT_EQ(call.WaitFor(std::regex("armed")), "armed");
  CurlResult r = CurlUnix("POST", "/api/v1/tools/sandbox_exec_resize",
                          json{{"sandbox", id}, {"session", session}, {"rows", 7}, {"cols", 8}}.dump());
  ASSERT_EQ(r.http.status, 200) << r.Describe();
  HttpResponse h = call.Finish();
  ExpectAudit("the terminal exec on the socket", {Unix("sandbox_exec")});
  auto events = Events(h.body);
  ASSERT_FALSE(events.empty()) << h.body;
  EXPECT_EQ(events.back().second["result"]["exit_code"], 9) << h.body;
  EXPECT_EQ(StdoutOf(events), "armed\r\n7 8\r\n");
}

// The terminal belongs to the sandbox's user, as a login's does (devpts gives it mode 0620).
TEST_F(TerminalTest, TheTerminalIsTheSandboxUsers) {
  const std::string id = CreateSandbox({{"user", "1000:1000"}});
  ASSERT_FALSE(id.empty());
  json in = {{"sandbox", id}, {"tty", true}, {"argv", {"sh", "-c", "stat -c %u:%a \"$(tty)\"; id -u"}}};
  CurlResult r = CurlUnix("POST", "/api/v1/tools/sandbox_exec?stream=1", in.dump());
  auto events = Events(r.http.body);
  ASSERT_FALSE(events.empty()) << r.Describe();
  EXPECT_EQ(events.back().second["result"]["exit_code"], 0) << r.http.body;
  EXPECT_EQ(events.back().second["result"]["stdout"], "1000:620\r\n1000\r\n") << r.http.body;
}

// A sandbox has at most 8 live terminal sessions; a caller that goes away ends its session and frees its slot.
TEST_F(TerminalTest, LiveSessionsPerSandboxAreBounded) {
  const std::string id = CreateSandbox({{"pids", 64}});
  ASSERT_FALSE(id.empty());
  json in = {{"sandbox", id}, {"tty", true}, {"argv", {"sh", "-c", "echo up; exec sleep 60"}}};
  const std::string request = BuildRequest("POST", "/api/v1/tools/sandbox_exec?stream=1", in.dump());
  {
    std::vector<std::unique_ptr<StreamingCall>> calls;
    for (int i = 0; i < 8; ++i) {
      calls.push_back(std::make_unique<StreamingCall>(unix_endpoint(), request));
      ASSERT_EQ(calls.back()->WaitFor(std::regex("up")), "up") << "session " << i;
    }
    CurlResult ninth = CurlUnix("POST", "/api/v1/tools/sandbox_exec?stream=1", in.dump());
    auto events = Events(ninth.http.body);
    ASSERT_EQ(events.size(), 1u) << ninth.Describe();
    EXPECT_EQ(events[0],
              std::make_pair(std::string("error"), json({{"error", "conflict"},
                                                         {"message", "sandbox '" + id +
                                                                         "' has 8 live terminal sessions, the "
                                                                         "most it may have; end one first"}})));
    for (auto& c : calls) c->Close();
    // Each of the eight ends when the daemon notices its caller gone, with the outcome the daemon gives it.
    ExpectAudit("the eight terminal execs whose callers hung up",
                std::vector<ExpectedRow>(8, Unix("sandbox_exec", "")));
  }
  // Hung up: within a couple of seconds the daemon notices, init kills the commands, the slots are free again.
  std::string last;
  for (int i = 0; i < 50; ++i) {
    CurlResult again = CurlUnix("POST", "/api/v1/tools/sandbox_exec?stream=1",
                                json{{"sandbox", id}, {"tty", true}, {"argv", {"true"}}}.dump());
    last = again.http.body;
    if (last.find("event: result") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(last.find("\"exit_code\":0"), std::string::npos) << last;
  // The commands were killed; the last of them may take a moment to be gone from /proc.
  std::string procs;
  for (int i = 0; i < 40; ++i) {
    procs = Exec(id, {"sh", "-c", "for p in /proc/[0-9]*; do cat $p/comm; done"}).value("stdout", "");
    if (procs.find("sleep") == std::string::npos) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(procs.find("sleep"), std::string::npos) << procs;
}

// `isb exec -it` under a real pseudo-terminal: raw mode while it runs, keys typed, the window size followed,
// the command's exit code, and the terminal as it was afterwards.
TEST_F(TerminalTest, CliExecItUnderARealTerminal) {
  const std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  winsize ws{};
  ws.ws_row = 20;
  ws.ws_col = 70;
  int master = -1;
  const std::string sock = socket_path();
  pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
  ASSERT_GE(pid, 0) << std::strerror(errno);
  if (pid == 0) {
    for (const char* v : {"ISB_URL", "ISB_TOKEN", "ISB_SOCKET"}) ::unsetenv(v);
    ::execl(ISB_BINARY, ISB_BINARY, "exec", "--socket", sock.c_str(), "-it", id.c_str(), "--", "sh", nullptr);
    ::_exit(127);
  }
  std::string seen;
  auto wait_for = [&](const std::string& needle, std::chrono::milliseconds timeout = 20s) {
    const auto deadline = Clock::now() + timeout;
    while (seen.find(needle) == std::string::npos && Clock::now() < deadline) {
      pollfd p{master, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) continue;
      char buf[4096];
      ssize_t n = ::read(master, buf, sizeof buf);
      if (n <= 0) break;  // EIO: the terminal's last user is gone
      seen.append(buf, static_cast<size_t>(n));
    }
    return seen.find(needle) != std::string::npos;
  };
  auto type = [&](const std::string& keys) {
    ASSERT_EQ(::write(master, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  };

  EXPECT_TRUE(wait_for("# ")) << "no prompt: " << seen;
  termios during{};
  ASSERT_EQ(::tcgetattr(master, &during), 0);
  EXPECT_EQ(during.c_lflag & (ICANON | ECHO), 0u) << "the local terminal is not in raw mode";
  type("stty size; echo cli-$((6*7))\r");  // Enter sends CR, as a keyboard does
  EXPECT_TRUE(wait_for("cli-42\r\n")) << seen;
  EXPECT_NE(seen.find("\r\n20 70\r\n"), std::string::npos) << seen;
  ws.ws_row = 25;
  ws.ws_col = 90;
  ASSERT_EQ(::ioctl(master, TIOCSWINSZ, &ws), 0);  // isb gets SIGWINCH and passes the size on
  bool resized = false;
  for (int i = 0; i < 50 && !resized; ++i) {
    type("stty size\r");
    resized = wait_for("\r\n25 90\r\n", 1s);
  }
  EXPECT_TRUE(resized) << seen;
  type("exit 3\r");
  int status = 0;
  const auto deadline = Clock::now() + 20s;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
    wait_for("\x01never", 100ms);  // keep draining the terminal
  }
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  ASSERT_EQ(done, pid) << "isb exec -it did not end: " << seen;
  // The exec, and as many inputs (keys as they come) and resizes as the CLI needed.
  ExpectedRow input = Unix("sandbox_exec_input"), resize = Unix("sandbox_exec_resize");
  input.rows = resize.rows = ExpectedRow::Rows::kAny;
  ExpectAudit("isb exec -it", {Unix("sandbox_exec"), input, resize});
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << "status " << status << ": " << seen;
  termios after{};
  ASSERT_EQ(::tcgetattr(master, &after), 0);
  EXPECT_EQ(after.c_lflag & (ICANON | ECHO), static_cast<tcflag_t>(ICANON | ECHO)) << "the terminal was not restored";
  ::close(master);
}

// `isb exec -it ... | head -1`: the output's reader goes away and the next write raises SIGPIPE. isb dies of it as
// any filter would, but hands the terminal back first (raw mode would otherwise outlive it).
TEST_F(TerminalTest, CliExecItRestoresTheTerminalWhenItsOutputIsGone) {
  const std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  int master = -1;
  const std::string sock = socket_path();
  pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0) << std::strerror(errno);
  if (pid == 0) {
    for (const char* v : {"ISB_URL", "ISB_TOKEN", "ISB_SOCKET"}) ::unsetenv(v);
    int out[2];
    if (::pipe(out) != 0 || ::dup2(out[1], STDOUT_FILENO) < 0) ::_exit(126);
    ::close(out[0]);  // nobody reads the output
    ::close(out[1]);
    ::signal(SIGPIPE, SIG_DFL);
    ::execl(ISB_BINARY, ISB_BINARY, "exec", "--socket", sock.c_str(), "-it", id.c_str(), "--", "sh", "-c",
            "while :; do echo y; done", nullptr);
    ::_exit(127);
  }
  int status = 0;
  const auto deadline = Clock::now() + 20s;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
    pollfd p{master, POLLIN, 0};
    char buf[4096];
    if (::poll(&p, 1, 100) > 0 && ::read(master, buf, sizeof buf) <= 0) ::usleep(10000);
  }
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  ASSERT_EQ(done, pid) << "isb exec -it went on writing to a pipe nobody reads";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE) << "status " << status;
  termios after{};
  ASSERT_EQ(::tcgetattr(master, &after), 0);
  EXPECT_EQ(after.c_lflag & (ICANON | ECHO), static_cast<tcflag_t>(ICANON | ECHO)) << "the terminal was left raw";
  ::close(master);
  ExpectedRow input = Unix("sandbox_exec_input"), resize = Unix("sandbox_exec_resize");
  input.rows = resize.rows = ExpectedRow::Rows::kAny;
  // The exec ends as the caller went away: unavailable.
  ExpectAudit("isb exec -it into a closed pipe", {Unix("sandbox_exec", "unavailable"), input, resize});
}

// Input that ends in the middle of a line (`printf abc | isb exec -it SB -- cat`): at a keyboard the first Ctrl-D
// only sends "abc" and a second one ends the input; isb types both, and the command ends instead of waiting.
TEST_F(TerminalTest, CliExecItEndsInputThatStopsMidLine) {
  const std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  ProcResult r = Isb({"exec", "-it", "--timeout", "20s", id, "--", "cat"}, "abc");
  EXPECT_EQ(r.exit_status, 0) << r.Describe();
  EXPECT_NE(r.out.find("abc"), std::string::npos) << r.Describe();
  ExpectedRow input = Unix("sandbox_exec_input"), resize = Unix("sandbox_exec_resize");
  input.rows = resize.rows = ExpectedRow::Rows::kAny;
  ExpectAudit("isb exec -it with input that stops mid-line", {Unix("sandbox_exec"), input, resize});
}

}  // namespace
}  // namespace isb::e2e
