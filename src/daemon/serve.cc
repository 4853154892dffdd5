// The daemon: everything `isb serve` starts, in order, and stops.
#include "daemon/serve.h"

#include "engine/namespaces_runtime.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "api/all_tools.h"
#include "api/event_bus.h"
#include "api/events_stream.h"
#include "api/http_server.h"
#include "api/listen_address.h"
#include "api/mcp.h"
#include "api/registry.h"
#include "api/rest.h"
#include "api/preview_host.h"
#include "api/sandbox_tools.h"
#include "api/terminal_socket.h"
#include "api/oauth_server.h"
#include "daemon/client_documents.h"
#include "api/web_auth.h"
#include "api/web_ui.h"
#include "base/file.h"
#include "base/metric_families.h"
#include "base/mutex.h"
#include "base/random.h"
#include "audit/details.h"
#include "audit/history.h"
#include "audit/log.h"
#include "audit/retention.h"
#include "daemon/daemon_metrics.h"
#include "daemon/preview_service.h"
#include "daemon/sandbox_manager.h"
#include "daemon/serve_images.h"
#include "daemon/usage_sampler.h"
#include "daemon/serve_secrets.h"
#include "secrets/fork_wiped_bytes.h"
#include "engine/cgroup.h"
#include "engine/spawner.h"
#include "identity/store.h"
#include "net/sandbox_network.h"
#include "store/db.h"
#include "store/migrations.h"

namespace isb::daemon {
namespace {

void Log(const std::string& line) { std::fprintf(stderr, "isb serve: %s\n", line.c_str()); }

// The exit status of a daemon that could not start: 2 for a flag it was given wrong (a usage error, as every isb
// command has it), 125 for everything else (isb failed: a port in use, a state dir it cannot write).
constexpr int kExitUsage = 2, kExitFailed = 125;

int Fail(const std::string& message, int status = kExitFailed) {
  std::fprintf(stderr, "isb serve: %s\n", message.c_str());
  return status;
}

// systemd's readiness protocol (Type=notify), without libsystemd: one datagram to $NOTIFY_SOCKET.
void NotifyReady() {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || (path[0] != '/' && path[0] != '@')) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  size_t len = std::strlen(path);
  if (len >= sizeof addr.sun_path) return;
  std::memcpy(addr.sun_path, path, len);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  const char msg[] = "READY=1";
  ::sendto(fd, msg, sizeof msg - 1, 0, reinterpret_cast<sockaddr*>(&addr),
           static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len));
  ::close(fd);
}

}  // namespace

