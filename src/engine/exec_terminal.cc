// Exec terminals, daemon side.
#include "engine/exec_terminal.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>

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
  std::lock_guard lock(write_mu_);
  const auto deadline = Clock::now() + timeout;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(master_.get(), data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return Error::Of(Code::kUnavailable, "the terminal has hung up");
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
  // On a master, tcgetattr reads the slave's settings: the character the command's terminal treats as EOF.
  if (::tcgetattr(master_.get(), &t) == 0 && t.c_cc[VEOF] != _POSIX_VDISABLE) eof = static_cast<char>(t.c_cc[VEOF]);
  return Write(std::string_view(&eof, 1), timeout);
}

Status ExecTerminal::Resize(uint16_t rows, uint16_t cols) {
  winsize ws{};
  ws.ws_row = rows;
  ws.ws_col = cols;
  if (::ioctl(master_.get(), TIOCSWINSZ, &ws) != 0) return Error::Of(Code::kUnavailable, "the terminal has hung up");
  return {};
}

}  // namespace isb::engine
