// The CLI's end of a terminal session.
#include "cli/terminal_exec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <thread>

#include "base/fd.h"
#include "base/mutex.h"
#include "engine/exec_terminal.h"

namespace isb::cli {
namespace {

// Signal handlers see only these.
termios g_saved_termios;
volatile sig_atomic_t g_raw = 0;
volatile sig_atomic_t g_winch_fd = -1;
// SIGPIPE: the output's reader went away (`isb exec -it ... | head -1`); SIGABRT: a failure isb did not expect.
constexpr int kFatalSignals[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGABRT};

void RestoreTerminal() {
  if (g_raw) {
    ::tcsetattr(STDIN_FILENO, TCSADRAIN, &g_saved_termios);
    g_raw = 0;
  }
}

// The terminal is the user's again before the signal does what it would have done.
void OnFatalSignal(int sig) {
  RestoreTerminal();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void OnWinch(int) {
  int saved = errno;
  char c = 'w';
  if (g_winch_fd >= 0) (void)::write(g_winch_fd, &c, 1);
  errno = saved;
}

// Raw mode and the signal handlers for the lifetime of one terminal exec.
class TerminalMode {
 public:
  TerminalMode(bool raw, int winch_fd) {
    g_winch_fd = winch_fd;
    Install(SIGWINCH, OnWinch, &old_winch_);
    if (!raw || ::tcgetattr(STDIN_FILENO, &g_saved_termios) != 0) return;
    for (size_t i = 0; i < std::size(kFatalSignals); ++i) Install(kFatalSignals[i], OnFatalSignal, &old_fatal_[i]);
    termios t = g_saved_termios;
    ::cfmakeraw(&t);
    g_raw = 1;
    if (::tcsetattr(STDIN_FILENO, TCSADRAIN, &t) != 0) g_raw = 0;
    installed_fatal_ = true;
  }
  ~TerminalMode() {
    RestoreTerminal();
    if (installed_fatal_)
      for (size_t i = 0; i < std::size(kFatalSignals); ++i) ::sigaction(kFatalSignals[i], &old_fatal_[i], nullptr);
    ::sigaction(SIGWINCH, &old_winch_, nullptr);
    g_winch_fd = -1;
  }
  TerminalMode(const TerminalMode&) = delete;
  TerminalMode& operator=(const TerminalMode&) = delete;

 private:
  static void Install(int sig, void (*handler)(int), struct sigaction* old) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(sig, &sa, old);
  }
  struct sigaction old_winch_ {};
  struct sigaction old_fatal_[std::size(kFatalSignals)]{};
  bool installed_fatal_ = false;
};

// This terminal's size, from stdout or stdin; 24x80 when neither is a terminal.
std::pair<int, int> WindowSize() {
  for (int fd : {STDOUT_FILENO, STDIN_FILENO}) {
    winsize ws{};
    if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) return {ws.ws_row, ws.ws_col};
  }
  return {24, 80};
}

// Sends keystrokes and window sizes to the session from a thread of its own, once the session is known.
class Forwarder {
 public:
  Forwarder(const ToolClient& client, std::string sandbox, bool forward_input, int winch_fd, int wake_fd)
      : client_(client), sandbox_(std::move(sandbox)), input_(forward_input), winch_fd_(winch_fd), wake_fd_(wake_fd) {}

  void Run() {
    std::string session;
    for (;;) {
      {
        MutexLock lock(mu_);
        if (stop_) return;
        session = session_;
      }
      bool reading = input_ && !session.empty();
      pollfd fds[3] = {{wake_fd_, POLLIN, 0}, {winch_fd_, POLLIN, 0}, {reading ? STDIN_FILENO : -1, POLLIN, 0}};
      if (::poll(fds, 3, -1) < 0 && errno != EINTR) return;
      if (fds[0].revents) Drain(wake_fd_);
      if (fds[1].revents) {
        Drain(winch_fd_);
        if (!session.empty()) {
          auto [rows, cols] = WindowSize();
          (void)client_.Call("sandbox_exec_resize",
                             {{"sandbox", sandbox_}, {"session", session}, {"rows", rows}, {"cols", cols}});
        }
      }
      if (fds[2].revents) {
        char buf[4096];
        ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        json in = {{"sandbox", sandbox_}, {"session", session}};
        if (n > 0)
          in["data_base64"] = Base64Encode(std::string_view(buf, static_cast<size_t>(n)));
        else
          in["eof"] = true;
        // The end of input is sent too: the command may be waiting for it.
        if (!SendInput(in) || n <= 0) input_ = false;
      }
    }
  }

