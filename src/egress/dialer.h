// The SSRF-safe dialer: every outbound connection of the daemon resolves, checks and connects through it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/fd.h"
#include "base/mutex.h"
#include "base/result.h"
#include "egress/address.h"
#include "egress/pin.h"

namespace isb::egress {

struct Endpoint {
  IpAddress address;
  uint16_t port = 0;
  bool operator==(const Endpoint&) const = default;
};

// Resolves a normalized name to its addresses. Errors: kNotFound (no such name or no address), kUnavailable.
using Resolver = std::function<Result<std::vector<IpAddress>>(const std::string& name)>;
// Connects to one endpoint within `timeout`, returning a connected blocking TCP socket.
using Connector = std::function<Result<Fd>(const Endpoint& to, std::chrono::milliseconds timeout)>;

// getaddrinfo(3) for TCP, addresses in its order without duplicates. Blocks (for as long as the system resolver's
// own timeouts allow): an event loop calls it from a worker thread.
Result<std::vector<IpAddress>> ResolveSystem(const std::string& name);

// A non-blocking connect(2) and poll(2) for at most `timeout`. The socket is close-on-exec and blocking on return.
// Errors: kTimeout, or kUnavailable with errno (ECONNREFUSED, ENETUNREACH, ...).
Result<Fd> ConnectTcp(const Endpoint& to, std::chrono::milliseconds timeout);

// The addresses this host holds on any interface of the calling thread's network namespace (getifaddrs(3)), read
// now. A connection from the daemon to one of them lands on the host's own services, whatever kind of address it is.
using LocalAddresses = std::function<Result<std::vector<IpAddress>>()>;
Result<std::vector<IpAddress>> HostAddresses();

// HostAddresses, read again only once the kernel has announced an address change since the last read: a
// getifaddrs costs tens of microseconds and grows with the interfaces on the host (one per sandbox with a network),
// and a dialer asks at every dial. The announcements (rtnetlink's address groups, on a socket in the network
// namespace of the thread that makes the watch) are queued before the change is visible to anyone, so an address
// added before a dial is always among those checked. Without the socket (or when announcements were lost) it reads
// every time. Thread-safe.
class HostAddressWatch {
 public:
  explicit HostAddressWatch(LocalAddresses read = HostAddresses);
  Result<std::vector<IpAddress>> Get();
  // How many times it has read the addresses (tests).
  uint64_t reads() const { return reads_; }

 private:
  // Whether any announcement arrived since the last call (or the socket cannot say).
  bool Changed() ISB_REQUIRES(mu_);

  LocalAddresses read_;
  Mutex mu_;
  Fd sock_ ISB_GUARDED_BY(mu_);
  bool have_ ISB_GUARDED_BY(mu_) = false;
  std::vector<IpAddress> cached_ ISB_GUARDED_BY(mu_);
  std::atomic<uint64_t> reads_{0};
};

struct DialerOptions {
  std::vector<Pin> pins;
  Resolver resolver = ResolveSystem;  // tests inject their own
  Connector connector = ConnectTcp;   // tests inject their own
  // Unset: the host's, through a HostAddressWatch made with the dialer (in the network namespace of its thread).
  LocalAddresses local_addresses{};  // tests inject their own
  std::chrono::milliseconds connect_timeout{10000};
  // A refusal reads "<refuser> refused 'HOST': <why><refusal_hint>"; the defaults are the egress proxy's.
  std::string refuser = "egress";
  std::string refusal_hint =
      "; a non-public address is reachable only through a pin (isb serve --egress-pin NAME=IP[:PORT])";
};

// Immutable once made; Resolve and Dial may be called from any number of threads at once.
class Dialer {
 public:
  // Errors (kInvalidArgument): two pins for one name.
  static Result<Dialer> Create(DialerOptions options);

  // Where `host`:`port` may be dialled. `host` is a name or an address literal (any spelling, brackets allowed).
  //  - a pinned name: the pin's endpoint, without resolving;
  //  - another name: resolved once; refused if ANY address is not public;
  //  - a literal: refused unless public.
  // A caller that connects by itself (an event loop) connects only to these endpoints and never resolves again, so
  // DNS rebinding cannot swap an address in. Errors: kForbidden naming the host and the range (never the address
  // a name resolved to), kInvalidArgument for a host that is neither a name nor an address, the resolver's errors.
  Result<std::vector<Endpoint>> Resolve(std::string_view host, uint16_t port) const;

  // Resolve, then connect to the endpoints in order until one answers, all within the connect timeout (each try
  // gets an equal share of what is left). Errors: Resolve's, kTimeout, kUnavailable, each naming host:port.
  Result<Fd> Dial(std::string_view host, uint16_t port) const;

 private:
  explicit Dialer(DialerOptions options) : options_(std::move(options)) {}
  // kForbidden when any of `addresses` is one of this host's own.
  Status CheckNotLocal(std::string_view name, const std::vector<IpAddress>& addresses) const;

  DialerOptions options_;
  std::unordered_map<std::string, Pin> pins_;
};

}  // namespace isb::egress
