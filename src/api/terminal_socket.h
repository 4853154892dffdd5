// A sandbox's terminal over a WebSocket (GET /api/v1/sandboxes/<id>/terminal): the streaming sandbox_exec with a tty,
// run for the caller exactly as REST runs it (admitted, authorized, audited, at most kMaxTerminalSessions), with its
// input and resizes sent as sandbox_exec_input and sandbox_exec_resize.
//
// Query: org (default "default"), rows, cols (the terminal's first size; 24x80 when absent), idle_timeout and
// timeout (seconds; each may only shorten the server's TerminalOptions, for a shared screen or a test).
// The shell runs as an interactive sandbox_exec (set by CallContext::interactive, which no caller's JSON reaches):
// ended after idle_timeout with no input or resize (an error message with code "timeout"; output does not count),
// and at the latest after timeout, not after the 15 minutes other commands get.
// Server to client: binary frames of the terminal's output; text frames {"type":"session","session":ID} first, then
// {"type":"exit","exit_code":N} or {"type":"error","error":CODE,"message":...}, then a close.
// Client to server: binary frames are typed input; text frames are {"type":"input","data":"..."} or
// {"type":"resize","rows":R,"cols":C}; input larger than one sandbox_exec_input call takes (a paste) is sent in
// calls of kMaxTerminalInputBytes, text cut between characters. Input sent before the session message is refused
// with an error message. The server pings a quiet client and ends the terminal when it does not answer (see
// WebSocketSession). When the server stops, or the caller's credential or access changes while the terminal is
// open: a close 1008 with kTerminalStoppedReason.
// A refusal before the upgrade (no such sandbox, a viewer, too many sessions) is the HTTP error REST would give.
#pragma once

#include <chrono>

#include "api/http_message.h"
#include "api/registry.h"
#include "spec/exec_request.h"

namespace isb::api {

inline constexpr char kTerminalStoppedReason[] =
    "the terminal ended: the server is stopping, or the caller's credential or access changed";

struct TerminalOptions {
  std::chrono::seconds idle_timeout{spec::kDefaultTerminalIdleS};
  std::chrono::seconds timeout{spec::kMaxInteractiveTimeoutS};  // the hard cap, whatever the activity
};

class TerminalSocket {
 public:
  // REQUIRES: `registry` outlives this and every session it answered; options as spec::Validate takes them.
  explicit TerminalSocket(const Registry& registry, TerminalOptions options = {})
      : registry_(registry), options_(options) {}
  // For a caller the HTTP server let in (and, with a session cookie, whose Origin is isb's own).
  Response Handle(const Request& req, const Identity& who) const;

 private:
  const Registry& registry_;
  const TerminalOptions options_;
};

}  // namespace isb::api
