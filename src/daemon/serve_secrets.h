// The daemon's secrets, as `isb serve` opens them: its age identity, the store under the state dir, the proxy's
// secrets filter and the broker between them; and what is done when a placeholder heads where its secret may not go
// (an audit row, and with on_leak stop, the sandbox stopped off the proxy's thread).
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "audit/log.h"
#include "base/mutex.h"
#include "base/result.h"
#include "daemon/audit_writer.h"
#include "daemon/secret_broker.h"
#include "secrets/secret_store.h"
#include "secrets/secrets_filter.h"

namespace isb::daemon {

struct SecretsConfig {
  std::string state_dir{};
  std::string key_file{};         // --secrets-key
  std::string recipients_file{};  // --secrets-recipients
  std::string env_key{};          // $ISB_AGE_KEY; wiped by DaemonSecrets::Open
  std::string credentials_dir{};  // $CREDENTIALS_DIRECTORY
  // The clock of the audit windows (leaks and uses); unset: steady_clock.
  std::function<std::chrono::steady_clock::time_point()> now{};
};

class DaemonSecrets {
 public:
  // Errors name the flag or file at fault. The key in config.env_key is wiped and cleared once read, whatever the
  // outcome: no copy of it stays in the daemon's configuration.
  static Result<std::unique_ptr<DaemonSecrets>> Open(SecretsConfig& config, audit::AuditLog* log);
  ~DaemonSecrets();  // after the stopper is cleared, waits for a stop in progress

  secrets::SecretStore& store() { return *store_; }
  SecretBroker& broker() { return *broker_; }
  std::shared_ptr<secrets::SecretsFilter> filter() { return filter_; }
  // Who stops a sandbox for on_leak stop: set once the manager exists, cleared (empty) before it goes.
  void SetStopper(std::function<void(const std::string& id)> stop);
  // Writes a secret_use row for each sandbox, secret and host whose uses since its last row are not yet recorded and
  // whose last row is a window old. Done every window by the daemon's own thread; at destruction, every pending
  // count is written whatever the window.
  void FlushUses() { Flush(false); }
  // Returns once the rows recorded so far are in the audit log (they are written off the proxy's thread).
  void WriteQueued() { writer_->Drain(); }
  // Uses counted under kOtherHosts because their sandbox had kMaxUseHosts tallies already.
  uint64_t UsesOverCap() const;

  // The most (secret, host) tallies one sandbox's uses keep between rows; a use past them is counted under
  // kOtherHosts for its secret, so a sandbox reaching many hosts under a wildcard cannot grow the map.
  static constexpr size_t kMaxUseHosts = 256;
  static constexpr char kOtherHosts[] = "(other hosts)";
  // A row of kOtherHosts names the first this many hosts counted under it since its last row.
  static constexpr size_t kMaxNamedOtherHosts = 16;

 private:
  DaemonSecrets() = default;
  void Leaked(const LeakReport& leak);  // on the proxy's thread: records, and queues a stop
  void Used(const UseReport& use);      // on the proxy's thread: counts, and queues a row at most once a window
  std::chrono::steady_clock::time_point Now() const;
  // Uses of one secret by one sandbox toward one host: counted between rows.
  struct UseTally {
    std::string org, sandbox, secret, host;
    uint64_t pending = 0;  // requests swapped since the last row
    std::optional<std::chrono::steady_clock::time_point> last_row;
    std::vector<std::string> named{};  // kOtherHosts: the hosts counted since the last row, the first few
  };
  void RecordUse(const UseTally& tally, uint64_t requests);
  void Flush(bool whatever_the_window);
  // Whether `key` was not recorded within kLeakWindow (and marks it recorded now).
  bool FirstInWindow(const std::string& key);
  static constexpr std::chrono::seconds kLeakWindow{60};
  static constexpr size_t kMaxLeakWindowEntries = 4096;
  void StopLoop();

  std::unique_ptr<secrets::SecretStore> store_;
  std::shared_ptr<secrets::SecretsFilter> filter_;
  std::unique_ptr<SecretBroker> broker_;
  Mutex stop_mu_;  // held while a sandbox is being stopped
  std::function<void(const std::string&)> stop_ ISB_GUARDED_BY(stop_mu_);
  Mutex mu_;
  CondVar cv_;
  std::deque<std::string> to_stop_ ISB_GUARDED_BY(mu_);
  mutable Mutex window_mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> recorded_ ISB_GUARDED_BY(window_mu_);
  // By sandbox, then by secret and host.
  std::map<std::string, std::map<std::string, UseTally>> uses_ ISB_GUARDED_BY(window_mu_);
  uint64_t uses_over_cap_ ISB_GUARDED_BY(window_mu_) = 0;
  std::unique_ptr<AuditWriter> writer_;  // the rows of leaks and uses, written off the proxy's thread
  std::function<std::chrono::steady_clock::time_point()> now_;
  bool done_ ISB_GUARDED_BY(mu_) = false;
  std::thread stopper_;
};

}  // namespace isb::daemon
