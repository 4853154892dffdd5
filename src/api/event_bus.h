// The event bus: sandboxes' lifecycle changes, numbered and kept in a bounded ring for GET /api/v1/events.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "base/mutex.h"

namespace isb::api {

// One lifecycle change of a sandbox.
struct SandboxEvent {
  uint64_t id = 0;   // set by EventBus::Publish: 1, 2, 3, ... for the daemon's life
  std::string type;  // created, started, stopped, oom, reaped, removed, egress_changed, published, extended
  std::string org, sandbox, name, state;
  int64_t at_ms = 0;  // unix milliseconds; Publish sets it when 0
};

// {"id":N,"type":"…","org":"…","sandbox":"…","name":"…","state":"…","at":"2026-12-05T16:52:54.123Z"}: one line.
std::string EventJson(const SandboxEvent& event);
// Unix milliseconds as RFC 3339 in UTC with milliseconds: "2026-12-05T16:52:54.123Z".
std::string Rfc3339Ms(int64_t unix_ms);

// What a reader gets: the events after its cursor that it may see, and where its cursor is now.
struct EventBatch {
  // The cursor is not in the ring: older than the oldest event kept (some were dropped) or past the newest (another
  // daemon's id). The reader has missed an unknown number of events and should reload what it shows; `events` is
  // empty and `last_id` is the newest id, to go on from.
  bool reset = false;
  std::vector<SandboxEvent> events;
  uint64_t last_id = 0;  // the newest id looked at, seen or not: the cursor to pass next
};

// Thread-safe. Publishers never wait for readers: the ring drops its oldest event when full.
class EventBus {
 public:
  static constexpr size_t kDefaultCapacity = 4096;
  explicit EventBus(size_t capacity = kDefaultCapacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // Numbers the event, stamps its time when unset, keeps it and wakes the readers. Returns its id.
  uint64_t Publish(SandboxEvent event);
  // The newest id (0 before any event).
  uint64_t LastId() const;
  // The events after `after` for which `visible(org)` holds, waiting up to `wait` for one to be published when
  // there are none yet (0: no wait). Events `visible` refuses still move the cursor.
  EventBatch Since(uint64_t after, const std::function<bool(const std::string& org)>& visible,
                   std::chrono::milliseconds wait) const;

 private:
  const size_t capacity_;
  mutable Mutex mu_;
  mutable CondVar published_;
  std::deque<SandboxEvent> ring_ ISB_GUARDED_BY(mu_);
  uint64_t last_id_ ISB_GUARDED_BY(mu_) = 0;
};

}  // namespace isb::api
