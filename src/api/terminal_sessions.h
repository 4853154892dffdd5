// Web terminals that outlive their connection: a shell whose WebSocket dropped is kept, detached, for a grace period
// with its latest output, and the caller that started it may attach to it again (api/terminal_socket.h speaks the
// protocol; this holds the sessions, their output and who is attached).
//
//   TerminalSessions sessions;
//   auto s = std::make_shared<TerminalSession>(owner, 60s, clock);
//   s->Attach(&screen, 0);                      // the first connection, before the exec runs
//   sessions.Start(s, [&] { ... exec: sessions.Add(id, s); s->Announce(id); s->Output(...); s->End(...); });
//   ... the connection drops: s->Detach(&screen, /*end=*/false); a new one: sessions.Find(id, owner)->Attach(...)
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mutex.h"
#include "base/result.h"

namespace isb::api {

// How much of a terminal's latest output is kept for a client that attaches again.
inline constexpr size_t kTerminalRingBytes = 64 << 10;

// Close codes of a terminal's WebSocket (the application range, RFC 6455 section 7.4.2): another connection of the
// same caller attached to the session (the tmux way: the newest connection wins), and a reattach that named no
// session this caller has.
inline constexpr char kTerminalEndedReason[] = "the command ended";  // with 1000, after the exit or error message
inline constexpr uint16_t kTerminalTakenOverCode = 4000;
inline constexpr char kTerminalTakenOverReason[] = "the terminal was attached from another connection";
inline constexpr uint16_t kTerminalNoSessionCode = 4404;
inline constexpr char kTerminalNoSessionReason[] = "no terminal session to reattach";
// The most shells one caller may leave waiting for a reattach, across every sandbox: a detached shell holds no
// connection (nor the stream slot the account's limit counts), so past this the oldest waiting one ends.
inline constexpr size_t kMaxDetachedTerminals = 4;

// The latest output of a terminal: at most `capacity` bytes, the oldest dropped first and never part of a UTF-8
// character (a cut in the middle drops the rest of that character too). Bytes are counted from the terminal's start,
// so a client that has the first N is sent only what followed. Not thread-safe (its session's lock guards it).
class OutputRing {
 public:
  explicit OutputRing(size_t capacity = kTerminalRingBytes) : capacity_(capacity) {}
  void Append(std::string_view bytes);
  // The output from byte `seen` on when the ring still holds it, else all it holds (what came before was dropped);
  // with the offset that output starts at.
  std::pair<uint64_t, std::string_view> From(uint64_t seen) const;
  uint64_t start() const { return end_ - data_.size(); }
  uint64_t end() const { return end_; }
  const std::string& data() const { return data_; }

 private:
  size_t capacity_ = 0;
  std::string data_;
  uint64_t end_ = 0;  // bytes appended since the start
};

// A connection attached to a terminal. Called with its session's lock held: the order of what it is sent is the
// order of the output.
class TerminalScreen {
 public:
  virtual ~TerminalScreen() = default;
  // A control message (JSON) and output; false once the connection is over.
  virtual bool Text(std::string_view message) = 0;
  virtual bool Output(std::string_view bytes) = 0;
  // Ends the connection with a close code and reason.
  virtual void Close(uint16_t code, std::string_view reason) = 0;
};

// Who started a terminal: its session serves only the same caller (the subject of the credential, as
// identity::Principal::Subject names it: one browser user whichever of their sessions, one token), in the same org,
// for the sandbox as the first attach named it.
struct TerminalOwner {
  std::string subject, org, sandbox;
  bool operator==(const TerminalOwner&) const = default;
};

using SteadyClock = std::function<std::chrono::steady_clock::time_point()>;

// One shell and whoever watches it. Thread-safe: the exec's thread writes output, connections attach and detach.
class TerminalSession {
 public:
  // `grace`: how long the shell waits with no connection attached before it ends (0: it ends with its connection).
  // `clock`: the steady clock unless a test gives its own.
  TerminalSession(TerminalOwner owner, std::chrono::milliseconds grace, SteadyClock clock = nullptr);

  const TerminalOwner& owner() const { return owner_; }
  // Empty until announced.
  std::string id() const;

