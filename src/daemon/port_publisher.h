// Published ports: a listener on a host address for a TCP port inside a sandbox. Each accepted connection is relayed
// to 127.0.0.1:<port> in the sandbox's own network namespace, through a socket made in that namespace, so a sandbox
// needs no address, route or firewall rule for it and its egress policy is unchanged.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/sandboxes.h"
#include "base/mutex.h"
#include "base/result.h"
#include "daemon/netns_dial.h"

namespace isb::daemon {

class PortPublisher {
 public:
  // A relayed connection on which nothing moved either way for `idle_timeout` is closed, so idle connections cannot
  // hold a port's kMaxConnections for good; one ended both ways, or reset by either side with nothing left to deliver,
  // is closed at once.
  // At most `max_open` relayed connections at once across every published port (each holds two of the daemon's
  // descriptors): more are accepted and closed at once, so many sandboxes' ports cannot take the daemon's descriptors.
  explicit PortPublisher(std::chrono::milliseconds idle_timeout = kIdleTimeout, size_t max_open = kMaxOpen);
  PortPublisher(const PortPublisher&) = delete;
  PortPublisher& operator=(const PortPublisher&) = delete;
  // Closes every listener and connection.
  ~PortPublisher();

  // Listens on each of `ports` for sandbox `id`, whose network namespace `netns` opens (once per port, after the
  // port is bound; a sandbox that no longer runs is refused, kConflict). All or none: a port that cannot be bound is
  // kConflict naming it ("ports[0]: 127.0.0.1:8080: Address already in use") and nothing stays published.
  // Publishing an id again replaces what it had.
  Status Publish(const std::string& id, const NetnsOpener& netns, const std::vector<api::SpecPort>& ports);
  // Closes the sandbox's listeners and its open connections. Nothing published: nothing to do.
  void Unpublish(const std::string& id);

  // At most this many connections at once per published port; more are accepted and closed at once.
  static constexpr size_t kMaxConnections = 64;
  static constexpr size_t kMaxOpen = 4096;
  static constexpr std::chrono::milliseconds kIdleTimeout = std::chrono::minutes(15);

 private:
  class Listener;
  const std::chrono::milliseconds idle_timeout_;
  const size_t max_open_;
  std::atomic<size_t> open_{0};  // relayed connections open, every listener's (declared before the listeners)
  Mutex mu_;
  std::map<std::string, std::vector<std::unique_ptr<Listener>>> published_ ISB_GUARDED_BY(mu_);
};

}  // namespace isb::daemon
