// The egress proxy: the only way out of a sandbox with an egress list. It listens on one port that the host-side
// rules redirect each sandbox's listed ports to, learns the sandbox from the address a connection arrives at (the host
// end of its veth; nothing inside the sandbox is trusted to say who it is) and the port it asked for from conntrack,
// reads just enough of the first bytes to learn the name asked for, asks the policy, and for an allowed name dials it
// and relays bytes both ways untouched (splice: they never pass through user space). On a plain HTTP connection
// every request goes through the message relay (message_relay.h: bodies followed by their framing, bulk still
// spliced, unless a filter changes them): a request
// for another host than the connection's is refused with a 403 and the connection closed, and a judged name's
// requests are each decided.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/fd.h"
#include "base/result.h"

namespace isb::egress {

class CertMinter;
class MessageFilter;
class SandboxTraffic;

// What the first bytes of a connection say it wants.
struct Sniff {
  enum class State { kNeedMore, kDone, kMalformed } state = State::kNeedMore;
  enum class Kind { kTls, kHttp, kConnect, kUnknown } kind = Kind::kUnknown;
  std::string host;    // empty: the protocol carries no name
  uint16_t port = 0;   // 0: the port the sandbox connected to
  std::string reason;  // kMalformed: why, one line
  // Bytes to send upstream in place of the bytes read so far (an explicit proxy's request rewritten to origin form);
  // unset: forward what was read as it is. For CONNECT: the bytes after the request head.
  std::optional<std::string> upstream_prefix;
  // A plain HTTP request's method and path (for the judge); empty for TLS, CONNECT and protocols without a name.
  std::string method, path;
};

// `bytes` is everything read so far; `port` the port the sandbox asked for; `explicit_proxy` whether it came to the
// explicit proxy port (HTTP_PROXY), where CONNECT and absolute-form requests are expected.
using Classifier = std::function<Sniff(std::string_view bytes, uint16_t port, bool explicit_proxy)>;

struct Admission {
  bool allow = false;
  std::string reason;  // one line, shown to the client on refusal
  // The decision depended on the request's method and path (a judged name): on a plain HTTP connection, each later
  // request is decided again. Otherwise later requests are checked only for naming the connection's host.
  bool per_request = false;
};

struct ProxyHooks {
  Classifier classify;
  // The sandbox whose veth ends at `host_end` (host byte order); nullopt closes the connection at once.
  std::function<std::optional<std::string>(uint32_t host_end)> sandbox;
  // For a connection without a name: the single exact host the sandbox lists on `port`, if there is exactly one.
  std::function<std::optional<std::string>(const std::string& sandbox, uint16_t port)> host_for_port;
  // Run off the event loop (they may block: the judge asks over the network; the dialer resolves and connects).
  // `method` and `path` are the Sniff's: empty unless the request is plain HTTP.
  std::function<Admission(const std::string& sandbox, const std::string& host, uint16_t port, const std::string& method,
                          const std::string& path)>
      decide;
  std::function<Result<Fd>(const std::string& host, uint16_t port)> dial;
  // Called for each refusal; `first_in_window` is true at most once per sandbox and target every 30 s (log those).
  std::function<void(const std::string& sandbox, const std::string& target, const std::string& reason,
                     bool first_in_window)>
      on_deny;
  // Whether an allowed TLS connection with this server name (or a CONNECT to this name) is intercepted
  // (ProxyOptions::intercept) rather than relayed untouched. Called on the event loop: it must not block. Unset:
  // nothing is intercepted.
  std::function<bool(const std::string& sandbox, const std::string& host, uint16_t port)> intercept;
};

// How intercepted connections are made (src/egress/intercept.h).
struct InterceptOptions {
  std::shared_ptr<CertMinter> minter;  // the sandboxes' CAs; required when ProxyHooks::intercept is set
  std::string upstream_ca_file;        // a PEM bundle trusted for origins beside the system roots; empty: none
  int idle_timeout_ms = 60000;         // either side silent this long ends the connection
};

struct ProxyOptions {
  std::string listen_address = "0.0.0.0";
  uint16_t port = 0;              // 0: any free port (tests)
  uint16_t explicit_port = 3128;  // HTTP_PROXY inside the sandbox points here
  int threads = 2;                // event-loop threads
  int blocking_threads = 8;       // for decide and dial
  // One sandbox's share: at most this many of its decides and dials run at once (the rest wait their turn), so a
  // sandbox dialling names that never answer cannot hold every blocking thread; and at most this many of its
  // connections are open at once (past it, a new one is closed at once), so it cannot take the daemon's descriptors.
  int blocking_per_sandbox = 4;
  int connections_per_sandbox = 4096;
  // A relayed connection (not intercepted: those have InterceptOptions::idle_timeout_ms) that moves no byte either
  // way for this long is closed, so abandoned connections do not hold descriptors for ever.
  int relay_idle_ms = 3600 * 1000;
  size_t max_head = 64 * 1024;  // the most read before a name must be known
  int sniff_timeout_ms = 10000;
  InterceptOptions intercept;
  // Every request on a plain HTTP connection and every message on an intercepted one pass it (message_filter.h);
  // null: every message is forwarded unchanged. Responses on plain HTTP are relayed untouched, unfiltered.
  std::shared_ptr<MessageFilter> filter;
};

struct ProxyStats {
  std::atomic<uint64_t> accepted{0}, allowed{0}, denied{0}, active{0}, bytes_up{0}, bytes_down{0};
  std::atomic<uint64_t> idle_closed{0};  // relayed connections closed for moving nothing for relay_idle_ms
};

// A process that runs a Proxy must ignore SIGPIPE (`isb serve` does): a splice into a socket its peer has reset
// raises it, and splice has no MSG_NOSIGNAL.
class Proxy {
 public:
  static Result<std::unique_ptr<Proxy>> Start(ProxyOptions options, ProxyHooks hooks);
  ~Proxy();  // stops accepting, closes every connection, joins its threads
  uint16_t port() const;
  const ProxyStats& stats() const;
  // Each tracked sandbox's bytes, counted where they are relayed. ProxyStats' bytes_up and bytes_down count the same
  // bytes, but an intercepted connection's only when it ends: while one is open, its sandbox's count is ahead.
  SandboxTraffic& traffic();

  class Impl;

 private:
  explicit Proxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The bytes the proxy answers a refused request with.
std::string TlsDenyAlert();
std::string HttpDenyResponse(int status, const std::string& reason);

}  // namespace isb::egress
