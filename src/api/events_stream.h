// GET /api/v1/events: the event bus as Server-Sent Events, only the orgs the caller may see.
#pragma once

#include <chrono>
#include <functional>

#include "api/event_bus.h"
#include "api/http_message.h"
#include "api/registry.h"

namespace isb::api {

struct EventsStreamOptions {
  std::chrono::milliseconds keep_alive{15'000};  // a comment line after this long without an event
  // How often a quiet stream asks the server whether it is stopping (a write of nothing).
  std::chrono::milliseconds poll{500};
  // Whether the server's tool policy shows the caller sandbox_list (the stream is what it lists, changing); unset:
  // it does. A caller it hides it from gets 404, as for the tool.
  std::function<bool(const Identity& who)> listed{};
};

// Whether `who` may see the events of `org`: as for sandbox_list there (a role in the org, and token scopes that
// cover a read). Platform admins and the host reach every org.
bool MaySeeEventsOf(const Identity& who, const std::string& org);

// The id a reconnecting client resumes after: the Last-Event-ID header, else the last_event_id query parameter (for
// a client that cannot set headers); nullopt when neither is there (the stream starts at the newest event), or when
// the one given is not a number (a reset follows: it names no event this daemon sent).
struct ResumeFrom {
  bool given = false;
  uint64_t after = 0;
  bool valid = true;
};
ResumeFrom ResumePoint(const Request& req);

// A GET: 200 text/event-stream, then for each event `id: N`, `event: sandbox`, `data: <EventJson>`; `event: reset`
// (data {"id":N}) when the id resumed from is not in the ring; a `: keep-alive` comment every keep_alive. Any other
// method: 405; sandbox_list hidden from the caller by the policy: 404. (The HTTP server bounds the streams open and
// ends one whose caller's access changed.)
Response ServeEvents(const EventBus& bus, const Request& req, const Identity& who,
                     const EventsStreamOptions& options = {});

}  // namespace isb::api
