// The event bus's ring and an event's JSON.
#include "api/event_bus.h"

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

uint64_t EventBus::Publish(SandboxEvent event) {
  if (event.at_ms == 0) event.at_ms = NowMs();
  uint64_t id;
  {
    MutexLock lock(mu_);
    id = event.id = ++last_id_;
    ring_.push_back(std::move(event));
    if (ring_.size() > capacity_) ring_.pop_front();
  }
  published_.NotifyAll();
  return id;
}

uint64_t EventBus::LastId() const {
  MutexLock lock(mu_);
  return last_id_;
}

EventBatch EventBus::Since(uint64_t after, const std::function<bool(const std::string& org)>& visible,
                           std::chrono::milliseconds wait) const {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  MutexLock lock(mu_);
  EventBatch batch;
  // The ring holds ids last_id_ - size + 1 .. last_id_: a cursor before the one ahead of the oldest missed some.
  const uint64_t oldest = last_id_ - ring_.size() + 1;
  if (after > last_id_ || (after + 1 < oldest)) {
    batch.reset = true;
    batch.last_id = last_id_;
    return batch;
  }
  while (after == last_id_ && published_.WaitUntil(mu_, deadline)) {
  }
  batch.last_id = last_id_;
  if (after >= last_id_) return batch;
  // The ring may have moved past the cursor while this waited.
  const uint64_t first = last_id_ - ring_.size() + 1;
  if (after + 1 < first) {
    batch.reset = true;
    return batch;
  }
  for (size_t i = after + 1 - first; i < ring_.size(); ++i) {
    if (visible(ring_[i].org)) batch.events.push_back(ring_[i]);
  }
  return batch;
}

}  // namespace isb::api
