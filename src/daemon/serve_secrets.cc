// The daemon's secrets: opened from the state dir and flags, leaks recorded and acted on.
#include "daemon/serve_secrets.h"

#include <algorithm>
#include <openssl/crypto.h>

#include <cstdio>

#include "base/file.h"
#include "secrets/daemon_identity.h"

namespace isb::daemon {
namespace {

// Overwrites a string's bytes (all it can hold: a short string keeps them in place) and empties it.
void WipeString(std::string& text) {
  text.resize(text.capacity());
  OPENSSL_cleanse(text.data(), text.size());
  text.clear();
  text.shrink_to_fit();
}

// An audit row of the proxy's about what sandbox `id` did with a secret.
audit::Entry ProxyEntry(const std::string& org, const std::string& id, const char* action) {
  audit::Entry e;
  e.org = org;
  e.actor = "sandbox:" + id;
  e.actor_kind = "sandbox";
  e.surface = "egress";
  e.action = action;
  e.target = id;
  return e;
}

}  // namespace

Result<std::unique_ptr<DaemonSecrets>> DaemonSecrets::Open(SecretsConfig& config, audit::AuditLog* log) {
  secrets::IdentitySources sources;
  sources.env_key = std::move(config.env_key);
  WipeString(config.env_key);  // a moved-from short string keeps its bytes in place
  sources.key_file = config.key_file;
  sources.credentials_dir = config.credentials_dir;
  const std::string dir = config.state_dir + "/secrets";
  sources.generated = dir + "/identity";
  Result<secrets::AgeIdentity> identity = [&]() -> Result<secrets::AgeIdentity> {
    ISB_TRY(MakeDirs(dir, 0700));
    return secrets::LoadDaemonIdentity(sources);
  }();
  WipeString(sources.env_key);
  if (!identity.ok()) return Error::Of(identity.error().code, "secrets: " + identity.error().message);
  std::vector<std::string> recipients;
  if (!config.recipients_file.empty()) {
    Result<std::vector<std::string>> read = secrets::ReadRecipientsFile(config.recipients_file);
    if (!read.ok()) return Error::Of(read.error().code, "--secrets-recipients: " + read.error().message);
    recipients = std::move(*read);
  }
  secrets::SecretStoreOptions store_options{.dir = dir,
                                            .identity = std::move(*identity),
                                            .extra_recipients = std::move(recipients),
                                            .now_ms = nullptr,
                                            .min_value_with_hosts = secrets::kMinPlaceholderValueSize};
  std::unique_ptr<DaemonSecrets> out(new DaemonSecrets());
  out->writer_ = std::make_unique<AuditWriter>(log);
  out->now_ = config.now;
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
  broker.on_use = [self](const UseReport& use) { self->Used(use); };
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
  Flush(true);
}

std::chrono::steady_clock::time_point DaemonSecrets::Now() const {
  return now_ ? now_() : std::chrono::steady_clock::now();
}

void DaemonSecrets::SetStopper(std::function<void(const std::string& id)> stop) {
  MutexLock stopping(stop_mu_);  // waits for a stop in progress
  stop_ = std::move(stop);
}

bool DaemonSecrets::FirstInWindow(const std::string& key) {
  const auto now = Now();
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
  audit::Entry e = ProxyEntry(report.org, leak.sandbox, "secret_leak");
  e.details = {{"secret", leak.secret},
               {"host", leak.host + ":" + std::to_string(leak.port)},
               {"where", leak.where},
               {"action", egress::OnLeakName(leak.action)}};
  e.outcome = leak.action == egress::OnLeak::kPass ? "ok" : "forbidden";
  // Kept past the queue's bound: the window above already marked this row as the minute's one.
  writer_->Queue(std::move(e), AuditWriter::Overflow::kKeep);
}

void DaemonSecrets::Used(const UseReport& report) {
  const secrets::UseEvent& use = report.event;
  const std::string host = use.host + ":" + std::to_string(use.port);
  const auto now = Now();
  UseTally row;
  uint64_t requests = 0;
  {
    MutexLock lock(window_mu_);
    std::map<std::string, UseTally>& tallies = uses_[use.sandbox];
    std::string key = use.secret + "\n" + host;
    if (!tallies.contains(key) && tallies.size() >= kMaxUseHosts) {
      // Tallies with nothing pending and a row a window old say nothing more: dropped, so the map stays bounded.
      std::erase_if(tallies, [&](const auto& entry) {
        return entry.second.pending == 0 && (!entry.second.last_row || now - *entry.second.last_row >= kLeakWindow);
      });
      if (tallies.size() >= kMaxUseHosts) {
        ++uses_over_cap_;
        key = use.secret + "\n" + kOtherHosts;
      }
    }
    UseTally& tally = tallies[key];
    if (tally.sandbox.empty())
      tally = UseTally{report.org, use.sandbox, use.secret, key.substr(use.secret.size() + 1), 0, std::nullopt};
    ++tally.pending;
    // Past the cap a host has no tally of its own; the row of the other hosts names it (the first few of them).
    if (tally.host == kOtherHosts && tally.named.size() < kMaxNamedOtherHosts &&
        std::find(tally.named.begin(), tally.named.end(), host) == tally.named.end())
      tally.named.push_back(host);
    if (tally.last_row && now - *tally.last_row < kLeakWindow) return;
    requests = tally.pending;
    tally.pending = 0;
    tally.last_row = now;
    row = tally;
    tally.named.clear();
  }
  RecordUse(row, requests);
}

void DaemonSecrets::Flush(bool whatever_the_window) {
  const auto now = Now();
  std::vector<std::pair<UseTally, uint64_t>> rows;
  {
    MutexLock lock(window_mu_);
    for (auto& [sandbox, tallies] : uses_) {
      for (auto& [key, tally] : tallies) {
        if (tally.pending == 0) continue;
        if (!whatever_the_window && tally.last_row && now - *tally.last_row < kLeakWindow) continue;
        rows.emplace_back(tally, tally.pending);
        tally.pending = 0;
        tally.last_row = now;
        tally.named.clear();
      }
    }
    // A sandbox whose tallies all said everything (gone, or quiet a window) keeps no entry.
    std::erase_if(uses_, [&](const auto& entry) {
      return std::all_of(entry.second.begin(), entry.second.end(), [&](const auto& t) {
        return t.second.pending == 0 && t.second.last_row && now - *t.second.last_row >= kLeakWindow;
      });
    });
  }
  for (const auto& [tally, requests] : rows) RecordUse(tally, requests);
}

void DaemonSecrets::RecordUse(const UseTally& tally, uint64_t requests) {
  audit::Entry e = ProxyEntry(tally.org, tally.sandbox, "secret_use");
  e.details = {{"secret", tally.secret}, {"host", tally.host}, {"swapped", requests}};
  if (!tally.named.empty()) e.details["hosts"] = tally.named;
  writer_->Queue(std::move(e));
}

uint64_t DaemonSecrets::UsesOverCap() const {
  MutexLock lock(window_mu_);
  return uses_over_cap_;
}

void DaemonSecrets::StopLoop() {
  auto next_flush = std::chrono::steady_clock::now() + kLeakWindow;
  while (true) {
    std::string id;
    {
      MutexLock lock(mu_);
      while (!done_ && to_stop_.empty() && std::chrono::steady_clock::now() < next_flush)
        cv_.WaitUntil(mu_, next_flush);
      if (done_) return;
      if (!to_stop_.empty()) {
        id = std::move(to_stop_.front());
        to_stop_.pop_front();
      }
    }
    if (id.empty()) {  // a window passed: uses counted since their last row are recorded
      next_flush = std::chrono::steady_clock::now() + kLeakWindow;
      FlushUses();
      continue;
    }
    // The queue stays open meanwhile: the proxy's thread never waits for a stop.
    MutexLock stopping(stop_mu_);
    if (stop_) stop_(id);
  }
}

}  // namespace isb::daemon
