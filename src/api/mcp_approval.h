// The requestState of a stateless (2026-07-28) MCP approval: the call a person is asked about, sealed by the daemon
// and carried by the client from the question to its answer, redeemed once.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/result.h"
#include "identity/clock.h"
#include "identity/principal.h"

namespace isb::api {

// The call an approval is for. A state answers only the call it was issued for.
struct ApprovalCall {
  std::string caller;  // who asked: CallerOf(principal)
  std::string org;
  std::string tool;
  std::string args;  // the call's arguments as JSON text (Dump: keys sorted)
};

// The credential a caller presented, told apart from every other: its kind, user and credential ids, and subject.
std::string CallerOf(const identity::Principal& who);

// Thread-safe. A state is B "." hex(HMAC-SHA-256(key, B)), B = base64(payload); the payload is JSON naming the tool
// and the org, an expiry, a nonce, and keyed digests (HMAC-SHA-256) of the caller and of the arguments. It holds no
// secret in clear (arguments may carry one: only their keyed digest is in it, which no guess can be checked
// against without the key), and its seal cannot be made without the key, which never leaves the daemon.
class ApprovalStates {
 public:
  // `key`: at least 32 bytes (an empty key makes Issue and Redeem refuse). A state lapses `ttl` after its issue.
  ApprovalStates(std::string key, std::chrono::seconds ttl, identity::Clock now = identity::UnixNow);

  // A new state for `call`. kUnavailable when there is no key or no nonce could be drawn.
  Result<std::string> Issue(const ApprovalCall& call);
  // Whether `state` is one Issue made for exactly `call`, unexpired and not redeemed before; it is redeemed by this
  // call, whatever the answer it came with. kForbidden with one of, checked in this order:
  //   "requestState is not one this server issued, or it was altered"
  //   "requestState expired: an approval is answered within N s"
  //   "requestState was issued to another caller"
  //   "requestState was issued in org 'O'"
  //   "requestState was issued for a call of T"
  //   "requestState was issued for other arguments"
  //   "requestState was used already: an approval answers one call"
  // each followed by "; call the tool again without it to be asked anew".
  Status Redeem(std::string_view state, const ApprovalCall& call);

 private:
  std::string Seal(std::string_view payload) const;

  const std::string key_;
  const std::chrono::seconds ttl_;
  const identity::Clock now_;
  // States redeemed and not yet lapsed: at most this many (a flood of answers is refused, kUnavailable).
  static constexpr size_t kMaxRedeemed = 1 << 16;
  Mutex mu_;
  int64_t latest_ ISB_GUARDED_BY(mu_) = 0;                             // the latest time a Redeem saw
  std::set<std::string> redeemed_ ISB_GUARDED_BY(mu_);                 // their nonces
  std::multimap<int64_t, std::string> by_expiry_ ISB_GUARDED_BY(mu_);  // the same, by expiry, to forget them in order
};

}  // namespace isb::api
