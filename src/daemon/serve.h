// `isb serve`: the daemon's wiring, start-up (spawner, state, adoption) and shutdown.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/spec_policy.h"
#include "api/terminal_socket.h"
#include "api/tool_policy.h"
#include "audit/retention.h"
#include "daemon/preview_proxy.h"
#include "egress/judge.h"

namespace isb::daemon {

struct ServeOptions {
  std::string listen = "127.0.0.1:8092";
  std::string state_dir = "/var/lib/isb";
  std::string serve_socket;  // default <state_dir>/api/isb.sock
  std::string runtime_dir = "/run/isb";
  std::chrono::seconds reap_interval{60};
  // Sandboxes launched ahead of creates, without and with a network (ManagerOptions::pool_size, net_pool_size).
  size_t pool_size = 2;
  size_t net_pool_size = 2;
  // Egress: the sandbox subnet (refused when it overlaps a host route), the nftables table (its name is also the
  // prefix of the sandboxes' veths), and pins NAME=IP[:PORT], the only way to a private address.
  std::string sandbox_subnet = "198.18.0.0/15";
  std::string egress_table = "isb";
  std::vector<std::string> egress_pins;
  // What remote callers (not the unix socket, not superadmins) may ask for, as the flags widened it; the CLI has
  // put it through api::PrepareRemoteSpecPolicy.
  api::RemoteSpecPolicy remote_spec;
  // Which tools remote callers see and may call (--allow-tools, --deny-tools).
  api::ToolPolicy tool_policy;
  // --mcp-pre-approve: the destructive tools an MCP client may call without a person's approval (unset: McpOptions'
  // own default).
  std::optional<std::set<std::string>> mcp_pre_approved;
  // The judge (--judge-url, --judge-model, --judge-key-file); none without a url.
  egress::JudgeOptions judge;
  // --dns-upstream IP[:PORT]: the resolvers an open sandbox's DNS queries are relayed to (empty: the host's
  // /etc/resolv.conf nameservers).
  std::vector<std::string> dns_upstreams;
  std::string egress_ca;  // PEM bundle trusted (besides the system roots) for origins of intercepted connections
  // The daemon's age identity for the secret store: this file (0600), else $ISB_AGE_KEY, a systemd credential
  // (isb-secrets-key), or one made at first start in <state_dir>/secrets/identity.
  std::string secrets_key;
  std::string secrets_recipients;  // break-glass age recipients, one a line: every secret is encrypted to them too
  // Registries images are pulled from: --registry-allow HOST[:PORT] (on a loopback or private address),
  // --registry-insecure HOST[:PORT] (plain http), --registry-ca FILE (a CA trusted beside the system's).
  std::vector<std::string> registry_allow;
  std::vector<std::string> registry_insecure;
  std::string registry_ca;
  // OAuth clients known by the https URL of their metadata document: read from public addresses, and from these
  // HOST[:PORT] on loopback or private ones (--oauth-client-allow); --oauth-client-ca FILE trusted beside the
  // system's CAs; --no-oauth-client-documents reads none (such clients register instead).
  std::vector<std::string> oauth_client_allow;
  std::string oauth_client_ca;
  bool no_oauth_client_documents = false;
  // Sign-in failures allowed per account and per client address within 15 minutes (api::WebAuthOptions).
  int sign_in_account_limit = 5;
  int sign_in_address_limit = 20;
  // Host names (besides localhost, 127.0.0.1, [::1] and the listen address) a browser may send requests to, as a
  // tunnel or reverse proxy in front of the daemon names it (--allow-host).
  std::vector<std::string> allow_hosts;
  // Audit log and history rows older than this are pruned at start and every prune_interval; nullopt: never.
  std::optional<std::chrono::milliseconds> audit_retention = audit::kDefaultRetention;
  std::chrono::milliseconds prune_interval = audit::kPruneInterval;
  std::string version = "0.1.0";
  // Loopback callers without a credential may read GET /metrics (--metrics-public).
  bool metrics_public = false;
  // Port previews' domain (--preview-domain): empty, localhost; never isb's own host name or a parent of it.
  std::string preview_domain;
  // How often each preview session's viewer is checked again (--preview-recheck).
  std::chrono::milliseconds preview_recheck = std::chrono::minutes(1);
  // How long a preview link may be spent (--preview-link-life): 60 s, or shorter.
  std::chrono::milliseconds preview_link_life = std::chrono::seconds(60);
  // How long a preview's app has to begin its response to a request before the proxy answers 504
  // (--preview-response-timeout).
  std::chrono::milliseconds preview_response_timeout = kPreviewResponseTimeout;
  // A web terminal ends after this long with no input or resize (output does not count), and at the latest after
  // `timeout`.
  api::TerminalOptions terminal;
};

// Runs the daemon until SIGTERM or SIGINT; sandboxes keep running after it returns. Returns the exit status.
// REQUIRES: called from main before any thread exists (the spawner is forked first).
int Serve(const ServeOptions& options);

}  // namespace isb::daemon