  void SetSession(const std::string& session) {
    MutexLock lock(mu_);
    session_ = session;
  }
  void Stop() {
    MutexLock lock(mu_);
    stop_ = true;
  }

 private:
  // Sends one read of input (or its end); whether input goes on. Input after the command has ended (its session
  // gone, its terminal hung up) has nowhere to go, and the result says how it ended. A refusal for too many calls
  // at once took nothing: the same input is sent again a second later, up to kInputTries times. (Other failures
  // may have come after the keys were typed: sending them again could type them twice.) A command too slow to read took
  // part of it, which is said, and input goes on. Otherwise input stops, which is said, and the terminal is given back:
  // Ctrl-C then ends isb and with it the command.
  bool SendInput(const json& in) {
    for (int tries = 1;; ++tries) {
      Result<json> sent = client_.Call("sandbox_exec_input", in);
      if (sent.ok()) return true;
      const Error& e = sent.error();
      if (e.code == Code::kNotFound || e.message == engine::kTerminalHungUp) return false;
      if (e.code == Code::kTooManyRequests && tries < kInputTries) {
        pollfd wake{wake_fd_, POLLIN, 0};
        if (::poll(&wake, 1, 1000) > 0) Drain(wake_fd_);
        if (Stopped()) return false;  // the command ended meanwhile
        continue;
      }
      const bool goes_on = e.code == Code::kTimeout;
      if (!goes_on) RestoreTerminal();
      // The terminal may be raw: a line of its own starts at the left margin.
      const std::string line =
          "\r\nisb: typing into the terminal failed: " + e.message +
          (goes_on ? "; what was not written is lost" : "; no more input is sent (Ctrl-C ends isb and the command)") +
          "\r\n";
      (void)::write(STDERR_FILENO, line.data(), line.size());
      return goes_on;
    }
  }
  static constexpr int kInputTries = 10;
  bool Stopped() {
    MutexLock lock(mu_);
    return stop_;
  }

  static void Drain(int fd) {
    char buf[64];
    while (::read(fd, buf, sizeof buf) > 0) {
    }
  }

  const ToolClient& client_;
  std::string sandbox_;
  bool input_;
  int winch_fd_, wake_fd_;
  Mutex mu_;
  std::string session_ ISB_GUARDED_BY(mu_);
  bool stop_ ISB_GUARDED_BY(mu_) = false;
};

}  // namespace

Result<json> RunTerminalExec(const ToolClient& client, json input, bool forward_input) {
  auto [rows, cols] = WindowSize();
  input["tty"] = true;
  input["rows"] = rows;
  input["cols"] = cols;
  ISB_ASSIGN_OR_RETURN(Pipe winch, MakePipe());
  ISB_ASSIGN_OR_RETURN(Pipe wake, MakePipe());
  for (int fd : {winch.read.get(), winch.write.get(), wake.read.get(), wake.write.get()})
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
  auto wake_up = [&wake] {
    char c = 'x';
    (void)::write(wake.write.get(), &c, 1);
  };

  TerminalMode mode(forward_input && ::isatty(STDIN_FILENO), winch.write.get());
  Forwarder forwarder(client, input.value("sandbox", ""), forward_input, winch.read.get(), wake.read.get());
  std::thread thread([&forwarder] { forwarder.Run(); });
  Result<json> result =
      client.CallStreaming("sandbox_exec", input, [&](const std::string& stream, const std::string& data) {
        if (stream == "session") {
          forwarder.SetSession(data);
          wake_up();
          return;
        }
        std::fwrite(data.data(), 1, data.size(), stdout);
        std::fflush(stdout);
      });
  forwarder.Stop();
  wake_up();
  thread.join();
  return result;
}

}  // namespace isb::cli
