// Connections to a port on a sandbox's own loopback: a socket made in the sandbox's network namespace (setns applies
// to the calling thread only, and a socket stays in the namespace it was made in), so a sandbox needs no address,
// route or firewall rule to be reached this way. Published ports (port_publisher.h) and previews (preview_proxy.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "base/fd.h"
#include "base/result.h"

namespace isb::daemon {

// Opens one sandbox's network namespace (O_RDONLY) while it runs, as its runtime does (engine::Runtime::OpenNetwork),
// and fails with kConflict once it does not. Its users call it each time they need the namespace and hold one open
// no longer than they use it (an open namespace outlives its sandbox, and with it the veth inside); a published
// port's listener is the exception, its thread being in the namespace for the listener's life, which unpublishing
// (before the sandbox is killed) ends.
using NetnsOpener = std::function<Result<Fd>()>;

// A non-blocking TCP socket of the calling thread's network namespace, connecting to 127.0.0.1:`port`: connected, or
// in progress (POLLOUT, then SO_ERROR, says how it ended). Errors: the socket or the connect failed at once.
Result<Fd> ConnectLoopback(uint16_t port);

// ConnectLoopback made in the network namespace `netns` on a thread of its own, which ends before this returns: the
// calling thread never leaves its namespace.
Result<Fd> ConnectLoopbackIn(int netns, uint16_t port);

// A TCP connection to `port` on the calling thread's loopback, made within `timeout`: 127.0.0.1 first, then [::1]
// (a dev server may listen on either alone), 127.0.0.1 within half of `timeout`. Non-blocking once returned. Errors:
// neither took the connection, each named with why.
Result<Fd> DialLoopback(uint16_t port, std::chrono::milliseconds timeout);

// DialLoopback in the network namespace `netns` on a thread of its own (as ConnectLoopbackIn). It blocks up to
// `timeout`: call it off any event loop.
Result<Fd> DialLoopbackIn(int netns, uint16_t port, std::chrono::milliseconds timeout);

}  // namespace isb::daemon
