// Port previews in the daemon: who may see them (api::PreviewAccess), their connections (PreviewProxy), and the
// watch that ends them when the sandbox stops or the viewer is no longer a member of its org.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "api/event_bus.h"
#include "api/preview_access.h"
#include "daemon/preview_proxy.h"
#include "base/fd.h"
#include "base/result.h"
#include "identity/store.h"
#include "store/db.h"

namespace isb::daemon {

// Sandbox `id`'s network namespace (open, O_RDONLY) while it runs, as its runtime gives it
// (SandboxManager::OpenNetwork); an error when it does not run (or does not exist).
using NetworkOf = std::function<Result<Fd>(const std::string& id)>;

// The run of sandbox `id`, "" when it does not run (SandboxManager::RunOf): what a preview belongs to
// (api::PreviewAccessOptions::run_of), so that a stop and a start no event told of end the old run's previews.
using RunOf = std::function<std::string(const std::string& id)>;

struct PreviewServiceOptions {
  std::string domain = api::kDefaultPreviewDomain;  // --preview-domain
  std::string url_scheme = "http";                  // --preview-domain's scheme, for links
  uint16_t url_port = 0;                            // isb's port (or the front's, given), for links
  // How often every session's viewer is checked again (--preview-recheck; a minute by the spec).
  std::chrono::milliseconds recheck = std::chrono::minutes(1);
  // PreviewProxyOptions::response_timeout (--preview-response-timeout).
  std::chrono::milliseconds response_timeout = kPreviewResponseTimeout;
  // How long a link may be spent (api::PreviewAccessOptions::link_life; --preview-link-life).
  std::chrono::milliseconds link_life = std::chrono::seconds(60);
  NetworkOf network;                  // required
  RunOf run_of;                       // required
  bool limit_loopback_peers = false;  // PreviewProxyOptions::limit_loopback_peers: the HTTP listener's setting
};

class PreviewService {
 public:
  // `db`, `identity` and `events` must outlive the service. The watch and the proxy's thread start here.
  PreviewService(PreviewServiceOptions options, store::Db& db, identity::IdentityStore& identity,
                 api::EventBus& events);
  ~PreviewService();
  PreviewService(const PreviewService&) = delete;
  PreviewService& operator=(const PreviewService&) = delete;

  api::PreviewAccess& access() { return *access_; }
  PreviewProxy& proxy() { return *proxy_; }

 private:
  void Watch();

  const PreviewServiceOptions options_;
  store::Db& db_;
  identity::IdentityStore& identity_;
  api::EventBus& events_;
  std::unique_ptr<api::PreviewAccess> access_;
  std::unique_ptr<PreviewProxy> proxy_;
  std::atomic<bool> stopping_{false};
  std::thread watch_;
};

}  // namespace isb::daemon
