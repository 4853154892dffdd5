// Who may see a port preview: one-time links (a random 256-bit token, good once and for 60 s, bound to the preview's
// host and the caller who asked) and the isb_preview sessions they turn into (random, 8 h, that preview alone),
// checked again every minute against the caller's membership, and ended with the port or the sandbox (spec 002,
// "Workspace port previews").
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/preview_host.h"
#include "api/registry.h"
#include "base/mutex.h"
#include "base/result.h"

namespace isb::api {

inline constexpr char kPreviewCookie[] = "isb_preview";
// Where a link is spent on its preview host: "/.isb-preview/<64 hex digits>". Never relayed to the app.
inline constexpr char kPreviewLinkPath[] = "/.isb-preview/";

struct PreviewAccessOptions {
  std::string domain = kDefaultPreviewDomain;
  std::string url_scheme = "http";
  uint16_t url_port = 0;  // isb's port, written in a link's URL; 0: none written
  std::chrono::milliseconds link_life = std::chrono::seconds(60);
  std::chrono::milliseconds session_life = std::chrono::hours(8);
  // Whether `caller` may still view a preview of `org`'s sandboxes (a member or above there, its credential alive).
  // Called without the store's lock held, by Recheck. Unset: always.
  std::function<bool(const Identity& caller, const std::string& org)> still_allowed;
  // Told, after the lock is let go, that sessions ended (Close, EndSandbox, Recheck): their open connections are
  // to be cut. May be set later with OnEnded.
  std::function<void()> on_ended;
  std::function<int64_t()> now_ms;  // unset: the system clock
  // Which run of `sandbox` is current (its runtime's pid and start time, say), "" when it does not run: a link and
  // its session belong to the run they were opened in, and end with it (EndOtherRuns). Called without the lock.
  // Unset: runs are not told apart.
  std::function<std::string(const std::string& sandbox)> run_of{};
};

struct PreviewLink {
  std::string url;
  int64_t expires_at_ms = 0;
};

// A spent link: the cookie's value, and its lifetime for the Set-Cookie.
struct PreviewSession {
  std::string cookie;
  std::chrono::seconds max_age{0};
};

// Thread-safe.
class PreviewAccess {
 public:
  explicit PreviewAccess(PreviewAccessOptions options);

  void OnEnded(std::function<void()> on_ended);
  // isb's port for the links' URLs, once the listener has one (a listen port of 0 is chosen at start).
  void SetUrlPort(uint16_t port) { url_port_ = port; }
  const std::string& domain() const { return options_.domain; }
  // Links are https (through a front that terminates TLS): the preview cookie is Secure.
  bool secure() const { return options_.url_scheme == "https"; }

  // A one-time link to `host` for `caller`. kUnavailable when there is no randomness.
  Result<PreviewLink> Open(const PreviewHost& host, const Identity& caller);
  // Spends the token `token` presented at `at`: a new session there, or kForbidden saying why not (unknown, used,
  // expired, another preview's). A presented token is used up whatever the outcome.
  Result<PreviewSession> Spend(std::string_view token, const PreviewHost& at);
  // The session `cookie` names at `at`: its key (for Alive), or kForbidden when there is none (unknown, ended,
  // expired or another preview's).
  Result<std::string> Check(std::string_view cookie, const PreviewHost& at);
  // Whether the session of that key (Check) is still on.
  bool Alive(const std::string& key);

  // Ends the links and sessions of `port` of `sandbox` (0: every port): the port was closed or the sandbox stopped.
  // Returns how many sessions ended.
  size_t Close(const std::string& sandbox, uint16_t port);
  // The sandboxes that have a link or a session now, each once.
  std::vector<std::string> Sandboxes();
  // Ends the links and sessions opened in a run of their sandbox other than its current one (run_of): a stop, or a
  // stop and a start, that no event told of. Returns how many sessions ended.
  size_t EndOtherRuns();
  // Asks `still_allowed` about every session's caller; ends those no longer allowed, and forgets what expired.
  // Returns how many sessions it ended.
  size_t Recheck();

  static const Error& NoSession();

 private:
  struct Link {
    PreviewHost host;
    Identity caller;
    int64_t expires_at_ms = 0;
    bool spent = false;
    std::string run{};
  };
  struct Session {
    PreviewHost host;
    Identity caller;
    int64_t expires_at_ms = 0;
    std::string run{};
  };
  int64_t Now() const;
  void Ended(size_t n);

  PreviewAccessOptions options_;
  std::atomic<uint16_t> url_port_;
  Mutex mu_;
  std::map<std::string, Link> links_ ISB_GUARDED_BY(mu_);        // by the token's SHA-256
  std::map<std::string, Session> sessions_ ISB_GUARDED_BY(mu_);  // by the cookie's SHA-256
  std::function<void()> on_ended_ ISB_GUARDED_BY(mu_);
};

}  // namespace isb::api
