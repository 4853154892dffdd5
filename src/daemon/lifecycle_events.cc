// The manager's events onto the bus.
#include "daemon/lifecycle_events.h"

#include "base/metric_families.h"

namespace isb::daemon {
namespace {

void Announce(api::EventBus* bus, const std::string& type, const std::string& org, const std::string& id,
              const std::string& name, const std::string& state) {
  metrics::LifecycleEvents().With({type}).Inc();
  if (bus != nullptr) bus->Publish({.type = type, .org = org, .sandbox = id, .name = name, .state = state});
}

}  // namespace

void PublishLifecycle(api::EventBus* bus, std::string_view event, const std::string& org, const std::string& id,
                      const std::string& name, const std::string& state, bool publishes_ports) {
  if (event == "adopted") return;
  const bool gone = event == "removed" || event == "reaped";
  const std::string type = event == "died" || event == "failed" ? "stopped" : std::string(event);
  Announce(bus, type, org, id, name, gone ? "removed" : state);
  if (publishes_ports && (event == "created" || event == "started")) Announce(bus, "published", org, id, name, state);
}

}  // namespace isb::daemon
