// Exec terminals, daemon side.
#include "engine/exec_terminal.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <string>

namespace isb::engine {

using Clock = std::chrono::steady_clock;

Result<Fd> ExecTerminal::AdoptMaster(Fd fd) {
  unsigned int index = 0;
  // Only a pty master answers TIOCGPTN.
  if (!fd.valid() || ::ioctl(fd.get(), TIOCGPTN, &index) != 0)
    return Error::Of(Code::kUnavailable, "the sandbox's init answered a terminal request without a terminal");
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) return Error::Sys("fcntl terminal");
  return fd;
}

Status ExecTerminal::Write(std::string_view data, std::chrono::milliseconds timeout) {
  MutexLock lock(write_mu_);
  const auto deadline = Clock::now() + timeout;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(master_.get(), data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      last_ = data[done - 1];
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return Error::Of(Code::kUnavailable, kTerminalHungUp);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{master_.get(), POLLOUT, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000))) < 0) {
      if (left > 0 && errno == EINTR) continue;
      return Error::Of(Code::kTimeout, "the command did not read its terminal input within " +
                                           std::to_string(timeout.count() / 1000) + " s; " + std::to_string(done) +
                                           " of " + std::to_string(data.size()) + " bytes were written");
    }
  }
  return {};
}

Status ExecTerminal::SendEof(std::chrono::milliseconds timeout) {
  termios t{};
  char eof = 4;  // Ctrl-D
  bool canonical = true;
  // On a master, tcgetattr reads the slave's settings: the character the command's terminal treats as EOF.
  if (::tcgetattr(master_.get(), &t) == 0) {
    if (t.c_cc[VEOF] != _POSIX_VDISABLE) eof = static_cast<char>(t.c_cc[VEOF]);
    canonical = (t.c_lflag & ICANON) != 0;
  }
  bool line_pending;
  {
    MutexLock lock(write_mu_);
    line_pending = last_ != '\n' && last_ != '\r' && last_ != eof;
  }
  // In canonical mode an end-of-file character after characters not yet sent only sends them; the next ends input.
  return Write(std::string(canonical && line_pending ? 2 : 1, eof), timeout);
}

Status ExecTerminal::Resize(uint16_t rows, uint16_t cols) {
  winsize ws{};
  ws.ws_row = rows;
  ws.ws_col = cols;
  if (::ioctl(master_.get(), TIOCSWINSZ, &ws) != 0) return Error::Of(Code::kUnavailable, kTerminalHungUp);
  return {};
}

}  // namespace isb::engine