  // From the exec: the session's id (sent to the attached connection as {"type":"session","session":ID,"offset":0}),
  // then its output (kept in the ring and sent to the attached connection), then its last message, after which the
  // attached connection is closed normally ("the command ended").
  void Announce(const std::string& id);
  void Output(std::string_view bytes);
  void End(const nlohmann::json& message);
  // Whether the exec should end: cancelled, or with no connection for longer than the grace period (at once when no
  // one could attach again: no connection was sent the session's id, because it was announced after the connection
  // was lost or its message could not be sent).
  bool Over() const;
  // Ends the shell (the exec sees Over()).
  void Cancel();
  // Since when it waits for a reattach with no connection; nullopt while attached, once ended or cancelled, and when
  // no reattach can come (Over() without a connection: its id reached no connection, or its grace period passed).
  std::optional<std::chrono::steady_clock::time_point> WaitingSince() const;

  // From a connection: attaches `screen` in place of the connection attached now (closed with
  // kTerminalTakenOverCode), and sends it the session message with the offset its output starts at, then the output
  // the ring holds after byte `seen` (all of it when it no longer holds `seen`). REQUIRES: `screen` stays valid
  // until Detach(screen) returns.
  void Attach(TerminalScreen* screen, uint64_t seen);
  // `screen`'s connection is over (nothing when another took its place). `end`: the shell ends with it (the client
  // closed normally, or the server or the caller's access ended it) instead of waiting for a reattach.
  void Detach(TerminalScreen* screen, bool end);
  // The session message a connection is sent when it attaches.
  static std::string SessionMessage(const std::string& id, uint64_t offset);

 private:
  // No connection, and one may still come: a connection was sent the id, and the grace period has not passed.
  bool Reattachable() const ISB_REQUIRES(mu_);

  const TerminalOwner owner_;
  const std::chrono::milliseconds grace_;
  const SteadyClock clock_;
  mutable Mutex mu_;
  std::string id_ ISB_GUARDED_BY(mu_);
  OutputRing ring_ ISB_GUARDED_BY(mu_);
  TerminalScreen* screen_ ISB_GUARDED_BY(mu_) = nullptr;
  std::chrono::steady_clock::time_point detached_at_ ISB_GUARDED_BY(mu_){};
  bool ended_ ISB_GUARDED_BY(mu_) = false, cancelled_ ISB_GUARDED_BY(mu_) = false;
  bool told_ ISB_GUARDED_BY(mu_) = false;  // a connection was sent the session's id (or came with it): it can reattach
  std::string end_message_ ISB_GUARDED_BY(mu_);
};

// The live terminal sessions of a server, by id, each with the thread that runs its exec. Thread-safe.
class TerminalSessions {
 public:
  TerminalSessions() = default;
  // Stop().
  ~TerminalSessions();
  TerminalSessions(const TerminalSessions&) = delete;
  TerminalSessions& operator=(const TerminalSessions&) = delete;

  // Runs `run` (the session's exec, to its end) on a thread of its own; the session is found by the id Add gives it
  // until `run` returns. After Stop: the session is cancelled first.
  void Start(std::shared_ptr<TerminalSession> session, std::function<void()> run);
  void Add(const std::string& id, std::shared_ptr<TerminalSession> session);
  // The session `id` when `who` owns it and its exec runs; else kNotFound with the same message whichever it was
  // (so that no one learns another caller's session ids).
  Result<std::shared_ptr<TerminalSession>> Find(const std::string& id, const TerminalOwner& who) const;
  // Cancels every session and waits for their execs to end (a daemon that stops leaves no shell behind).
  void Stop();
  // Ends the longest-waiting detached shells of `subject` past `most` of them (kMaxDetachedTerminals).
  void KeepDetachedWithin(const std::string& subject, size_t most);
  size_t size() const;

 private:
  struct Running {
    std::shared_ptr<TerminalSession> session;
    std::thread thread;
  };
  // Joins the threads whose exec has returned. REQUIRES: mu_ not held.
  void JoinFinished();

  mutable Mutex mu_;
  bool stopped_ ISB_GUARDED_BY(mu_) = false;
  uint64_t next_ ISB_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, Running> running_ ISB_GUARDED_BY(mu_);
  std::vector<std::thread> finished_ ISB_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<TerminalSession>, std::less<>> by_id_ ISB_GUARDED_BY(mu_);
};

}  // namespace isb::api
