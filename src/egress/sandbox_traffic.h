// The bytes the egress proxy relayed for each sandbox, each way: added by the relays as they move them (ByteCount),
// read by the daemon's usage sampler.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/mutex.h"

namespace isb::egress {

// One sandbox's counters. Application bytes, as isb_proxy_bytes_total counts them: a tunnel's as they pass (TLS
// records included), an intercepted connection's in the clear.
struct SandboxBytes {
  std::atomic<uint64_t> up{0};    // from the sandbox towards the internet
  std::atomic<uint64_t> down{0};  // from the internet to the sandbox
};

struct TrafficTotals {
  uint64_t up = 0, down = 0;
  bool operator==(const TrafficTotals&) const = default;
};

// Thread-safe. Only tracked sandboxes are counted, so the table holds no more entries than there are sandboxes with
// a network: the daemon tracks one when it gives it a network and forgets it when it releases it.
class SandboxTraffic {
 public:
  // Counting of `sandbox` starts at 0; a sandbox tracked already keeps its counts. (A stop does not forget a sandbox,
  // only its removal does: a stopped sandbox started again goes on from its counts.)
  void Track(const std::string& sandbox);
  // The sandbox is gone: its entry goes. A connection of it still open counts on into the counters it holds,
  // which nobody reads any more and which go with the connection.
  void Forget(const std::string& sandbox);
  // The counters a new connection of `sandbox` adds to; null when it is not tracked (nothing is counted for it).
  std::shared_ptr<SandboxBytes> Find(const std::string& sandbox) const;
  // What was counted for `sandbox` so far; nullopt when it is not tracked.
  std::optional<TrafficTotals> Read(const std::string& sandbox) const;

 private:
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<SandboxBytes>> by_sandbox_ ISB_GUARDED_BY(mu_);
};

}  // namespace isb::egress
