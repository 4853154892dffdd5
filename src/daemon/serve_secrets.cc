// The daemon's secrets: opened from the state dir and flags, leaks recorded and acted on.
#include "daemon/serve_secrets.h"

#include <cstdio>

#include "base/file.h"
#include "secrets/daemon_identity.h"

namespace isb::daemon {

Result<std::unique_ptr<DaemonSecrets>> DaemonSecrets::Open(const SecretsConfig& config, audit::AuditLog* log) {
  const std::string dir = config.state_dir + "/secrets";
  ISB_TRY(MakeDirs(dir, 0700));
  secrets::IdentitySources sources;
  sources.env_key = config.env_key;
  sources.key_file = config.key_file;
  sources.credentials_dir = config.credentials_dir;
  sources.generated = dir + "/identity";
  Result<secrets::AgeIdentity> identity = secrets::LoadDaemonIdentity(sources);
  if (!identity.ok()) return Error::Of(identity.error().code, "secrets: " + identity.error().message);
  std::vector<std::string> recipients;
  if (!config.recipients_file.empty()) {
    Result<std::vector<std::string>> read = secrets::ReadRecipientsFile(config.recipients_file);
    if (!read.ok()) return Error::Of(read.error().code, "--secrets-recipients: " + read.error().message);
    recipients = std::move(*read);
  }
  secrets::SecretStoreOptions store_options{
      .dir = dir, .identity = std::move(*identity), .extra_recipients = std::move(recipients)};
  std::unique_ptr<DaemonSecrets> out(new DaemonSecrets());
  out->log_ = log;
  Result<std::unique_ptr<secrets::SecretStore>> store = secrets::SecretStore::Open(std::move(store_options));
  if (!store.ok()) return Error::Of(store.error().code, "secrets: " + store.error().message);
  out->store_ = std::move(*store);
  out->filter_ = std::make_shared<secrets::SecretsFilter>();
  ISB_ASSIGN_OR_RETURN(std::string key, LoadPlaceholderKey(dir + "/placeholder.key"));
  SecretBrokerOptions broker;
  broker.store = out->store_.get();
  broker.filter = out->filter_;
  broker.placeholder_key = std::move(key);
  DaemonSecrets* self = out.get();
  broker.on_leak = [self](const LeakReport& leak) { self->Leaked(leak); };
  out->broker_ = std::make_unique<SecretBroker>(std::move(broker));
  out->stopper_ = std::thread([self] { self->StopLoop(); });
  return out;
}

DaemonSecrets::~DaemonSecrets() {
  {
    MutexLock lock(mu_);
    done_ = true;
  }
  cv_.NotifyAll();
  if (stopper_.joinable()) stopper_.join();
}

void DaemonSecrets::SetStopper(std::function<void(const std::string& id)> stop) {
  MutexLock stopping(stop_mu_);  // waits for a stop in progress
  stop_ = std::move(stop);
}

bool DaemonSecrets::FirstInWindow(const std::string& key) {
  const auto now = std::chrono::steady_clock::now();
  MutexLock lock(window_mu_);
  if (recorded_.size() > kMaxLeakWindowEntries)
    std::erase_if(recorded_, [&](const auto& entry) { return now - entry.second >= kLeakWindow; });
  auto [it, fresh] = recorded_.try_emplace(key, now);
  if (fresh || now - it->second >= kLeakWindow) {
    it->second = now;
    return true;
  }
  return false;
}

void DaemonSecrets::Leaked(const LeakReport& report) {
  const secrets::LeakEvent& leak = report.event;
  if (leak.action == egress::OnLeak::kStop) {
    MutexLock lock(mu_);
    to_stop_.push_back(leak.sandbox);
    cv_.NotifyAll();
  }
  // One row per sandbox, secret, host and action a minute: a sandbox that sends its placeholder in a loop does not
  // flood the audit log (the counters in sandbox_get count every one).
  if (!FirstInWindow(leak.sandbox + "\n" + leak.secret + "\n" + leak.host + "\n" + egress::OnLeakName(leak.action)))
    return;
  audit::Entry e;
  e.org = report.org;
  e.actor = "sandbox:" + leak.sandbox;
  e.actor_kind = "sandbox";
  e.surface = "egress";
  e.action = "secret_leak";
  e.target = leak.sandbox;
  e.details = {{"secret", leak.secret},
               {"host", leak.host + ":" + std::to_string(leak.port)},
               {"where", leak.where},
               {"action", egress::OnLeakName(leak.action)}};
  e.outcome = leak.action == egress::OnLeak::kPass ? "ok" : "forbidden";
  if (auto r = log_->Append(e); !r.ok())
    std::fprintf(stderr, "isb: audit: a secret leak of %s was not recorded: %s\n", leak.sandbox.c_str(),
                 r.error().message.c_str());
}

void DaemonSecrets::StopLoop() {
  while (true) {
    std::string id;
    {
      MutexLock lock(mu_);
      while (!done_ && to_stop_.empty()) cv_.Wait(mu_);
      if (done_) return;
      id = std::move(to_stop_.front());
      to_stop_.pop_front();
    }
    // The queue stays open meanwhile: the proxy's thread never waits for a stop.
    MutexLock stopping(stop_mu_);
    if (stop_) stop_(id);
  }
}

}  // namespace isb::daemon
