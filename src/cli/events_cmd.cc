// `isb events`: the stream followed across reconnects, each event printed as it comes.
#include "cli/events_cmd.h"

#include <cstdio>
#include <thread>

#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {

// ToolClient's streaming GET lives with its one user.
Result<HttpResponse> ToolClient::Follow(const std::string& target, const Headers& extra,
                                        const SseHandler& on_event) const {
  HttpRequest req;
  req.target = target;
  req.headers = extra;
  req.headers.emplace_back("Accept", "text/event-stream");
  if (http_.endpoint().unix_path.empty() && !token_.empty())
    req.headers.emplace_back("Authorization", "Bearer " + token_);
  if (!org_.empty()) req.headers.emplace_back("X-Isb-Org", org_);
  return http_.SendStreaming(req, on_event);
}

namespace {

struct EventsFlags {
  bool json = false;
  std::string since;  // resume after this event id
};

constexpr std::chrono::seconds kReconnectPause{1};

// Follows the stream until the daemon refuses it; a dropped connection is taken up again after the last id seen.
int RunEvents(const ConnectFlags& connect, const EventsFlags& f) {
  Result<ToolClient> client = Connect(connect);
  if (!client.ok()) return ReportUsage(client.error());
  std::string last_id = f.since;
  auto on_event = [&](const SseEvent& e) {
    json data = json::parse(e.data, nullptr, false);
    if (data.is_object() && data.contains("id") && data["id"].is_number_unsigned())
      last_id = std::to_string(data["id"].get<uint64_t>());
    if (e.event == "reset") {
      std::fprintf(stderr, "isb: events were missed (the daemon restarted or kept too few); following from event %s\n",
                   last_id.c_str());
    } else if (e.event == "sandbox" && data.is_object()) {
      std::string line = f.json ? e.data : EventLine(data);
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    }
    return true;
  };
  for (;;) {
    Headers extra;
    if (!last_id.empty()) extra.emplace_back("Last-Event-ID", last_id);
    Result<HttpResponse> r = client->Follow("/api/v1/events", extra, on_event);
    if (r.ok() && r->status / 100 != 2) return Report(DaemonError(r->status, r->body));
    if (!r.ok() && last_id.empty() && f.since.empty()) return Report(r.error());  // never connected
    std::this_thread::sleep_for(kReconnectPause);
  }
}

}  // namespace

std::string EventLine(const nlohmann::json& e) {
  std::string line =
      e.value("at", "") + " " + e.value("type", "") + " " + e.value("org", "") + "/" + e.value("sandbox", "");
  if (const std::string name = e.value("name", ""); !name.empty()) line += " (" + name + ")";
  return line + " " + e.value("state", "");
}

void AddEventsCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<EventsFlags>();
  auto connect = SharedConnectFlags();
  auto* cmd = app.add_subcommand("events",
                                 "Follow sandbox lifecycle events (created, started, stopped, ...) as "
                                 "they happen, in the orgs you may see");
  cmd->add_flag("--json", flags->json, "Print each event's JSON, one a line");
  cmd->add_option("--since", flags->since, "Start after this event id (what a previous run printed last)");
  AddConnectOptions(cmd, connect);
  cmd->callback([flags, connect, exit_code] { *exit_code = RunEvents(*connect, *flags); });
}

}  // namespace isb::cli
