// The event bus's ring and an event's JSON.
#include "api/event_bus.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

namespace isb::api {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string Rfc3339Ms(int64_t unix_ms) {
  const time_t seconds = static_cast<time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[96];  // room for any int the compiler can imagine, not only a real date's
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(unix_ms % 1000));
  return buf;
}

std::string EventJson(const SandboxEvent& e) {
  nlohmann::ordered_json j = {
      {"id", e.id},       {"type", e.type},          {"org", e.org}, {"sandbox", e.sandbox}, {"name", e.name},
      {"state", e.state}, {"at", Rfc3339Ms(e.at_ms)}};
  // Invalid UTF-8 (a name is checked at create; this is a last guard) is replaced, never a throw.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

uint64_t UnixMicros() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

EventBus::EventBus(size_t capacity, Clock clock) : capacity_(capacity == 0 ? 1 : capacity), clock_(std::move(clock)) {
  MutexLock lock(mu_);
  floor_ = horizon_ = last_id_ = clock_ ? clock_() : 0;
}

uint64_t EventBus::Horizon() const {
  horizon_ = std::max({horizon_, last_id_, clock_ ? clock_() : 0});
  return horizon_;
}

uint64_t EventBus::Publish(SandboxEvent event) {
  if (event.at_ms == 0) event.at_ms = NowMs();
  uint64_t id;
  {
    MutexLock lock(mu_);
    id = event.id = std::max({last_id_, horizon_, clock_ ? clock_() : 0}) + 1;
    last_id_ = id;
    ring_.push_back(std::move(event));
    if (ring_.size() > capacity_) {
      floor_ = ring_.front().id;
      ring_.pop_front();
    }
  }
  published_.NotifyAll();
  return id;
}

uint64_t EventBus::LastId() const {
  MutexLock lock(mu_);
  return Horizon();
}

EventBatch EventBus::Since(uint64_t after, const std::function<bool(const std::string& org)>& visible,
                           std::chrono::milliseconds wait) const {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  MutexLock lock(mu_);
  EventBatch batch;
  if (after < floor_ || after > std::max(horizon_, last_id_)) {
    batch.reset = true;
    batch.last_id = Horizon();
    return batch;
  }
  while (after >= last_id_ && published_.WaitUntil(mu_, deadline)) {
  }
  // The ring may have moved past the cursor while this waited.
  if (after < floor_) {
    batch.reset = true;
    batch.last_id = Horizon();
    return batch;
  }
  const auto first =
      std::upper_bound(ring_.begin(), ring_.end(), after, [](uint64_t id, const SandboxEvent& e) { return id < e.id; });
  for (auto it = first; it != ring_.end(); ++it) {
    if (visible(it->org)) batch.events.push_back(*it);
  }
  batch.last_id = std::max(after, Horizon());
  return batch;
}

}  // namespace isb::api
