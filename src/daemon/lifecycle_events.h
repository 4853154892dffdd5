// The manager's lifecycle events as the event bus carries them (GET /api/v1/events) and as they are counted.
#pragma once

#include <string>
#include <string_view>

#include "api/event_bus.h"

namespace isb::daemon {

// `event` as the manager records it (sandbox_events): died and failed are published as stopped, removed and reaped
// with the state "removed"; adopted is not published (nothing changed). After created or started, a sandbox that
// publishes ports has a "published" event too. Counted in isb_lifecycle_events_total either way; `bus` null: only
// counted.
void PublishLifecycle(api::EventBus* bus, std::string_view event, const std::string& org, const std::string& id,
                      const std::string& name, const std::string& state, bool publishes_ports);

}  // namespace isb::daemon
