#include "daemon/port_publisher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <list>
#include <thread>

#include "base/fd.h"
#include "daemon/netns_dial.h"

namespace isb::daemon {
namespace {

constexpr size_t kChunk = 64 * 1024;
// Reported by poll whatever was asked for, at every call for as long as they hold (level-triggered).
constexpr short kHangup = POLLHUP | POLLERR;
using Clock = std::chrono::steady_clock;

// One relayed connection: `client` accepted on the host, `inside` made in the sandbox's network namespace.
struct Conn {
  Fd client, inside;
  bool connecting = true;
  bool client_eof = false, inside_eof = false;
  // The socket reported POLLHUP or POLLERR: a TCP socket does only once nothing can be sent on it any more (reset,
  // failed, or shut down both ways), and what is left to read from it is read at once, so it is polled only while
  // it is to be read; a socket polled meanwhile would wake the thread at every poll.
  bool client_hung_up = false, inside_hung_up = false;
  std::string to_inside{}, to_client{};          // read from one side, not yet written to the other
  Clock::time_point last_active = Clock::now();  // when bytes or an end of stream last moved
};

// A listening socket on `address`:`port`, or the reason it cannot be.
Result<Fd> Listen(const std::string& address, uint16_t port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof *v4;
  } else if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof *v6;
  } else {
    return Error::Of(Code::kInvalidArgument, "'" + address + "' is not an IP address");
  }
  Fd s(::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.valid()) return Error::Sys("socket");
  int one = 1;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ss.ss_family == AF_INET6) ::setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(s.get(), 64) != 0)
    return Error::Of(Code::kConflict, std::strerror(errno));
  return s;
}

}  // namespace

// A published port: its listening socket and the thread that accepts on it and relays every connection. The thread
// lives in the sandbox's network namespace (setns applies to the calling thread only), so each socket it makes is
// made there; the listening socket was made on the host before.
class PortPublisher::Listener {
 public:
  Listener(Fd listen, Fd netns, uint16_t port, std::chrono::milliseconds idle_timeout, std::atomic<size_t>& open,
           size_t max_open)
      : listen_(std::move(listen)),
        netns_(std::move(netns)),
        port_(port),
        idle_timeout_(idle_timeout),
        open_(open),
        max_open_(max_open) {
    stop_.Reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    thread_ = std::thread([this] { Run(); });
  }
  ~Listener() {
    uint64_t one = 1;
    if (::write(stop_.get(), &one, sizeof one) < 0) {
      // An eventfd write fails only on overflow, which one write cannot reach.
    }
    thread_.join();
  }

 private:
  void Run() {
    if (::setns(netns_.get(), CLONE_NEWNET) != 0) {
      listen_.Reset();  // nothing can be relayed: callers are refused rather than left waiting
      return;
    }
    std::list<Conn> conns;
    struct Held {  // this listener's share of the publisher's count, given back however Run ends
      std::atomic<size_t>& open;
      const std::list<Conn>& conns;
      ~Held() { open -= conns.size(); }
    } held{open_, conns};
    std::vector<pollfd> fds;
    std::vector<Conn*> owners;
    for (;;) {
      fds.assign({{stop_.get(), POLLIN, 0}, {listen_.get(), POLLIN, 0}});
      owners.clear();
      for (Conn& c : conns) {
        short client_ev = 0, inside_ev = 0;
        if (c.connecting) {
          inside_ev = POLLOUT;
        } else {
          if (c.to_inside.empty() && !c.client_eof) client_ev |= POLLIN;
          if (!c.to_client.empty()) client_ev |= POLLOUT;
          if (c.to_client.empty() && !c.inside_eof) inside_ev |= POLLIN;
          if (!c.to_inside.empty()) inside_ev |= POLLOUT;
        }
        // A negative fd is skipped by poll.
        fds.push_back({c.client_hung_up && client_ev == 0 ? -1 : c.client.get(), client_ev, 0});
        fds.push_back({c.inside_hung_up && inside_ev == 0 ? -1 : c.inside.get(), inside_ev, 0});
        owners.push_back(&c);
      }
      if (::poll(fds.data(), fds.size(), PollTimeout(conns)) < 0 && errno != EINTR) return;
      if (fds[0].revents != 0) return;
      if (fds[1].revents & POLLIN) Accept(conns);
      const Clock::time_point now = Clock::now();
      for (size_t i = 0; i < owners.size(); ++i) {
        Conn& c = *owners[i];
        const short client_rev = fds[2 + 2 * i].revents, inside_rev = fds[3 + 2 * i].revents;
        if (client_rev != 0 || inside_rev != 0) Step(c, client_rev, inside_rev, now);
        // An event that moved nothing is no activity.
        if (c.client.valid() && now - c.last_active >= idle_timeout_) {
          c.client.Reset();
          c.inside.Reset();
        }
      }
      open_ -= conns.remove_if([](const Conn& c) { return !c.client.valid(); });
    }
  }

  // Until the first connection would have been idle too long; forever when there is none.
  int PollTimeout(const std::list<Conn>& conns) const {
    if (conns.empty()) return -1;
    Clock::time_point first = conns.front().last_active;
    for (const Conn& c : conns) first = std::min(first, c.last_active);
    auto left = std::chrono::ceil<std::chrono::milliseconds>(first + idle_timeout_ - Clock::now());
    return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
  }

