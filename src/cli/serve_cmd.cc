// `isb serve [--listen ADDR:PORT] [--state-dir DIR] [--serve-socket PATH]` and the policy flags for remote callers
#include "cli/serve_cmd.h"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "audit/retention.h"
#include "base/units.h"
#include "daemon/serve.h"

namespace isb::cli {

namespace {

// The remote-spec and tool policy flags. Tool lists are parsed, and bind roots and publish addresses checked, at start.
struct PolicyFlags {
  std::string allow_tools, deny_tools;
  std::optional<std::string> mcp_pre_approve;
};

void AddPolicyOptions(CLI::App* cmd, daemon::ServeOptions& opts, PolicyFlags& flags) {
  api::RemoteSpecPolicy& p = opts.remote_spec;
  cmd->add_flag("--allow-privileged", p.allow_privileged,
                "Remote callers may create privileged sandboxes (privileged: true)");
  cmd->add_flag("--allow-raw", p.allow_raw,
                "Remote callers may map host ids into sandboxes (an idmap other than auto/none)");
  // One value per occurrence: `--bind-root A --bind-root B`.
  cmd->add_option("--bind-root", p.bind_roots,
                  "Remote callers may use host paths whose real path lies under DIR; ORG=DIR: only members of ORG; "
                  "repeatable")
      ->type_name("[ORG=]DIR")
      ->allow_extra_args(false);
  cmd->add_option("--publish-address", p.publish_addresses,
                  "Remote callers may publish ports on IP besides loopback; repeatable")
      ->type_name("IP")
      ->allow_extra_args(false);
  cmd->add_option("--publish-ports", p.publish_ports,
                  "The host ports remote callers may publish on, kept for isb; from 1024 up")
      ->type_name("FIRST-LAST")
      ->default_str(p.publish_ports);
  cmd->add_flag("--any-instance", p.any_instance, "Remote callers may reach instances isb serve does not manage");
  cmd->add_option("--allow-tools", flags.allow_tools,
                  "Comma-separated tool names or globs (sandbox_*) remote callers see; default all")
      ->type_name("LIST");
  cmd->add_option("--deny-tools", flags.deny_tools,
                  "Comma-separated tool names or globs remote callers never see; wins over --allow-tools")
      ->type_name("LIST");
  cmd->add_option("--mcp-pre-approve", flags.mcp_pre_approve,
                  "Comma-separated destructive tools an MCP client may call without a person's approval, or none; "
                  "default sandbox_exec,sandbox_exec_input,sandbox_file_write")
      ->type_name("LIST");
}

Status FinishPolicy(daemon::ServeOptions& opts, const PolicyFlags& flags) {
  ISB_TRY(api::PrepareRemoteSpecPolicy(opts.remote_spec));
  ISB_ASSIGN_OR_RETURN(opts.tool_policy, api::ToolPolicy::Parse(flags.allow_tools, flags.deny_tools));
  if (flags.mcp_pre_approve) {
    std::set<std::string> tools;
    std::string_view rest = *flags.mcp_pre_approve;
    while (*flags.mcp_pre_approve != "none" && !rest.empty()) {
      const size_t comma = rest.find(',');
      std::string_view name = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string_view::npos)
        return Error::Of(Code::kInvalidArgument, "--mcp-pre-approve: '" + std::string(name) +
                                                     "' is not a tool name (comma-separated names, or none)");
      tools.emplace(name);
    }
    opts.mcp_pre_approved = std::move(tools);
  }
  return {};
}

}  // namespace

void AddServeCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<daemon::ServeOptions>();
  auto flags = std::make_shared<PolicyFlags>();
  auto reap = std::make_shared<std::string>("60s");
  auto retention = std::make_shared<std::string>("90d");
  auto* cmd = app.add_subcommand("serve", "Run the daemon: sandboxes as tools over MCP, REST and a unix socket");
  cmd->add_option("--listen", opts->listen, "Loopback or tailnet ADDR:PORT for HTTP")->capture_default_str();
  cmd->add_option("--state-dir", opts->state_dir, "Where state lives (SQLite, sandboxes)")->capture_default_str();
  cmd->add_option("--serve-socket", opts->serve_socket, "The unix socket (default <state-dir>/api/isb.sock)");
  cmd->add_option("--pool-size", opts->pool_size,
                  "Sandboxes kept launched ahead of creates with egress none (0: every create launches its own)")
      ->capture_default_str();
  cmd->add_option("--net-pool-size", opts->net_pool_size,
                  "Sandboxes kept launched ahead of creates with an egress list, their network attached")
      ->capture_default_str();
  cmd->add_option("--sandbox-subnet", opts->sandbox_subnet, "IPv4 subnet for sandbox veths, a /30 each")
      ->capture_default_str();
  cmd->add_option("--egress-pin", opts->egress_pins,
                  "NAME=IP[:PORT]: dial NAME at IP (the only way to a private address); repeatable");
  cmd->add_option("--dns-upstream", opts->dns_upstreams,
                  "IP[:PORT]: a resolver open sandboxes' DNS queries are relayed to (default: the nameservers of "
                  "/etc/resolv.conf); repeatable, asked in order");
  cmd->add_option("--egress-ca", opts->egress_ca,
                  "PEM FILE of CA certificates trusted for intercepted origins, besides the system's");
  cmd->add_option("--secrets-key", opts->secrets_key,
                  "FILE holding the daemon's age identity (AGE-SECRET-KEY-1...), mode 0600; default: $ISB_AGE_KEY, "
                  "the systemd credential isb-secrets-key, or one made in the state dir");
  cmd->add_option("--secrets-recipients", opts->secrets_recipients,
                  "FILE of break-glass age recipients (age1..., one a line): secrets are encrypted to them too");
  cmd->add_option("--registry-allow", opts->registry_allow,
                  "HOST[:PORT]: a registry on a loopback or private address images may be pulled from; repeatable");
  cmd->add_option("--registry-insecure", opts->registry_insecure,
                  "HOST[:PORT]: a registry spoken to in plain http rather than https; repeatable");
  cmd->add_option("--registry-ca", opts->registry_ca,
                  "PEM FILE of CA certificates trusted for registries, besides the system's");
  cmd->add_option("--oauth-client-allow", opts->oauth_client_allow,
                  "HOST[:PORT]: an OAuth client whose metadata document (its https client_id) is on a loopback or "
                  "private address may be read there; repeatable");
  cmd->add_option("--oauth-client-ca", opts->oauth_client_ca,
                  "PEM FILE of CA certificates trusted for OAuth clients' metadata documents, besides the system's");
  cmd->add_flag("--no-oauth-client-documents", opts->no_oauth_client_documents,
                "Read no OAuth client metadata documents (no outbound fetch; clients register with RFC 7591 instead)");
  cmd->add_option("--egress-table", opts->egress_table,
                  "The nftables table of this daemon, and its veths' prefix (<table>-<slot>): a letter, then "
                  "letters, digits or _")
      ->capture_default_str();
  cmd->add_option("--judge-url", opts->judge.url,
                  "OpenAI-compatible chat-completions URL (http:// or https://) that judges names listed under judge");
  cmd->add_option("--judge-model", opts->judge.model, "The model the judge asks");
  cmd->add_option("--judge-key-file", opts->judge.key_file,
                  "File holding the judge's API key (sent as a bearer token)");
  cmd->add_flag("--metrics-public", opts->metrics_public,
                "Loopback callers may read GET /metrics without a credential (a local Prometheus)");
  cmd->add_option("--reap-interval", *reap, "How often the reaper looks for expired and idle sandboxes")
      ->capture_default_str();
  cmd->add_option("--sign-in-account-limit", opts->sign_in_account_limit,
                  "Failed sign-ins allowed per account within 15 minutes before 429")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--sign-in-address-limit", opts->sign_in_address_limit,
                  "Failed sign-ins allowed per client address within 15 minutes before 429")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--allow-host", opts->allow_hosts,
                  "NAME: a host name browsers may reach the daemon by (a tunnel's or reverse proxy's), besides "
                  "localhost, 127.0.0.1, ::1 and the listen address (IPv6 without brackets); repeatable");
  cmd->add_option("--preview-domain", opts->preview_domain,
                  "DOMAIN port previews are served under (<port>-<sandbox>-<org>.DOMAIN); default localhost. Not isb's "
                  "own host name nor a parent of it: best a registrable domain of its own. https://DOMAIN[:PORT] for "
                  "previews reached through a front that terminates TLS (a wildcard certificate for *.DOMAIN): links "
                  "then name that scheme and port, not isb's, and the preview cookie is Secure");
  auto recheck = std::make_shared<std::string>("1m");
  cmd->add_option("--preview-recheck", *recheck, "How often a preview's viewer is checked again (membership)")
      ->capture_default_str();
  auto response_timeout = std::make_shared<std::string>(std::to_string(daemon::kPreviewResponseTimeout.count()) + "s");
  cmd->add_option("--preview-response-timeout", *response_timeout,
                  "How long a preview's app has to begin its response to a request; past it the browser gets 504 "
                  "and the app's connection is closed")
      ->capture_default_str();
  auto link_life = std::make_shared<std::string>("60s");
  cmd->add_option("--preview-link-life", *link_life,
                  "How long a preview link (sandbox_port_open) may be spent: 60 s, or shorter (from 1s)")
      ->capture_default_str();
  cmd->add_option("--audit-retention", *retention,
                  "Prune audit log and history rows older than this (at least 1h), at start and hourly; "
                  "off or 0: never prune")
      ->capture_default_str();
  AddPolicyOptions(cmd, *opts, *flags);
  cmd->callback([opts, flags, reap, retention, recheck, response_timeout, link_life, exit_code] {
    if (opts->no_oauth_client_documents && (!opts->oauth_client_allow.empty() || !opts->oauth_client_ca.empty())) {
      std::fprintf(stderr,
                   "isb serve: --oauth-client-allow and --oauth-client-ca say how client metadata documents "
                   "are read; --no-oauth-client-documents reads none: drop one or the other\n");
      *exit_code = 2;
      return;
    }
    auto every = ParseDuration(*recheck);
    if (!every.ok() || every->count() < 100) {
      std::fprintf(stderr, "isb serve: --preview-recheck: %s\n",
                   every.ok() ? "must be at least 100ms" : every.error().message.c_str());
      *exit_code = 2;
      return;
    }
    opts->preview_recheck = std::chrono::duration_cast<std::chrono::milliseconds>(*every);
    auto life = ParseDuration(*link_life);
    if (!life.ok() || life->count() < 1000 || *life > std::chrono::seconds(60)) {
      std::fprintf(
          stderr, "isb serve: --preview-link-life: %s\n",
          life.ok() ? "must be from 1s to 60s (a link is good for 60 s at most)" : life.error().message.c_str());
      *exit_code = 2;
      return;
    }
    opts->preview_link_life = std::chrono::duration_cast<std::chrono::milliseconds>(*life);
    auto answer_within = ParseDuration(*response_timeout);
    if (!answer_within.ok() || answer_within->count() < 100 || *answer_within >= daemon::kPreviewIdleTimeout) {
      std::fprintf(stderr, "isb serve: --preview-response-timeout: %s\n",
                   !answer_within.ok() ? answer_within.error().message.c_str()
                                       : "must be at least 100ms and under 15m (a preview connection's idle timeout)");
      *exit_code = 2;
      return;
    }
    opts->preview_response_timeout = *answer_within;
    auto interval = ParseDuration(*reap);
    if (!interval.ok() || interval->count() < 1000) {
      std::fprintf(stderr, "isb serve: --reap-interval: %s\n",
                   interval.ok() ? "must be at least 1s" : interval.error().message.c_str());
      *exit_code = 2;
      return;
    }
    if (opts->judge.url.empty() && (!opts->judge.model.empty() || !opts->judge.key_file.empty())) {
      std::fprintf(stderr, "isb serve: --judge-model and --judge-key-file need --judge-url\n");
      *exit_code = 2;
      return;
    }
    auto kept = audit::ParseRetention(*retention);
    if (!kept.ok()) {
      std::fprintf(stderr, "isb serve: %s\n", kept.error().message.c_str());
      *exit_code = 2;
      return;
    }
    opts->audit_retention = *kept;
    opts->reap_interval = std::chrono::duration_cast<std::chrono::seconds>(*interval);
    if (Status policy = FinishPolicy(*opts, *flags); !policy.ok()) {
      std::fprintf(stderr, "isb serve: %s\n", policy.error().message.c_str());
      *exit_code = 2;
      return;
    }
    *exit_code = daemon::Serve(*opts);
  });
}

}  // namespace isb::cli
