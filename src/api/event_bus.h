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
  uint64_t id = 0;   // set by EventBus::Publish: increasing (see EventBus)
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
  // The cursor is not this bus's: older than the oldest event kept (some were dropped), from before the bus began
  // (an earlier daemon's id) or past what the bus has handed out (another daemon's). The reader has missed an unknown
  // number of events and should reload what it shows; `events` is empty and `last_id` is the newest id, to go on from.
  bool reset = false;
  std::vector<SandboxEvent> events;
  uint64_t last_id = 0;  // the cursor to pass next: past every id looked at, seen or not (see EventBus::LastId)
};

// Unix microseconds: the daemon's event ids (see EventBus).
uint64_t UnixMicros();

// Thread-safe. Publishers never wait for readers: the ring drops its oldest event when full.
//
// Ids and cursors. With a clock (the daemon passes UnixMicros), an event's id is the clock's reading when it was
// published (one more than the last id when that is not past it), and every cursor the bus hands out is at least the
// clock's reading: an id tells nothing of how many events other orgs had, and the ids of a daemon started later
// (with the clock) are past those of one before it, so a cursor from before a restart is reset, never mistaken for a
// point in the new daemon's ring. Without a clock (tests): 1, 2, 3, ...
class EventBus {
 public:
  static constexpr size_t kDefaultCapacity = 4096;
  using Clock = std::function<uint64_t()>;
  explicit EventBus(size_t capacity = kDefaultCapacity, Clock clock = nullptr);

  // Numbers the event, stamps its time when unset, keeps it and wakes the readers. Returns its id.
  uint64_t Publish(SandboxEvent event);
  // A cursor to read from now on: every event published later has an id past it (before any event, with no clock:
  // 0).
  uint64_t LastId() const;
  // The events after `after` for which `visible(org)` holds, waiting up to `wait` for one to be published when
  // there are none yet (0: no wait). Events `visible` refuses still move the cursor.
  EventBatch Since(uint64_t after, const std::function<bool(const std::string& org)>& visible,
                   std::chrono::milliseconds wait) const;

 private:
  // The cursor to hand out now, which every later id passes. Holds mu_.
  uint64_t Horizon() const ISB_REQUIRES(mu_);

  const size_t capacity_;
  const Clock clock_;
  mutable Mutex mu_;
  mutable CondVar published_;
  std::deque<SandboxEvent> ring_ ISB_GUARDED_BY(mu_);
  uint64_t last_id_ ISB_GUARDED_BY(mu_) = 0;
  // A cursor below it is not served: the newest id dropped from the ring, or the clock's reading at the start.
  uint64_t floor_ ISB_GUARDED_BY(mu_) = 0;
  // The largest cursor handed out: later ids are past it.
  mutable uint64_t horizon_ ISB_GUARDED_BY(mu_) = 0;
};

}  // namespace isb::api