  void Accept(std::list<Conn>& conns) {
    for (;;) {
      Fd client(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (!client.valid()) return;
      if (conns.size() >= kMaxConnections || !Reserve()) continue;  // closed at once
      Result<Fd> inside = ConnectLoopback(port_);                   // this thread is in the sandbox's namespace
      if (!inside.ok()) {
        --open_;
        continue;
      }
      conns.push_back(Conn{std::move(client), std::move(*inside)});
    }
  }

  // Takes a place in the publisher's count before the connection is made, so that listeners accepting at once on
  // other ports never pass max_open_ between them, and a connection the sandbox has seen is already counted.
  bool Reserve() {
    size_t n = open_.load();
    do {
      if (n >= max_open_) return false;
    } while (!open_.compare_exchange_weak(n, n + 1));
    return true;
  }

  // Moves what can be moved for one connection at `now`; closes it (client invalid) when it is over or failed.
  static void Step(Conn& c, short client_rev, short inside_rev, Clock::time_point now) {
    auto close = [&] {
      c.client.Reset();
      c.inside.Reset();
    };
    if (c.connecting) {
      if (client_rev & kHangup) return close();  // the client reset before the sandbox answered
      if (inside_rev == 0) return;
      int err = 0;
      socklen_t len = sizeof err;
      if (::getsockopt(c.inside.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) return close();
      c.connecting = false;
      c.last_active = now;
      return;
    }
    if (client_rev & kHangup) HangUp(c.client_hung_up, c.to_client, c.inside_eof);
    if (inside_rev & kHangup) HangUp(c.inside_hung_up, c.to_inside, c.client_eof);
    bool moved = false;
    if (!Move(c.client.get(), c.inside.get(), client_rev, inside_rev, c.to_inside, c.client_eof, moved) ||
        !Move(c.inside.get(), c.client.get(), inside_rev, client_rev, c.to_client, c.inside_eof, moved))
      return close();
    if (moved) c.last_active = now;
    if (c.client_eof && c.inside_eof && c.to_inside.empty() && c.to_client.empty()) close();
  }

  // Nothing more reaches a hung up socket: what was on its way to it is dropped and the other socket is no longer
  // read, while what the hung up one sent is still delivered.
  static void HangUp(bool& hung_up, std::string& to_it, bool& peer_eof) {
    hung_up = true;
    to_it.clear();
    peer_eof = true;
  }

  // One direction, from `src` to `dst` through `buf`; `moved` is set when bytes or the end of stream went through.
  // False when the connection failed.
  static bool Move(int src, int dst, short src_rev, short dst_rev, std::string& buf, bool& eof, bool& moved) {
    if (!buf.empty() && (dst_rev & (POLLOUT | kHangup))) {
      ssize_t n = ::send(dst, buf.data(), buf.size(), MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
      if (n > 0) {
        buf.erase(0, static_cast<size_t>(n));
        moved = true;
      }
      if (buf.empty() && eof) ::shutdown(dst, SHUT_WR);
    }
    if (buf.empty() && !eof && (src_rev & (POLLIN | kHangup))) {
      buf.resize(kChunk);
      ssize_t n = ::recv(src, buf.data(), buf.size(), 0);
      if (n < 0) {
        buf.clear();
        return errno == EAGAIN || errno == EINTR;
      }
      buf.resize(static_cast<size_t>(n));
      moved = true;
      if (n == 0) {
        eof = true;
        ::shutdown(dst, SHUT_WR);
      }
    }
    return true;
  }

  Fd listen_, netns_, stop_;
  uint16_t port_;
  std::chrono::milliseconds idle_timeout_;
  std::atomic<size_t>& open_;
  const size_t max_open_;
  std::thread thread_;
};

PortPublisher::PortPublisher(std::chrono::milliseconds idle_timeout, size_t max_open)
    : idle_timeout_(idle_timeout), max_open_(max_open) {}

PortPublisher::~PortPublisher() {
  MutexLock lock(mu_);
  published_.clear();
}

Status PortPublisher::Publish(const std::string& id, const NetnsOpener& netns_of,
                              const std::vector<api::SpecPort>& ports) {
  Unpublish(id);
  if (ports.empty()) return {};
  std::vector<std::unique_ptr<Listener>> listeners;
  for (size_t i = 0; i < ports.size(); ++i) {
    const api::SpecPort& p = ports[i];
    const std::string field = "ports[" + std::to_string(i) + "]";
    auto listen = Listen(p.host_address, p.host_port);
    if (!listen.ok()) {
      return Error::Of(listen.error().code, field + ": " + p.host_address + ":" + std::to_string(p.host_port) + ": " +
                                                listen.error().message);
    }
    Result<Fd> netns = netns_of();
    if (!netns.ok()) {
      Error e = netns.error();
      e.message = field + ": the sandbox's network namespace: " + e.message;
      return e;
    }
    listeners.push_back(std::make_unique<Listener>(std::move(*listen), std::move(*netns), p.sandbox_port, idle_timeout_,
                                                   open_, max_open_));
  }
  MutexLock lock(mu_);
  published_[id] = std::move(listeners);
  return {};
}

void PortPublisher::Unpublish(const std::string& id) {
  std::vector<std::unique_ptr<Listener>> gone;
  {
    MutexLock lock(mu_);
    auto it = published_.find(id);
    if (it == published_.end()) return;
    gone = std::move(it->second);
    published_.erase(it);
  }
  // Joined outside the lock.
}

}  // namespace isb::daemon
