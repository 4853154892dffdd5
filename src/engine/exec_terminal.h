// The daemon's end of an exec session's terminal: the pty master that the sandbox's init handed over.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/fd.h"
#include "base/mutex.h"
#include "base/result.h"

namespace isb::engine {

// The message of a call on a terminal whose command has ended (Code::kUnavailable): its session is over.
inline constexpr char kTerminalHungUp[] = "the terminal has hung up";

// Thread-safe: the exec's own thread reads the master while other threads write input and resize it.
class ExecTerminal {
 public:
  // REQUIRES: `master` is a pty master (see AdoptMaster).
  explicit ExecTerminal(Fd master) : master_(std::move(master)) {}

  // Checks that a descriptor received from a sandbox's init is a pty master and makes it non-blocking;
  // anything else is refused (Code::kUnavailable).
  static Result<Fd> AdoptMaster(Fd fd);

  // Writes all of `data` as typed input, waiting at most `timeout` for a command that is slow to read.
  // Code::kTimeout names how much was written; kUnavailable once the terminal has hung up.
  Status Write(std::string_view data, std::chrono::milliseconds timeout);
  // Types the terminal's end-of-file character (VEOF, normally Ctrl-D): the reader sees end of input when the
  // terminal is in canonical mode, as at a keyboard. After a line not ended, it types it twice, as a user would:
  // the first only sends the line (`printf abc | isb exec -it SB -- cat` ends).
  Status SendEof(std::chrono::milliseconds timeout);
  // Sets the window size (TIOCSWINSZ): the command's foreground process group receives SIGWINCH.
  Status Resize(uint16_t rows, uint16_t cols);

  int fd() const { return master_.get(); }

 private:
  Fd master_;
  Mutex write_mu_;                              // keeps each call's bytes together
  char last_ ISB_GUARDED_BY(write_mu_) = '\n';  // the last byte written
};

}  // namespace isb::engine
