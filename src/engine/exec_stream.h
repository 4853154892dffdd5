// An exec session as messages, with no host file descriptor in them: what a caller sends to a running command
// (input, end of input, window size) and what it sends back (output chunks, then its exit).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"

namespace isb::engine {

// From the caller to the command. A runtime carries these however it can: the namespaces runtime writes them to
// the pty master its sandbox's init handed over; a VM runtime would frame them over vsock.
struct ExecInputMessage {
  enum class Kind { kStdin, kEof, kResize };
  Kind kind = Kind::kStdin;
  std::string data;             // kStdin: the bytes typed
  uint16_t rows = 0, cols = 0;  // kResize: the new window size
};

// The other direction is an ExecSink (exec_client.h) for the stdout and stderr chunks, then the ExecOutcome
// (its exit code, signal, timeout) as the exec's result.

// The caller's end of a running command's input (a terminal session's keystrokes and resizes). Thread-safe: other
// threads send while the exec's own thread relays the output.
class ExecInput {
 public:
  virtual ~ExecInput() = default;
  // Delivers `message`, waiting at most `timeout` for a command that is slow to read. Code::kUnavailable with
  // kTerminalHungUp (exec_terminal.h) once the command has ended.
  virtual Status Send(const ExecInputMessage& message, std::chrono::milliseconds timeout) = 0;

  Status Type(std::string data, std::chrono::milliseconds timeout) {
    return Send({ExecInputMessage::Kind::kStdin, std::move(data), 0, 0}, timeout);
  }
  Status EndInput(std::chrono::milliseconds timeout) { return Send({ExecInputMessage::Kind::kEof, {}, 0, 0}, timeout); }
  Status Resize(uint16_t rows, uint16_t cols) {
    return Send({ExecInputMessage::Kind::kResize, {}, rows, cols}, std::chrono::milliseconds(0));
  }
};

// Called once a terminal command runs, before any output, with its input end. Called on the exec's own thread.
using ExecInputReady = std::function<void(std::shared_ptr<ExecInput>)>;

}  // namespace isb::engine
