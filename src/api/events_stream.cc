// The events stream: resume point, per-org visibility, and the SSE loop on a worker thread.
#include "api/events_stream.h"

#include <charconv>

#include "api/rest.h"
#include "identity/roles.h"

namespace isb::api {
namespace {

// The tool whose access the stream borrows: what a caller may list, it may watch change.
constexpr std::string_view kListTool = "sandbox_list";

std::optional<uint64_t> ParseId(std::string_view text) {
  uint64_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return id;
}

std::string EventFrame(const SandboxEvent& e) {
  return "id: " + std::to_string(e.id) + "\n" + SseEvent("sandbox", EventJson(e));
}

std::string ResetFrame(uint64_t id) {
  return "id: " + std::to_string(id) + "\n" + SseEvent("reset", "{\"id\":" + std::to_string(id) + "}");
}

}  // namespace

bool MaySeeEventsOf(const Identity& who, const std::string& org) {
  std::optional<identity::Role> role = who.RoleIn(org);
  return role && identity::May(*role, who.scopes, identity::Role::kViewer, identity::ScopeKind::kRead, kListTool).ok();
}

ResumeFrom ResumePoint(const Request& req) {
  std::string text = req.headers.Get("Last-Event-ID");
  if (text.empty()) text = req.QueryParam("last_event_id");
  if (text.empty()) return {};
  std::optional<uint64_t> id = ParseId(text);
  return {.given = true, .after = id.value_or(0), .valid = id.has_value()};
}

Response ServeEvents(const EventBus& bus, const Request& req, const Identity& who, const EventsStreamOptions& options) {
  if (req.method != "GET") return MethodNotAllowed("GET");
  if (options.listed && !options.listed(who)) return NoRouteResponse(req.Path());
  Response r;
  r.headers.Set("Content-Type", "text/event-stream");
  r.headers.Set("Cache-Control", "no-store");
  r.headers.Set("X-Accel-Buffering", "no");  // a reverse proxy in front passes each event on at once
  const ResumeFrom resume = ResumePoint(req);
  // Taken now, not when the stream starts: an event published between the response and its first read is not lost.
  const uint64_t start = resume.given ? resume.after : bus.LastId();
  const bool bad_id = !resume.valid;
  r.stream = [&bus, who, start, bad_id, options](const ChunkWriter& write) {
    auto visible = [&who](const std::string& org) { return MaySeeEventsOf(who, org); };
    uint64_t cursor = start;
    if (bad_id) {
      cursor = bus.LastId();
      if (!write(ResetFrame(cursor))) return;
    }
    auto quiet_since = std::chrono::steady_clock::now();
    for (;;) {
      EventBatch batch = bus.Since(cursor, visible, options.poll);
      cursor = batch.last_id;
      std::string out = batch.reset ? ResetFrame(cursor) : "";
      for (const SandboxEvent& e : batch.events) out += EventFrame(e);
      const auto now = std::chrono::steady_clock::now();
      if (out.empty() && now - quiet_since >= options.keep_alive) out = ": keep-alive\n\n";
      if (!out.empty()) quiet_since = now;
      // An empty write sends nothing: it only says whether the server is stopping.
      if (!write(out)) return;
    }
  };
  return r;
}

}  // namespace isb::api
