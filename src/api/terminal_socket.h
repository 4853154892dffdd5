// A sandbox's terminal over a WebSocket (GET /api/v1/sandboxes/<id>/terminal): the streaming sandbox_exec with a tty,
// run for the caller exactly as REST runs it (admitted, authorized, audited, at most kMaxTerminalSessions), with its
// input and resizes sent as sandbox_exec_input and sandbox_exec_resize.
//
// Query: org (default "default"), rows, cols (the terminal's first size; 24x80 when absent), idle_timeout and
// timeout (seconds; each may only shorten the server's TerminalOptions, for a shared screen or a test),
// reattach_grace (seconds, 0 up to the server's: how long the shell waits for a reattach once its connection is
// lost; 0: it ends with its connection).
// The shell runs as an interactive sandbox_exec (set by CallContext::interactive, which no caller's JSON reaches):
// ended after idle_timeout with no input or resize (an error message with code "timeout"; output does not count),
// and at the latest after timeout, not after the 15 minutes other commands get.
// Server to client: binary frames of the terminal's output; text frames {"type":"session","session":ID,"offset":N}
// first (N: where the output that follows starts, counted in bytes from the shell's start), then
// {"type":"exit","exit_code":N} or {"type":"error","error":CODE,"message":...}, then a close 1000.
// Client to server: binary frames are typed input; text frames are {"type":"input","data":"..."} or
// {"type":"resize","rows":R,"cols":C}; input larger than one sandbox_exec_input call takes (a paste) is sent in
// calls of kMaxTerminalInputBytes, text cut between characters. Input sent before the session message is refused
// with an error message. The server pings a quiet client and takes it for gone when it does not answer (see
// WebSocketSession). When the server stops, or the caller's credential or access changes while the terminal is
// open: a close 1008 with kTerminalStoppedReason, and the shell ends.
//
// Reattach (api/terminal_sessions.h): a connection lost without a close, or closed by the client with any code but
// 1000 or none (1001 is a browser's reload or closed tab), once it was sent the session message or came with its id
// (else no client has the id to reattach with, and the shell ends with it), leaves the shell running, detached, for
// reattach_grace (TerminalOptions::reattach_grace, 60 s), within its idle limit and timeout and still one of the
// sandbox's kMaxTerminalSessions; the last kTerminalRingBytes of its output are kept. A client's close with 1000 or
// without a code ends the shell at once. Query session=ID (and seen=N, the bytes of output the client already has)
// attaches again: allowed to the caller that started the shell (the same subject and org, for the sandbox as named
// then), authorized again as sandbox_exec is, and recorded in the audit log as sandbox_terminal_reattach. The session
// message follows, then the output after byte N (all that is kept when the ring no longer holds byte N: the session
// message's offset says which), then live output; rows and cols resize it. A connection still attached to the
// session is closed with kTerminalTakenOverCode (the newest connection wins, as tmux's attach does). A session that
// ended, another caller's, or a made-up id: after the upgrade, an error message (not_found, the same for all three)
// and a close with kTerminalNoSessionCode. With no connection past the grace period the shell is killed, as a
// cancelled exec is; stopping or removing the sandbox, or the server stopping, ends it too.
// A refusal before the upgrade (no such sandbox, a viewer, too many sessions) is the HTTP error REST would give.
#pragma once

#include <chrono>
#include <memory>

#include "api/http_message.h"
#include "api/registry.h"
#include "api/terminal_sessions.h"
#include "spec/exec_request.h"

namespace isb::api {

inline constexpr char kTerminalStoppedReason[] =
    "the terminal ended: the server is stopping, or the caller's credential or access changed";

struct TerminalOptions {
  std::chrono::seconds idle_timeout{spec::kDefaultTerminalIdleS};
  std::chrono::seconds timeout{spec::kMaxInteractiveTimeoutS};  // the hard cap, whatever the activity
  std::chrono::seconds reattach_grace{60};  // a shell with no connection waits this long for a reattach
};

// The audit log's action for a terminal attached again to its shell.
inline constexpr char kTerminalReattachAction[] = "sandbox_terminal_reattach";

class TerminalSocket {
 public:
  // REQUIRES: `registry` outlives this and every session it answered; options as spec::Validate takes them.
  explicit TerminalSocket(const Registry& registry, TerminalOptions options = {})
      : registry_(registry), options_(options), sessions_(std::make_unique<TerminalSessions>()) {}
  // For a caller the HTTP server let in (and, with a session cookie, whose Origin is isb's own).
  Response Handle(const Request& req, const Identity& who) const;
  // Ends every shell, detached ones included, and waits for them: once the HTTP server has stopped.
  void Stop() { sessions_->Stop(); }

 private:
  Response Reattach(const Request& req, const Identity& who, const std::string& sandbox, CallContext ctx,
                    const nlohmann::json& input) const;

  const Registry& registry_;
  const TerminalOptions options_;
  const std::unique_ptr<TerminalSessions> sessions_;
};

}  // namespace isb::api