int Serve(const ServeOptions& options) {
  auto listen = api::ParseListenAddress(options.listen);
  if (!listen.ok()) return Fail(listen.error().message, kExitUsage);
  if (auto st = api::CheckListenAddress(listen->host); !st.ok()) return Fail(st.error().message, kExitUsage);
  api::PreviewBase preview_base;
  if (!options.preview_domain.empty()) {
    Result<api::PreviewBase> base = api::ParsePreviewBase(options.preview_domain);
    if (!base.ok()) return Fail(base.error().message, kExitUsage);
    preview_base = std::move(*base);
    std::vector<std::string> isb_hosts = options.allow_hosts;
    isb_hosts.push_back(listen->host);
    if (auto st = api::CheckPreviewDomain(preview_base.domain, isb_hosts); !st.ok())
      return Fail(st.error().message, kExitUsage);
  }

  // Every relayed connection holds two descriptors and every exec a few: the soft limit (1024 under systemd) would
  // run out long before the hard one. Sandboxes get their own limits (engine/rlimits.cc), whatever the daemon's.
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &files);
  }

  // The daemon's age key may come in its environment: taken out before any process is started from this one.
  SecretsConfig secrets_config{
      .state_dir = options.state_dir, .key_file = options.secrets_key, .recipients_file = options.secrets_recipients};
  // Wiped where it lay and unset, and held until the spawner is forked in pages the spawner gets as zeroes: the
  // processes forked from this one carry a copy of its memory.
  auto age_key = secrets::ForkWipedBytes::TakeEnv("ISB_AGE_KEY");
  if (!age_key.ok()) return Fail(age_key.error().message);
  if (const char* creds = std::getenv("CREDENTIALS_DIRECTORY")) secrets_config.credentials_dir = creds;

  // 1. The spawner, while this process has one thread: every sandbox is cloned from it.
  engine::Spawner spawner;
  if (auto st = spawner.Start(options.runtime_dir); !st.ok()) return Fail(st.error().message);
  secrets_config.env_key = age_key->Take();
  // Secret values live in this process from now on: no core dump, and no other process of the host's root user
  // reads its memory through /proc without ptrace rights.
  ::prctl(PR_SET_DUMPABLE, 0);

  // 2. State.
  if (auto st = MakeDirs(options.state_dir, 0711); !st.ok()) return Fail(st.error().message);
  if (::chmod(options.state_dir.c_str(), 0711) != 0)
    return Fail("chmod " + options.state_dir + ": " + std::strerror(errno));
  auto db = store::Db::Open(options.state_dir + "/isb.db", store::Migrations());
  if (!db.ok()) return Fail(db.error().message);
  auto identity = identity::IdentityStore::Open(*db->get(), {.now = identity::UnixNow, .state_dir = options.state_dir});
  if (!identity.ok()) return Fail("identity: " + identity.error().message);
  // Until the first platform admin exists, whoever reads the setup token on this host creates it.
  auto setup_path = (*identity)->setup().Prepare();
  if (!setup_path.ok()) return Fail("setup token: " + setup_path.error().message);
  auto layout = engine::DetectCgroupLayout();
  if (!layout.ok()) return Fail(layout.error().message);
  // The daemon's sandboxes run in namespaces of their own; the manager knows them only through the runtime interface.
  // Made before the egress service, which opens the sandboxes' network namespaces through it until it stops.
  engine::NamespacesRuntime runtime(&spawner, *layout, options.runtime_dir, options.state_dir + "/sandboxes");
  // The audit log: every call that changes something, and every refusal, whatever the surface (the egress
  // service's too, below).
  auto audit_log = audit::AuditLog::Open(*db->get());
  if (!audit_log.ok()) return Fail("audit log: " + audit_log.error().message);
  // The secret store, and the filter by which the proxy swaps placeholders for values (a leak is an audit row).
  auto daemon_secrets = DaemonSecrets::Open(secrets_config, audit_log->get());
  if (!daemon_secrets.ok()) return Fail(daemon_secrets.error().message, kExitUsage);
  // Images: pulled, imported and snapshotted by orgs, their layers shared on disk.
  auto images = OpenDaemonImages(options.state_dir, image::RegistrySettings{.allow = options.registry_allow,
                                                                            .insecure = options.registry_insecure,
                                                                            .ca_file = options.registry_ca});
  if (!images.ok()) return Fail(images.error().message, kExitUsage);
  Result<api::DocumentFetch> client_documents =
      options.no_oauth_client_documents
          ? Result<api::DocumentFetch>(api::DocumentFetch{})
          : MakeClientDocumentFetch({.allow = options.oauth_client_allow, .ca_file = options.oauth_client_ca});
  if (!client_documents.ok()) return Fail(client_documents.error().message, kExitUsage);

  // 3. Signals are taken by this thread alone (sigwait below): block them before any thread starts.
  sigset_t stop;
  sigemptyset(&stop);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, s);
  ::pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  // 4. Egress: the sandbox network's rules, the proxy and the DNS responder. A refused connection is a refusal
  // the audit log hears of (the log outlives the service: declared before it).
  EgressOptions egress_options;
  egress_options.on_refusal = [log = audit_log->get()](const std::string& id, const std::string& org,
                                                       const std::string& target, const std::string& reason) {
    audit::Entry e;
    e.org = org;
    e.actor = "sandbox:" + id;
    e.actor_kind = "sandbox";
    e.surface = "egress";
    e.action = "egress_connect";
    e.target = target;
    e.details = {{"reason", reason}};
    e.outcome = "forbidden";
    if (auto r = log->Append(e); !r.ok()) Log("audit: an egress refusal was not recorded: " + r.error().message);
  };
  egress_options.filter = (*daemon_secrets)->filter();
  egress_options.secrets = &(*daemon_secrets)->broker();
  egress_options.subnet = options.sandbox_subnet;
  egress_options.upstream_ca_file = options.egress_ca;
  for (const std::string& text : options.dns_upstreams) {
    auto upstream = net::ParseDnsUpstream(text);
    if (!upstream.ok()) return Fail("--dns-upstream: " + upstream.error().message, kExitUsage);
    egress_options.dns_upstreams.push_back(*upstream);
  }
  egress_options.table = egress_options.ifname_prefix = options.egress_table;
  egress_options.state_dir = options.state_dir;  // where it records turning IPv4 forwarding on, for open sandboxes
  // The history opens after egress starts and closes before it stops; outside that a change under the daemon is
  // logged only.
  struct HistorySlot {
    Mutex mu;
    audit::History* history ISB_GUARDED_BY(mu) = nullptr;
  };
  auto history_for_egress = std::make_shared<HistorySlot>();
  egress_options.on_network_event = [history_for_egress](const std::string& id, const std::string& org,
                                                         const std::string& reason) {
    MutexLock lock(history_for_egress->mu);
    audit::History* h = history_for_egress->history;
    if (h == nullptr) return;
    audit::HistoryEntry e;
    e.sandbox = id;
    e.org = org;
    e.event = "network";
    e.actor_kind = "system";
    e.reason = reason;
    if (auto r = h->Record(e); !r.ok())
      Log("history: " + id + " network " + reason + " not recorded: " + r.error().message);
  };
  egress_options.holder = "pid " + std::to_string(::getpid()) + ", state dir " + options.state_dir;
  // The table names the veths too (<table>-<slot>): one that cannot is a flag given wrong. (A subnet that does not
  // parse is the egress service's to report.)
  if (auto subnet = net::ParseSubnet(options.sandbox_subnet); subnet.ok()) {
    if (auto st = net::CheckIfnamePrefix(options.egress_table, *subnet); !st.ok())
      return Fail("--egress-table: " + st.error().message, kExitUsage);
  }
  for (const std::string& p : options.egress_pins) {
    auto pin = egress::ParsePin(p);
    if (!pin.ok()) return Fail("--egress-pin: " + pin.error().message, kExitUsage);
    egress_options.pins.push_back(*pin);
  }
  egress_options.judge = options.judge;
  if (egress_options.judge.ca_file.empty())
    egress_options.judge.ca_file = options.egress_ca;  // one extra trust for both
  auto egress = EgressService::Start(egress_options);
  // Another live daemon's table or subnet: a flag to change, as for a port in use.
  if (!egress.ok())
    return Fail("egress: " + egress.error().message, egress.error().code == Code::kConflict ? kExitUsage : kExitFailed);
  Log("egress: proxy on port " + std::to_string((*egress)->proxy_port()) + ", DNS on port " +
      std::to_string((*egress)->dns_port()) + ", sandbox subnet " + options.sandbox_subnet);

  // 5. Adopt what the previous daemon left running. Lifecycle changes are published from here on.
  metrics::DeclareAll();
  // Ids from the clock: a client's Last-Event-ID from before a restart is reset, and no id counts other orgs' events.
  api::EventBus events{api::EventBus::kDefaultCapacity, api::UnixMicros};
  ManagerOptions manager_options{options.state_dir, options.runtime_dir, {}};
  manager_options.events = &events;
  manager_options.serve_socket = options.serve_socket;
  manager_options.pool_size = options.pool_size;
  manager_options.net_pool_size = options.net_pool_size;
  manager_options.isb_address = listen->host;
  manager_options.egress = egress->get();
  manager_options.secrets = &(*daemon_secrets)->broker();
  auto history = audit::History::Open(*db->get());
  if (!history.ok()) return Fail("history: " + history.error().message);
  manager_options.history = history->get();
  {
    MutexLock lock(history_for_egress->mu);
    history_for_egress->history = history->get();
  }
  struct ClearOnExit {
    HistorySlot& slot;
    ~ClearOnExit() {
      MutexLock lock(slot.mu);
      slot.history = nullptr;
    }
  } clear_history_for_egress{*history_for_egress};
  SandboxManager manager(manager_options, &runtime, db->get());
  // on_leak stop: the sandbox is stopped (and that is in its history), until the manager goes.
  (*daemon_secrets)->SetStopper([&manager](const std::string& id) {
    if (auto r = manager.Stop(id); !r.ok()) Log("secrets: stopping " + id + " after a leak: " + r.error().message);
  });
  // A new version of a secret reaches the running sandboxes given it as a file.
  (*daemon_secrets)->broker().OnChange([&manager](const std::string& org, const std::string& name) {
    manager.SecretChanged(org, name);
  });
  struct ClearStopper {
    DaemonSecrets& secrets;
    ~ClearStopper() {
      secrets.broker().OnChange({});
      secrets.SetStopper({});
    }
  } clear_stopper{**daemon_secrets};
  auto adopted = manager.Adopt();
  if (!adopted.ok()) return Fail(adopted.error().message);
  Log("sandboxes: " + *adopted);
  api::UsageStore usage;
  UsageSampler sampler(db->get(), *layout, &usage, egress->get());
  sampler.Start();

  // Port previews: origins of their own, taken by their Host before anything else on the listener.
  PreviewServiceOptions preview_options{
      .recheck = options.preview_recheck,
      .response_timeout = options.preview_response_timeout,
      .link_life = options.preview_link_life,
      .network = [&manager](const std::string& id) { return manager.OpenNetwork(id); },
      .run_of = [&manager](const std::string& id) { return manager.RunOf(id); }};
  if (!preview_base.domain.empty()) {
    preview_options.domain = preview_base.domain;
    preview_options.url_scheme = preview_base.scheme;
    preview_options.url_port = preview_base.port;
  }
  // The listener's rule for loopback peers (a tunnel in front brings everyone from there) holds for previews too.
  preview_options.limit_loopback_peers = api::HttpServerOptions{}.limit_loopback_peers;
  PreviewService previews(preview_options, **db, **identity, events);

  // 6. The registry and its surfaces.
  api::Registry registry;
  api::RemoteSpecPolicy remote_spec = options.remote_spec;
  remote_spec.api_port = listen->port;  // 0 (any free port) is left unchecked: no fixed port to keep
  api::QuotaGate::Lookup quota_of = [store = identity->get()](const std::string& org) {
    return store->orgs().GetQuota(org);
  };
  api::QuotaGate quotas(quota_of,
                        [store = images->store.get()](const std::string& org) { return store->OrgBytes(org); });
  api::SandboxToolOptions sandbox_tools{.remote = &remote_spec, .quotas = &quotas, .usage = &usage};
  sandbox_tools.may_read_secrets = [&registry](const api::CallContext& ctx) -> Status {
    const api::Tool* get = registry.FindVisible("secret_get", ctx.identity);
    if (get == nullptr) return Error::Of(Code::kForbidden, "secret_get is not open to this caller");
    return registry.Authorize(*get, ctx);
  };
  sandbox_tools.resolve_image = ImageResolver(*images);
  api::ImageToolOptions image_tools =
      DaemonImageToolOptions(*images, manager, (*daemon_secrets)->store(), sandbox_tools.may_read_secrets, quota_of);
  if (auto st = api::RegisterAllTools(registry, {.sandboxes = manager,
                                                 .previews = previews.access(),
                                                 .identity = **identity,
                                                 .audit_log = **audit_log,
                                                 .history = **history,
                                                 .secrets = (*daemon_secrets)->store(),
                                                 .images = *images->service,
                                                 .sandbox_options = std::move(sandbox_tools),
                                                 .image_options = std::move(image_tools)});
      !st.ok())
    return Fail(st.error().message);
  // --allow-tools / --deny-tools: what callers of the HTTP listener see and may call (the unix socket: everything).
  registry.SetToolFilter([policy = options.tool_policy](std::string_view tool) { return policy.Allows(tool); });
  registry.SetOrgCheck([store = identity->get()](std::string_view org) { return store->orgs().Get(org).ok(); });
  // Retention: both chains pruned now and then every prune_interval, on a thread that Stop joins.
  std::optional<audit::RetentionPruner> pruner;
  if (options.audit_retention) {
    pruner.emplace(**audit_log, **history, *options.audit_retention, options.prune_interval, Log);
    pruner->Start();
  } else {
    Log("audit retention off: nothing is pruned");
  }
  using nlohmann::json;
  // A call's row: its outcome, or "started" for a call that may change something, before it runs
  // (Registry::SetIntentObserver).
  auto call_entry = [&registry](std::string_view name, const api::Tool* tool, const json& input,
                                const api::CallContext& ctx, const Result<json>& result) {
    audit::Entry e;
    // The call's org names a row's org only for a caller who reaches it. The org is the caller's to name (a header),
    // and tools about the caller itself (its tokens, its sessions) or the platform run in whatever org it names:
    // their rows, and the refusals of callers who are in no such org, go to the rows of no org (platform admins
    // read those), so that no one files rows in another org's log, or reads there what someone else did.
    // (A call of a tool bound to its org that got through reached it already: only the others ask the store.)
    const bool admitted_in_org =
        tool != nullptr && result.ok() && tool->access.value_or(api::DefaultAccess(tool->annotations)).org_bound;
    e.org = admitted_in_org || registry.Reaches(ctx.identity, ctx.org) ? ctx.org : "";
    // Accepting an invitation joins its org: the row is that org's (its admins see who joined), whatever org the
    // call named.
    if (name == "invitation_accept" && result.ok()) e.org = result->value("org", "");
    e.actor = ctx.identity.Subject();
    e.actor_kind = std::string(identity::PrincipalKindName(ctx.identity.kind));
    e.surface = ctx.surface;
    e.action = std::string(name);
    if (input.is_object()) {
      // The object acted on: a sandbox, else a user, else a named object (an org, a token), else an id.
      for (const char* key : {"sandbox", "user", "name", "id"}) {
        auto it = input.find(key);
        if (it == input.end() || !(it->is_string() || it->is_number_integer())) continue;
        e.target = it->is_string() ? it->get<std::string>() : std::to_string(it->get<int64_t>());
        break;
      }
      e.details = input;
    }
    if (name == "sandbox_create" && result.ok()) e.target = result->value("id", "");
    e.outcome = audit::OutcomeOf(result);
    e.ip = ctx.ip;
    e.user_agent = ctx.user_agent;
    e.request_id = ctx.request_id;
    return e;
  };
  registry.SetObserver([log = audit_log->get(), call_entry](std::string_view name, const api::Tool* tool,
                                                            const json& input, const api::CallContext& ctx,
                                                            const Result<json>& result) -> Status {
    if (tool != nullptr && tool->annotations.read_only && result.ok() &&
        !tool->access.value_or(api::DefaultAccess(tool->annotations)).audit_reads)
      return {};
    audit::Entry e = call_entry(name, tool, input, ctx, result);
    auto r = log->Append(e);
    if (r.ok()) return {};
    Log("audit: the outcome of a " + e.action + " call was not recorded: " + r.error().message);
    const bool started = tool != nullptr && !tool->annotations.read_only;
    return Error::Of(Code::kUnavailable, "the audit log could not record its outcome (" + r.error().message + ")" +
                                             (started ? "; it is there as started" : ""));
  });
  registry.SetIntentObserver([log = audit_log->get(), call_entry](std::string_view name, const api::Tool& tool,
                                                                  const json& input,
                                                                  const api::CallContext& ctx) -> Status {
    // Admitted, so reported as a call that got through; its outcome follows in a row of its own.
    audit::Entry e = call_entry(name, &tool, input, ctx, Result<json>(json::object()));
    e.outcome = audit::kOutcomeStarted;
    auto r = log->Append(e);
    if (r.ok()) return {};
    Log("audit: a " + e.action + " call was refused: the audit log could not record it: " + r.error().message);
    return Error::Of(Code::kUnavailable, "the audit log could not record it (" + r.error().message + ")");
  });
  api::RestApi rest(registry, options.version);
  api::McpOptions mcp_options;
  mcp_options.server_version = options.version;
  if (options.mcp_pre_approved) {
    for (const std::string& name : *options.mcp_pre_approved)
      if (registry.Find(name) == nullptr) return Fail("--mcp-pre-approve: no tool is called " + name, kExitUsage);
    mcp_options.pre_approved = *options.mcp_pre_approved;
  }
  api::McpServer mcp(registry, mcp_options);
  api::WebAuthOptions web_options;
  // Secure beyond loopback, and behind a proxy that gives isb a name of its own (--allow-host, which must be TLS): a
  // browser sends a host's cookies to every port of it, and a Secure one over HTTPS only, so not to a plain-HTTP port
  // a sandbox publishes on the address that name leads to.
  web_options.secure_cookie = !api::IsLoopbackHost(listen->host) || !options.allow_hosts.empty();
  web_options.sign_in_failures_per_account = options.sign_in_account_limit;
  web_options.sign_in_failures_per_address = options.sign_in_address_limit;
  // A page on another name that resolves to this host (DNS rebinding) sends its own name as Host: refused.
  web_options.allowed_hosts = {"localhost", "127.0.0.1", "::1", listen->host};
  for (const std::string& h : options.allow_hosts) web_options.allowed_hosts.push_back(h);
  web_options.on_event = [log = audit_log->get()](std::string_view action, std::string_view account,
                                                  const api::Request& req, const Status& outcome) -> Status {
    audit::Entry e;
    e.actor = "user:" + audit::CleanText(account);
    e.actor_kind = "user";
    e.surface = "rest";
    e.action = std::string(action);
    e.outcome = audit::OutcomeOf(outcome);
    e.ip = req.remote_address;
    e.user_agent = req.headers.Get("User-Agent");
    auto r = log->Append(e);
    if (r.ok()) return {};
    Log("audit: a " + e.action + " was not recorded: " + r.error().message);
    return Error::Of(Code::kUnavailable, "the audit log could not record it (" + r.error().message + ")");
  };
  // OAuth for MCP clients: isb is the resource and its own authorization server, over the scheme its cookies
  // assume (HTTPS beyond loopback or behind a proxy).
  api::OAuthOptions oauth_options;
  oauth_options.scheme = web_options.secure_cookie ? "https" : "http";
  oauth_options.fetch_client_document = std::move(*client_documents);
  oauth_options.on_event = [log = audit_log->get()](const api::Request& req, const api::OAuthEvent& event) -> Status {
    audit::Entry e;
    e.org = event.org;
    e.actor = event.account.empty() ? "oauth-client" : "user:" + audit::CleanText(event.account);
    e.actor_kind = event.account.empty() ? "anonymous" : "user";
    e.surface = "rest";
    e.action = event.action;
    e.target = audit::CleanText(event.client);
    if (!event.redirect_uris.empty()) e.details["redirect_uris"] = event.redirect_uris;
    if (!event.reason.empty()) e.details["reason"] = audit::CleanText(event.reason);
    e.outcome = audit::OutcomeOf(event.outcome);
    e.ip = req.remote_address;
    e.user_agent = req.headers.Get("User-Agent");
    auto r = log->Append(e);
    if (r.ok()) return {};
    Log("audit: an " + e.action + " was not recorded: " + r.error().message);
    return Error::Of(Code::kUnavailable, "the audit log could not record it (" + r.error().message + ")");
  };
  web_options.resource_of = [scheme = oauth_options.scheme](const api::Request& req) {
    return api::McpResourceOf(req, scheme);
  };
  api::WebAuth web_auth(**identity, web_options);
  api::OAuthServer oauth(**identity, web_auth, oauth_options);
  rest.SetAuthRoutes([&web_auth](const api::Request& req) { return web_auth.Handle(req); });
  api::HttpServerOptions http;
  // The web UI from the files embedded at build time, and sandbox terminals over WebSockets.
  api::WebUi web_ui(api::EmbeddedWebAssets());
  api::TerminalSocket terminals(registry, options.terminal);
  http.web_ui = [&web_ui](const api::Request& req) { return web_ui.Handle(req); };
  http.terminal = [&terminals](const api::Request& req, const api::Identity& who) {
    return terminals.Handle(req, who);
  };
  // Requests turned away before any tool saw them: no credential at all, or an account's calls in flight at the
  // limit. Filed in no org (none was reached).
  http.on_refused = [log = audit_log->get(), &registry](const api::Request& req, const api::Identity* who,
                                                        std::string_view surface, const Error& error) {
    audit::Entry e;
    e.actor = who != nullptr ? who->Subject() : "anonymous";
    e.actor_kind = who != nullptr ? std::string(identity::PrincipalKindName(who->kind)) : "anonymous";
    e.surface = std::string(surface);
    // A REST call names its tool in its path (a name no tool has is not a row's action); an MCP message is not read.
    const std::string path(req.Path());
    const std::string tools = "/api/v1/tools/";
    const std::string tool = path.rfind(tools, 0) == 0 ? path.substr(tools.size()) : "";
    // A request refused as malformed or too large before it was read ("http") has no path or credential.
    e.action = surface == "http"                                 ? "http_request"
               : who == nullptr                                  ? "authenticate"
               : !tool.empty() && registry.Find(tool) != nullptr ? tool
                                                                 : std::string(surface);
    e.outcome = audit::OutcomeOf(error);
    e.ip = req.remote_address;
    e.user_agent = req.headers.Get("User-Agent");
    if (auto r = log->Append(e); !r.ok())
      Log("audit: a refused " + e.action + " was not recorded: " + r.error().message);
  };
  http.events = [&events, &registry](const api::Request& req, const api::Identity& who) {
    api::EventsStreamOptions stream;
    // The stream is sandbox_list changing: whom the tool policy hides that tool from gets no stream either.
    stream.listed = [&registry](const api::Identity& caller) {
      return registry.FindVisible("sandbox_list", caller) != nullptr;
    };
    return api::ServeEvents(events, req, who, stream);
  };
  http.metrics = [&db, &manager, &egress] { return RenderDaemonMetrics(**db, manager, egress->get()); };
  http.metrics_public = options.metrics_public;
  http.oauth = [&oauth](const api::Request& req) { return oauth.Handle(req); };
  http.resource_metadata = [&oauth](const api::Request& req) { return oauth.ResourceMetadataUrl(req); };
  http.preview_takes = [&previews](std::string_view host, std::string_view target) {
    return previews.proxy().Takes(host, target);
  };
  http.preview = [&previews](int fd, std::string pending) { previews.proxy().Take(fd, std::move(pending)); };
  http.preview_refused = [&previews](int fd, int status) { previews.proxy().TakeRefused(fd, status); };
  http.host = listen->host;
  http.port = listen->port;
  http.unix_socket_path = options.serve_socket.empty() ? options.state_dir + "/api/isb.sock" : options.serve_socket;
  api::HttpServer server(http, rest, mcp,
                         [&web_auth](const api::Request& req, bool) { return web_auth.Authenticate(req); });
  if (auto st = server.Start(); !st.ok()) return Fail(st.error().message);
  if (!preview_base.fronted) previews.access().SetUrlPort(server.port());  // a front's links name its own

  // 7. The reaper.
  Mutex mu;
  CondVar cv;
  bool stopping = false;
  std::thread reaper([&] {
    MutexLock lock(mu);
    while (!cv.WaitForFlag(mu, stopping, options.reap_interval)) {
      lock.Unlock();
      int n = manager.ReapOnce();
      if (n > 0) Log("reaper removed " + std::to_string(n) + " sandbox(es)");
      lock.Lock();
    }
  });

  std::string where = listen->host.find(':') != std::string::npos ? "[" + listen->host + "]" : listen->host;
  Log("listening on http://" + where + ":" + std::to_string(server.port()) +
      " (MCP at /mcp, REST at /api/v1) and unix:" + http.unix_socket_path);
  if (!setup_path->empty())
    Log("no platform admin yet: run `isb setup` on this host (the admin and their first token in one step), or from "
        "elsewhere `isb setup --url URL --setup-token-file FILE --password-stdin` with the one-time setup token in " +
        *setup_path);
  NotifyReady();

  int sig = 0;
  ::sigwait(&stop, &sig);
  Log(std::string("stopping on ") + ::strsignal(sig) + "; sandboxes keep running");
  server.Stop();
  terminals.Stop();  // the shells no connection holds (detached, waiting for a reattach) end too
  {
    MutexLock lock(mu);
    stopping = true;
  }
  cv.NotifyAll();
  reaper.join();
  if (pruner) pruner->Stop();
  return 0;
}

}  // namespace isb::daemon
