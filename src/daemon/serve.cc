// The daemon: everything `isb serve` starts, in order, and stops.
#include "daemon/serve.h"

#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "api/http_server.h"
#include "api/listen_address.h"
#include "api/mcp.h"
#include "api/registry.h"
#include "api/rest.h"
#include "api/sandbox_tools.h"
#include "base/file.h"
#include "base/random.h"
#include "audit/history.h"
#include "audit/log.h"
#include "daemon/sandbox_manager.h"
#include "engine/cgroup.h"
#include "engine/spawner.h"
#include "store/db.h"
#include "store/migrations.h"

namespace isb::daemon {
namespace {

void Log(const std::string& line) { std::fprintf(stderr, "isb serve: %s\n", line.c_str()); }

int Fail(const std::string& message) {
  std::fprintf(stderr, "isb serve: %s\n", message.c_str());
  return 1;
}

// Until identity exists, TCP callers present the local development token: 32 random bytes, hex, kept 0600 in the
// state dir and shown only to whoever can read that file.
Result<std::string> DevToken(const std::string& state_dir) {
  const std::string path = state_dir + "/dev-token";
  if (auto existing = ReadFile(path); existing.ok() && existing->size() > 16) {
    std::string t = *existing;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t;
  }
  ISB_ASSIGN_OR_RETURN(std::string hex, RandomHex(32));
  std::string token = "isb_dev_" + hex;
  ISB_TRY(WriteFile(path, token + "\n", 0600));
  if (::chmod(path.c_str(), 0600) != 0) return Error::Sys("chmod " + path);
  return token;
}

bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
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
  if (!listen.ok()) return Fail(listen.error().message);
  if (auto st = api::CheckListenAddress(listen->host); !st.ok()) return Fail(st.error().message);

  // 1. The spawner, while this process has one thread: every sandbox is cloned from it.
  engine::Spawner spawner;
  if (auto st = spawner.Start(options.runtime_dir); !st.ok()) return Fail(st.error().message);

  // 2. State.
  if (auto st = MakeDirs(options.state_dir, 0711); !st.ok()) return Fail(st.error().message);
  if (::chmod(options.state_dir.c_str(), 0711) != 0) return Fail("chmod " + options.state_dir + ": " + std::strerror(errno));
  auto db = store::Db::Open(options.state_dir + "/isb.db", store::Migrations());
  if (!db.ok()) return Fail(db.error().message);
  auto token = DevToken(options.state_dir);
  if (!token.ok()) return Fail(token.error().message);
  auto layout = engine::DetectCgroupLayout();
  if (!layout.ok()) return Fail(layout.error().message);

  // 3. Signals are taken by this thread alone (sigwait below): block them before any thread starts.
  sigset_t stop;
  sigemptyset(&stop);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, s);
  ::pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  // 4. Egress: the sandbox network's rules, the proxy and the DNS responder.
  EgressOptions egress_options;
  egress_options.subnet = options.sandbox_subnet;
  egress_options.upstream_ca_file = options.egress_ca;
  egress_options.table = egress_options.ifname_prefix = options.egress_table;
  for (const std::string& p : options.egress_pins) {
    auto pin = egress::ParsePin(p);
    if (!pin.ok()) return Fail("--egress-pin: " + pin.error().message);
    egress_options.pins.push_back(*pin);
  }
  auto egress = EgressService::Start(egress_options);
  if (!egress.ok()) return Fail("egress: " + egress.error().message);
  Log("egress: proxy on port " + std::to_string((*egress)->proxy_port()) + ", DNS on port " +
      std::to_string((*egress)->dns_port()) + ", sandbox subnet " + options.sandbox_subnet);

  // 5. Adopt what the previous daemon left running.
  ManagerOptions manager_options{options.state_dir, options.runtime_dir, {}};
  manager_options.egress = egress->get();
  auto history = audit::History::Open(*db->get());
  if (!history.ok()) return Fail("history: " + history.error().message);
  manager_options.history = history->get();
  SandboxManager manager(manager_options, &spawner, db->get(), *layout);
  auto adopted = manager.Adopt();
  if (!adopted.ok()) return Fail(adopted.error().message);
  Log("sandboxes: " + *adopted);

  // 6. The registry and its surfaces.
  api::Registry registry;
  if (auto st = api::AddSandboxTools(registry, manager); !st.ok()) return Fail(st.error().message);
  // Every call that changes something, and every refusal, whatever the surface.
  auto audit_log = audit::AuditLog::Open(*db->get());
  if (!audit_log.ok()) return Fail("audit log: " + audit_log.error().message);
  using nlohmann::json;
  registry.SetObserver([log = audit_log->get()](std::string_view name, const api::Tool* tool, const json& input,
                                                const api::CallContext& ctx, const Result<json>& result) {
    if (tool != nullptr && tool->annotations.read_only && result.ok()) return;
    audit::Entry e;
    e.org = ctx.org;
    e.actor = ctx.identity.subject;
    e.actor_kind = ctx.identity.superadmin ? "superadmin" : "token";
    e.surface = ctx.surface;
    e.action = std::string(name);
    if (input.is_object()) {
      if (auto it = input.find("sandbox"); it != input.end() && it->is_string()) e.target = *it;
      e.details = input;
    }
    if (name == "sandbox_create" && result.ok()) e.target = result->value("id", "");
    e.outcome = audit::OutcomeOf(result);
    e.request_id = ctx.request_id;
    if (auto r = log->Append(e); !r.ok()) Log("audit: a " + e.action + " call was not recorded: " + r.error().message);
  });
  api::RestApi rest(registry, options.version);
  api::McpOptions mcp_options;
  mcp_options.server_version = options.version;
  api::McpServer mcp(registry, mcp_options);
  const std::string dev_token = *token;
  api::HttpServerOptions http;
  http.host = listen->host;
  http.port = listen->port;
  http.unix_socket_path = options.serve_socket.empty() ? options.state_dir + "/api/isb.sock" : options.serve_socket;
  api::HttpServer server(http, rest, mcp, [dev_token](const api::Request& req, bool) -> Result<api::Identity> {
    std::string auth = req.headers.Get("authorization");
    if (auth.rfind("Bearer ", 0) == 0 && ConstantTimeEqual(auth.substr(7), dev_token))
      return api::Identity{"token:dev", false};
    return Error::Of(Code::kUnauthenticated, "invalid bearer token");
  });
  if (auto st = server.Start(); !st.ok()) return Fail(st.error().message);

  // 7. The reaper.
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::thread reaper([&] {
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, options.reap_interval, [&] { return stopping; })) {
      lock.unlock();
      int n = manager.ReapOnce();
      if (n > 0) Log("reaper removed " + std::to_string(n) + " sandbox(es)");
      lock.lock();
    }
  });

  std::string where = listen->host.find(':') != std::string::npos ? "[" + listen->host + "]" : listen->host;
  Log("listening on http://" + where + ":" + std::to_string(server.port()) + " (MCP at /mcp, REST at /api/v1) and unix:" +
      http.unix_socket_path);
  NotifyReady();

  int sig = 0;
  ::sigwait(&stop, &sig);
  Log(std::string("stopping on ") + ::strsignal(sig) + "; sandboxes keep running");
  server.Stop();
  {
    std::lock_guard lock(mu);
    stopping = true;
  }
  cv.notify_all();
  reaper.join();
  return 0;
}

}  // namespace isb::daemon
