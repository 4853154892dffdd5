// The daemon's previews: the sandbox's network namespace from its runtime, the viewer's membership from the identity
// store, and one thread that follows the lifecycle events and checks every session again each `recheck`.
#include "daemon/preview_service.h"

#include "identity/clock.h"

namespace isb::daemon {
namespace {

// Whether the token or browser session the preview was opened with is still good: not revoked, not expired. A
// password sign-in and the host have none to check.
bool CredentialStillGood(store::Db& db, const api::Identity& caller) {
  if (caller.credential_id == 0) return true;
  const char* sql = nullptr;
  if (caller.kind == identity::PrincipalKind::kToken) {
    sql = "SELECT 1 FROM tokens WHERE id = ?1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?2)";
  } else if (caller.kind == identity::PrincipalKind::kSession) {
    sql = "SELECT 1 FROM sessions WHERE id = ?1 AND revoked_at IS NULL AND expires_at > ?2";
  } else {
    return true;
  }
  Result<std::vector<store::Row>> rows = db.Query(sql, {caller.credential_id, identity::UnixNow()});
  return rows.ok() && !rows->empty();
}

// Whether `caller` is still a member (or above) of `org`: its user enabled, its membership there as the store has it
// now, under the limits of the credential it opened the preview with (an org scope, a role cap).
bool StillAllowed(store::Db& db, identity::IdentityStore& store, const api::Identity& caller, const std::string& org) {
  if (!CredentialStillGood(db, caller)) return false;  // a revoked token or a signed-out session ends its previews
  if (caller.superadmin) return true;
  api::Identity now = caller;
  if (caller.user_id > 0) {
    Result<identity::Principal> fresh = store.users().PrincipalOf(caller.user_id, caller.kind, "disabled");
    if (!fresh.ok()) return false;
    now.roles = fresh->roles;
    now.platform_admin = fresh->platform_admin;
  }
  std::optional<identity::Role> role = now.RoleIn(org);
  return role && *role >= identity::Role::kMember;
}

bool EndsPreviews(const std::string& type) {
  return type == "stopped" || type == "oom" || type == "reaped" || type == "removed";
}

}  // namespace

PreviewService::PreviewService(PreviewServiceOptions options, store::Db& db, identity::IdentityStore& identity,
                               api::EventBus& events)
    : options_(std::move(options)), db_(db), identity_(identity), events_(events) {
  api::PreviewAccessOptions access;
  access.domain = options_.domain;
  access.url_scheme = options_.url_scheme;
  access.url_port = options_.url_port;
  access.link_life = options_.link_life;
  access.still_allowed = [this](const api::Identity& caller, const std::string& org) {
    return StillAllowed(db_, identity_, caller, org);
  };
  access.run_of = options_.run_of;
  access_ = std::make_unique<api::PreviewAccess>(std::move(access));
  PreviewProxyOptions proxy;
  proxy.netns = options_.network;
  proxy.limit_loopback_peers = options_.limit_loopback_peers;
  proxy.response_timeout = options_.response_timeout;
  proxy_ = std::make_unique<PreviewProxy>(*access_, std::move(proxy));
  access_->OnEnded([this] { proxy_->CutEnded(); });
  watch_ = std::thread([this] { Watch(); });
}

PreviewService::~PreviewService() {
  stopping_ = true;
  watch_.join();
  access_->OnEnded({});
  proxy_->Stop();
}

void PreviewService::Watch() {
  using Clock = std::chrono::steady_clock;
  uint64_t cursor = events_.LastId();
  Clock::time_point next = Clock::now() + options_.recheck;
  const auto all = [](const std::string&) { return true; };
  while (!stopping_) {
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
    wait = std::clamp(wait, std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
    api::EventBatch batch = events_.Since(cursor, all, wait);
    cursor = batch.last_id;
    // Events were lost (more than the bus keeps, or a cursor not its own): a stop, or a stop and a start, may be
    // among them.
    if (batch.reset) access_->EndOtherRuns();
    for (const api::SandboxEvent& e : batch.events)
      if (EndsPreviews(e.type)) access_->Close(e.sandbox, 0);
    if (Clock::now() >= next) {
      access_->Recheck();
      access_->EndOtherRuns();  // and a run ended without any event at all
      next = Clock::now() + options_.recheck;
    }
  }
}

}  // namespace isb::daemon
