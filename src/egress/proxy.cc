// One coroutine per connection on a small io_context; policy and dialing on a pool of blocking threads.
#include "egress/proxy.h"

// netinet/in.h before the kernel header, which then leaves glibc's definitions alone.
#include <netinet/in.h>
#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "base/ascii.h"
#include "egress/classify.h"
#include "egress/edge_read.h"
#include "egress/http_body.h"
#include "egress/http_response.h"
#include "egress/intercept.h"

namespace isb::egress {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);
// How long the accept loop waits after a failed accept (EMFILE, ENFILE, ENOBUFS) before it tries again.
constexpr auto kAcceptRetry = std::chrono::milliseconds(50);
// How often a sandbox's decide or dial waiting for its share of the blocking pool looks again.
constexpr auto kBlockingRetry = std::chrono::milliseconds(10);
const std::string kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";

std::string TlsDenyAlert() {
  // A TLS record (alert, TLS 1.0 record version as in a first flight) with a fatal unrecognized_name alert.
  return std::string("\x15\x03\x01\x00\x02\x02\x70", 7);
}

std::string HttpDenyResponse(int status, const std::string& reason) {
  std::string body = "isb: " + reason + "\n";
  std::string text = status == 403   ? "Forbidden"
                     : status == 400 ? "Bad Request"
                     : status == 421 ? "Misdirected Request"
                                     : "Bad Gateway";
  return "HTTP/1.1 " + std::to_string(status) + " " + text + "\r\nContent-Type: text/plain\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

class Proxy::Impl {
 public:
  Impl(ProxyOptions o, ProxyHooks h)
      : opts_(std::move(o)),
        hooks_(std::move(h)),
        loops_(MakeLoops(opts_.threads)),
        acceptor_(*loops_[0]),
        pool_(opts_.blocking_threads) {}

  ~Impl() {
    asio::post(*loops_[0], [this] {
      boost::system::error_code ec;
      acceptor_.close(ec);
    });
    for (auto& loop : loops_) loop->stop();
    for (std::thread& t : threads_) t.join();
    pool_.join();
  }

  Status Listen() {
    if (hooks_.intercept) {
      ISB_ASSIGN_OR_RETURN(interceptor_, Interceptor::Create(opts_.intercept));
    }
    boost::system::error_code ec;
    tcp::endpoint ep(asio::ip::make_address(opts_.listen_address, ec), opts_.port);
    if (ec) return Error::Of(Code::kInvalidArgument, "proxy listen address: " + ec.message());
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(4096, ec);
    if (ec) return Error::Of(Code::kUnavailable, "proxy cannot listen on port " + std::to_string(opts_.port) + ": " + ec.message());
    port_ = acceptor_.local_endpoint().port();
    asio::co_spawn(*loops_[0], Accept(), asio::detached);
    for (auto& loop : loops_) {
      // Kept running while it has no connection, until the destructor stops it.
      threads_.emplace_back([l = loop.get()] {
        auto busy = asio::make_work_guard(*l);
        l->run();
      });
    }
    return {};
  }

  uint16_t port() const { return port_; }
  const ProxyStats& stats() const { return stats_; }

 private:
  // One io_context per event-loop thread, each run by that thread alone (concurrency hint 1).
  static std::vector<std::unique_ptr<asio::io_context>> MakeLoops(int threads) {
    std::vector<std::unique_ptr<asio::io_context>> loops;
    for (int i = 0; i < std::max(threads, 1); ++i) {
      loops.push_back(std::make_unique<asio::io_context>(1));
      // Its reactor (an epoll, a timer and a wake-up descriptor) made now rather than at its first connection, so
      // the proxy's descriptors are as many before any connection as after the last one has gone.
      asio::use_service<asio::detail::reactor>(*loops.back());
    }
    return loops;
  }

  asio::awaitable<void> Accept() {
    for (size_t next = 0;; ++next) {
      // Each connection lives on one event loop, whose single thread runs all of its coroutines: the two directions
      // of a relay (and the sniff's read and timer) are separate coroutines, and were two threads to run them at the
      // same time, one could close the sockets while the other is in a splice on their descriptor numbers (see
      // Pump). A loop of its own per thread also spares every step of every connection a strand's lock and queue.
      asio::io_context& loop = *loops_[next % loops_.size()];
      auto [ec, socket] = co_await acceptor_.async_accept(loop.get_executor(), kAwait);
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
      if (ec) {
        // EMFILE and friends: a later accept may succeed. Not at once: with the descriptor table full and clients
        // queued, retrying straight away would fail again and again and spin a core.
        asio::steady_timer pause(co_await asio::this_coro::executor, kAcceptRetry);
        co_await pause.async_wait(kAwait);
        continue;
      }
      ++stats_.accepted;
      asio::co_spawn(socket.get_executor(), Handle(std::move(socket)), asio::detached);
    }
  }

  // Runs `f` on the blocking pool; the awaiting coroutine resumes on its own executor with f's result.
  template <typename F, typename R = std::invoke_result_t<F>>
  auto OffLoop(F f) {
    return asio::async_initiate<const asio::use_awaitable_t<>&, void(std::optional<R>)>(
        [this](auto handler, F fn) {
          asio::post(pool_, [fn = std::move(fn), handler = std::move(handler)]() mutable {
            std::optional<R> r(fn());
            auto ex = asio::get_associated_executor(handler);
            asio::post(ex, [r = std::move(r), handler = std::move(handler)]() mutable { std::move(handler)(std::move(r)); });
          });
        },
        asio::use_awaitable, std::move(f));
  }

  // g++ 12 miscompiles some temporaries and captures inside coroutines (a string captured from a coroutine's frame
  // is copied bitwise; a temporary in a co_await inside a condition is destroyed twice). So in coroutines here:
  // closures are made by these plain functions, strings sent are named locals, and no co_await sits in a condition.
  std::function<Admission()> DecideCall(const std::string& sandbox, const std::string& host, uint16_t port,
                                        const Sniff& sniff) {
    return [this, sandbox, host, port, method = sniff.method, path = sniff.path] {
      return hooks_.decide(sandbox, host, port, method, path);
    };
  }
  std::function<Admission()> RequestDecideCall(const std::string& sandbox, const std::string& host, uint16_t port,
                                               const HttpHead& head) {
    return [this, sandbox, host, port, method = head.method, path = head.path] {
      return hooks_.decide(sandbox, host, port, method, path);
    };
  }
  std::function<Result<Fd>()> DialCall(const std::string& host, uint16_t port) {
    return [this, host, port] { return hooks_.dial(host, port); };
  }

  struct Active {
    explicit Active(ProxyStats& s) : stats(s) { ++stats.active; }
    ~Active() { --stats.active; }
    ProxyStats& stats;
  };

  // What each sandbox holds now: its open connections, its decides and dials running on the blocking pool.
  struct Held {
    int connections = 0;
    int blocking = 0;
  };
  // Takes one of `what` for `sandbox` if it holds fewer than `limit`; Release gives it back.
  bool Take(const std::string& sandbox, int Held::*what, int limit) {
    std::lock_guard lock(held_mu_);
    Held& h = held_[sandbox];
    if (h.*what >= limit) return false;
    ++(h.*what);
    return true;
  }
  void Release(const std::string& sandbox, int Held::*what) {
    std::lock_guard lock(held_mu_);
    auto it = held_.find(sandbox);
    if (it == held_.end()) return;
    --(it->second.*what);
    if (it->second.connections == 0 && it->second.blocking == 0) held_.erase(it);
  }
  // Gives back what Take took when it goes.
  class Holding {
   public:
    Holding(Impl* impl, const std::string& sandbox, int Held::*what) : impl_(impl), sandbox_(sandbox), what_(what) {}
    Holding(const Holding&) = delete;
    Holding& operator=(const Holding&) = delete;
    ~Holding() { impl_->Release(sandbox_, what_); }

   private:
    Impl* impl_;
    std::string sandbox_;
    int Held::*what_;
  };

  // OffLoop for `sandbox`'s own work: it waits while the sandbox already has blocking_per_sandbox pieces running
  // (looking again every kBlockingRetry), so other sandboxes always find threads free.
  template <typename F, typename R = std::invoke_result_t<F>>
  asio::awaitable<std::optional<R>> OffLoopFor(const std::string& sandbox, F f) {
    if (!Take(sandbox, &Held::blocking, opts_.blocking_per_sandbox)) {
      asio::steady_timer wait(co_await asio::this_coro::executor);
      do {
        wait.expires_after(kBlockingRetry);
        co_await wait.async_wait(kAwait);
      } while (!Take(sandbox, &Held::blocking, opts_.blocking_per_sandbox));
    }
    Holding holding(this, sandbox, &Held::blocking);
    co_return co_await OffLoop(std::move(f));
  }

  asio::awaitable<void> Handle(tcp::socket client) {
    Active active(stats_);
    boost::system::error_code ec;
    tcp::endpoint local = client.local_endpoint(ec);
    if (ec || !local.address().is_v4()) co_return;
    std::optional<std::string> sandbox = hooks_.sandbox(local.address().to_v4().to_uint());
    if (!sandbox) co_return;
    if (!Take(*sandbox, &Held::connections, opts_.connections_per_sandbox)) {
      ++stats_.denied;
      co_return;  // closed at once: the sandbox has connections_per_sandbox open already
    }
    Holding connection(this, *sandbox, &Held::connections);
    // The port the sandbox asked for, from conntrack's record of the redirect; a direct connection keeps its own.
    uint16_t port = local.port();
    sockaddr_in original{};
    socklen_t len = sizeof original;
    if (::getsockopt(client.native_handle(), SOL_IP, SO_ORIGINAL_DST, &original, &len) == 0) port = ntohs(original.sin_port);
    const bool explicit_proxy = port == opts_.explicit_port;

    std::string head;
    Sniff sniff;
    asio::steady_timer deadline(client.get_executor(), std::chrono::milliseconds(opts_.sniff_timeout_ms));
    for (int reads = 0; sniff.state == Sniff::State::kNeedMore; ++reads) {
      if (head.size() >= opts_.max_head) {
        sniff = Sniff{Sniff::State::kMalformed, Sniff::Kind::kUnknown, "", 0, "request head too large", {}, {}, {}};
        break;
      }
      if (reads == kMaxHeadReads) {
        sniff = Sniff{Sniff::State::kMalformed, Sniff::Kind::kUnknown, "", 0, kTooManyPieces, {}, {}, {}};
        break;
      }
      char buf[4096];
      auto result = co_await (client.async_read_some(asio::buffer(buf, std::min(sizeof buf, opts_.max_head - head.size())), kAwait) ||
                              deadline.async_wait(kAwait));
      if (result.index() == 1) co_return;  // said nothing in time
      auto [rec, n] = std::get<0>(result);
      if (rec) {
        // The client closed before naming anything: a protocol without a name that sends nothing first (the server
        // speaks first) is handled by the fallback below only if bytes came; nothing came, nothing to do.
        if (head.empty()) co_return;
        sniff = hooks_.classify(head, port, explicit_proxy);
        if (sniff.state == Sniff::State::kNeedMore) co_return;
        break;
      }
      head.append(buf, n);
      sniff = hooks_.classify(head, port, explicit_proxy);
    }
    if (sniff.state == Sniff::State::kMalformed) {
      ++stats_.denied;
      if (sniff.kind == Sniff::Kind::kHttp || sniff.kind == Sniff::Kind::kConnect) {
        std::string response = HttpDenyResponse(400, sniff.reason);
        co_await Send(client, response);
      }
      co_return;
    }
    if (sniff.port != 0) port = sniff.port;
    std::string host = sniff.host;
    if (host.empty()) {
      std::optional<std::string> only = hooks_.host_for_port(*sandbox, port);
      if (!only) {
        std::string what = "port " + std::to_string(port);
        std::string why = "a connection without a name on port " + std::to_string(port) +
                          " needs exactly one host listed on that port";
        co_await Deny(client, sniff, *sandbox, what, why);
        co_return;
      }
      host = *only;
    }
    std::string target = host + ":" + std::to_string(port);
    std::string box = *sandbox;
    Admission admission = *co_await OffLoopFor(box, DecideCall(box, host, port, sniff));
    if (!admission.allow) {
      if (admission.reason.empty()) admission.reason = "egress to " + target + " is not allowed";
      co_await Deny(client, sniff, box, target, admission.reason);
      co_return;
    }
    // A TLS connection that named an intercepted host, or a CONNECT to one: its TLS ends here (intercept.h).
    const bool named = (sniff.kind == Sniff::Kind::kTls && !sniff.host.empty()) || sniff.kind == Sniff::Kind::kConnect;
    const bool intercepted = named && interceptor_ && hooks_.intercept(box, host, port);
    Result<Fd> dialed = std::move(*co_await OffLoopFor(box, DialCall(host, port)));
    if (intercepted && sniff.kind == Sniff::Kind::kTls) {
      co_await Intercept(client, head, box, host, port, dialed, admission.per_request);
      co_return;
    }
    // A CONNECT that cannot be dialled gets its 502 in the clear (below); else the tunnel's first bytes are the TLS.
    if (intercepted && dialed.ok()) {
      bool sent = co_await Send(client, kEstablished);
      if (!sent) co_return;
      std::string hello = sniff.upstream_prefix.value_or("");
      co_await Intercept(client, hello, box, host, port, dialed, admission.per_request);
      co_return;
    }
    if (!dialed.ok()) {
      ++stats_.denied;
      if (sniff.kind == Sniff::Kind::kHttp || sniff.kind == Sniff::Kind::kConnect) {
        std::string response = HttpDenyResponse(502, "cannot reach " + target + ": " + dialed.error().message);
        co_await Send(client, response);
      }
      co_return;
    }
    tcp::socket upstream(client.get_executor());
    upstream.assign(tcp::v4(), dialed->Release(), ec);
    if (ec) co_return;
    ++stats_.allowed;
    if (sniff.kind == Sniff::Kind::kConnect) {
      bool sent = co_await Send(client, kEstablished);
      if (!sent) co_return;
    }
    client.native_non_blocking(true, ec);
    upstream.native_non_blocking(true, ec);
    EnableEdgeReads(client);
    EnableEdgeReads(upstream);
    if (sniff.kind == Sniff::Kind::kHttp) {
      HttpConnection conn{box, host, port, explicit_proxy, admission.per_request};
      RelayEnds ends;
      co_await ((RelayRequests(client, upstream, head, conn, ends) && RelayResponses(upstream, client, ends)) ||
                Watch(client, upstream, ends));
      co_return;
    }
    if (sniff.kind == Sniff::Kind::kConnect) {
      RelayEnds ends;
      co_await ((RelayTunnel(client, upstream, sniff.upstream_prefix.value_or(""), box, host, port, ends) &&
                 Pump(upstream, client, stats_.bytes_down, ends)) ||
                Watch(client, upstream, ends));
      co_return;
    }
    const std::string& first = sniff.upstream_prefix ? *sniff.upstream_prefix : head;
    if (!first.empty()) {
      bool sent = co_await Send(upstream, first);
      if (!sent) co_return;
    }
    stats_.bytes_up += first.size();
    RelayEnds ends;
    co_await ((Pump(client, upstream, stats_.bytes_up, ends) && Pump(upstream, client, stats_.bytes_down, ends)) ||
              Watch(client, upstream, ends));
  }

  // What the two directions of a relayed connection share.
  struct RelayEnds {
    bool half_closed = false;  // one direction has ended with a half-close (HalfClose)
    int first_status = 0;      // a plain HTTP connection's first response status, once read (RelayResponses)
    std::chrono::steady_clock::time_point last_read = std::chrono::steady_clock::now();  // bytes came either way
  };

  // The sandbox's side of a CONNECT tunnel to `host`:`port`, checked before any of it goes on. TLS whose
  // ClientHello names another host (fronting), or HTTP requests (whose Host no one would check: plain HTTP goes
  // through the proxy as absolute-form requests, each checked), close the tunnel; a malformed hello or head too.
  // Anything else (TLS for `host`, SSH, a database protocol) is the named host's and is relayed untouched. The
  // origin's side flows meanwhile, for protocols whose server speaks first.
  asio::awaitable<void> RelayTunnel(tcp::socket& from, tcp::socket& to, std::string buffer, const std::string& box,
                                    const std::string& host, uint16_t port, RelayEnds& ends) {
    char buf[16384];
    for (int reads = 0;; ++reads) {
      Sniff s = buffer.empty() ? Sniff{} : hooks_.classify(buffer, port, false);
      // A whole first line tells HTTP from the line protocols that look like it (SMTP's "EHLO host", IMAP, POP),
      // whose client then waits for an answer: no waiting for the blank line that HTTP's head would end with.
      const bool http_like = s.state == Sniff::State::kNeedMore || s.kind == Sniff::Kind::kHttp;
      if (http_like && s.kind != Sniff::Kind::kTls && !buffer.empty() && buffer[0] != '\x16') {
        if (size_t eol = buffer.find('\n'); eol != std::string::npos) {
          std::string_view line = std::string_view(buffer).substr(0, eol);
          if (line.ends_with('\r')) line.remove_suffix(1);
          s.state = Sniff::State::kDone;
          s.kind = NamesAnHttpVersion(line) ? Sniff::Kind::kHttp : Sniff::Kind::kUnknown;
        }
      }
      bool undecided = false;  // still not told apart after all the reads or bytes a head may take
      if (s.state == Sniff::State::kNeedMore) {
        if (reads >= kMaxHeadReads || buffer.size() >= opts_.max_head) {
          undecided = true;
        } else {
          auto [ec, n] = co_await ReadSome(from, asio::buffer(buf), ends);
          if (!ec) {
            buffer.append(buf, n);
            continue;
          }
          if (ec != asio::error::eof) co_return CloseBoth(from, to);
          if (buffer.empty()) co_return HalfClose(to, ends);
          // Ended before it could be told apart: what came is too short to carry a request; it goes on.
        }
      }
      std::string refusal;
      if (undecided)
        refusal = "a CONNECT tunnel to " + host + " began with bytes that were still neither a TLS ClientHello nor "
                  "an HTTP request line after " + std::to_string(reads) + " reads and " +
                  std::to_string(buffer.size()) + " bytes";
      else if (s.kind == Sniff::Kind::kHttp)
        refusal = "a CONNECT tunnel carries no plain HTTP: send http:// requests to the proxy as they are, each is checked";
      else if (s.kind == Sniff::Kind::kTls && s.state == Sniff::State::kMalformed)
        refusal = "a CONNECT tunnel to " + host + " began with a malformed TLS ClientHello";
      else if (s.kind == Sniff::Kind::kTls && !s.host.empty() && !EqualsIgnoreCase(s.host, host))
        refusal = "a CONNECT tunnel to " + host + " names " + s.host + " in its TLS ClientHello: one host per tunnel";
      if (!refusal.empty()) {
        Report(box, host + ":" + std::to_string(port), refusal);
        co_return CloseBoth(from, to);
      }
      break;
    }
    if (!buffer.empty()) {
      bool sent = co_await Send(to, buffer);
      if (!sent) co_return CloseBoth(from, to);
      stats_.bytes_up += buffer.size();
    }
    co_return co_await Pump(from, to, stats_.bytes_up, ends);
  }

  // Ends a relayed connection that has moved no byte either way for relay_idle_ms: it closes both sockets, which
  // ends both directions. Cancelled (the parallel group ending) once they have ended on their own.
  asio::awaitable<void> Watch(tcp::socket& a, tcp::socket& b, RelayEnds& ends) {
    const auto idle = std::chrono::milliseconds(opts_.relay_idle_ms);
    asio::steady_timer timer(co_await asio::this_coro::executor);
    for (;;) {
      timer.expires_at(ends.last_read + idle);
      auto [ec] = co_await timer.async_wait(kAwait);
      if (ec) co_return;
      if (std::chrono::steady_clock::now() - ends.last_read >= idle) {
        ++stats_.idle_closed;
        co_return CloseBoth(a, b);
      }
    }
  }

  // A relay's read. While both directions run: when the reactor reports the socket readable, not first on the
  // chance (AsyncReadEdge). A reset that came with the last bytes read that way raises no further readiness, and
  // then the read waits until the other direction writes to the socket (which fails and closes both) or ends
  // (HalfClose, which cancels the read when it finds the socket dead). Once the other direction has ended, neither
  // will come: each read tries the socket first, and so sees the reset.
  static asio::awaitable<std::tuple<boost::system::error_code, size_t>> ReadSome(tcp::socket& s, asio::mutable_buffer b,
                                                                                 RelayEnds& ends) {
    for (;;) {
      if (ends.half_closed) {
        ssize_t n = ::recv(s.native_handle(), b.data(), b.size(), MSG_DONTWAIT);
        if (n > 0) {
          ends.last_read = std::chrono::steady_clock::now();
          co_return std::tuple(boost::system::error_code(), static_cast<size_t>(n));
        }
        if (n == 0) co_return std::tuple(boost::system::error_code(asio::error::eof), size_t{0});
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
          co_return std::tuple(boost::system::error_code(errno, asio::error::get_system_category()), size_t{0});
      }
      auto [ec, n] = co_await AsyncReadEdge(s, b, kAwait);
      if (ec == asio::error::operation_aborted && ends.half_closed && s.is_open()) continue;  // cancelled by HalfClose
      if (n > 0) ends.last_read = std::chrono::steady_clock::now();
      co_return std::tuple(ec, n);
    }
  }

  // A plain HTTP connection: the sandbox, the host and port it was admitted for, and how.
  struct HttpConnection {
    std::string sandbox, host;
    uint16_t port = 0;
    bool explicit_proxy = false;
    bool per_request = false;  // Admission::per_request of the first request
  };

  // Why `head` may not go on `conn`, or empty: it names another host (on the explicit proxy port, another host or
  // port).
  static std::string OtherHost(const HttpConnection& conn, const HttpHead& head) {
    const uint16_t port = conn.explicit_proxy ? head.port : conn.port;
    if (head.host == conn.host && port == conn.port) return "";
    return "egress to " + head.host + ":" + std::to_string(port) + " on a connection to " + conn.host + ":" +
           std::to_string(conn.port) + " is refused: one host per connection";
  }

  // Why the judge refuses `head` on `conn` (a judged name), or empty.
  asio::awaitable<std::string> JudgeRequest(const HttpConnection& conn, const HttpHead& head) {
    Admission admission = *co_await OffLoopFor(conn.sandbox, RequestDecideCall(conn.sandbox, conn.host, conn.port, head));
    if (admission.allow) co_return "";
    if (admission.reason.empty()) admission.reason = "egress to " + conn.host + ":" + std::to_string(conn.port) + " is not allowed";
    co_return admission.reason;
  }

  // Origin to client on a plain HTTP connection: relayed untouched, but the status of the first response is noted
  // (ends.first_status) before it goes on, so the request side knows whether the origin took an upgrade.
  asio::awaitable<void> RelayResponses(tcp::socket& from, tcp::socket& to, RelayEnds& ends) {
    char buf[16384];
    size_t have = 0;
    // "HTTP/1.1 101 ": the status is known once its prefix is in, or once the bytes cannot be a status line.
    while (have < kStatusPrefix) {
      auto [ec, n] = co_await ReadSome(from, asio::buffer(buf + have, sizeof buf - have), ends);
      if (ec == asio::error::eof && have == 0) co_return HalfClose(to, ends);
      if (ec) {
        if (have > 0) co_await Send(to, std::string_view(buf, have));
        co_return ec == asio::error::eof ? HalfClose(to, ends) : CloseBoth(from, to);
      }
      have += n;
    }
    std::string_view line(buf, have);
    ends.first_status = PeekResponseStatus(line);  // kNotAStatus: not HTTP, no switch it could confirm
    stats_.bytes_down += have;
    bool sent = co_await Send(to, line);
    if (!sent) co_return CloseBoth(from, to);
    co_return co_await Pump(from, to, stats_.bytes_down, ends);
  }

  // Client to origin on a plain HTTP connection, from its first request (`buffer`: the bytes read so far): each
  // request head is read and checked before it goes on, then its body follows by its framing (a Content-Length body
  // spliced when large, a chunked one scanned), and the next head is expected after it. A refused request gets a
  // 400 or 403 with the reason and the connection closes. When the connection's first request was an Upgrade and
  // the origin answered it 101, bytes that are not an HTTP request head are the
  // protocol switched to: from there on the bytes are relayed untouched. Without that answer they are refused like
  // any malformed head: a client's Upgrade header alone never turns the checks off.
  asio::awaitable<void> RelayRequests(tcp::socket& from, tcp::socket& to, std::string& buffer, const HttpConnection& conn,
                                      RelayEnds& ends) {
    char buf[16384];
    bool first = true;
    bool asked_upgrade = false;  // whether the first request asked the origin to switch protocols
    for (;;) {
      RelayedRequest request = ReadRelayedRequest(buffer, conn.explicit_proxy);
      for (int reads = 0; request.state == RelayedRequest::State::kNeedMore; ++reads) {
        if (buffer.size() >= opts_.max_head) {
          request.state = RelayedRequest::State::kMalformed;
          request.status = 431;
          request.reason = "request head too large";
          break;
        }
        if (reads == kMaxHeadReads) {
          request.state = RelayedRequest::State::kMalformed;
          request.status = 400;
          request.reason = kTooManyPieces;
          break;
        }
        auto [ec, n] = co_await ReadSome(from, asio::buffer(buf, std::min(sizeof buf, opts_.max_head - buffer.size())), ends);
        if (ec == asio::error::eof && buffer.empty()) co_return HalfClose(to, ends);  // between requests
        if (ec) co_return CloseBoth(from, to);
        buffer.append(buf, n);
        request = ReadRelayedRequest(buffer, conn.explicit_proxy);
      }
      const int status = ends.first_status;
      const bool switched = asked_upgrade && status == 101;
      if (switched && request.state != RelayedRequest::State::kParsed) {
        bool sent = co_await Send(to, buffer);
        if (!sent) co_return CloseBoth(from, to);
        stats_.bytes_up += buffer.size();
        co_return co_await Pump(from, to, stats_.bytes_up, ends);
      }
      std::string refusal;
      int deny_status = 403;
      bool policy = true;  // a refusal of the policy's (reported), not of a malformed request
      if (request.state != RelayedRequest::State::kParsed) {
        refusal = request.reason;
        deny_status = request.status;
        policy = false;
      } else {
        refusal = OtherHost(conn, request.head);
        if (refusal.empty()) {
          refusal = BodylessMethodRefusal(request.head);
          if (!refusal.empty()) deny_status = 400;
        }
        // The first request was decided already; a judged name has every later one decided too.
        if (refusal.empty() && !first && conn.per_request) refusal = co_await JudgeRequest(conn, request.head);
      }
      if (!refusal.empty()) {
        if (policy) Report(conn.sandbox, request.head.host + ":" + std::to_string(conn.explicit_proxy ? request.head.port : conn.port), refusal);
        else ++stats_.denied;
        std::string response = HttpDenyResponse(deny_status, refusal);
        co_await Send(from, response);
        co_return CloseBoth(from, to);
      }
      const std::string_view upstream = request.Upstream(buffer);
      bool sent = co_await Send(to, upstream);
      if (!sent) co_return CloseBoth(from, to);
      stats_.bytes_up += upstream.size();
      buffer.erase(0, request.head.size);
      if (request.body.kind != BodyFraming::kNone) {
        Status body = co_await RelayBody(from, to, buffer, request.body, ends);
        if (!body.ok()) co_return CloseBoth(from, to);
      }
      if (first && request.opaque_after) asked_upgrade = true;
      first = false;
    }
  }

  // One request body from `from` to `to` by its framing; `buffer` holds what was read past the head and keeps what
  // was read past the body. Errors: the client ended or broke the body, or a socket failed.
  asio::awaitable<Status> RelayBody(tcp::socket& from, tcp::socket& to, std::string& buffer, BodyFraming framing,
                                    RelayEnds& ends) {
    if (framing.kind == BodyFraming::kChunked) co_return co_await RelayChunked(from, to, buffer, ends);
    if (framing.kind != BodyFraming::kLength) co_return Status();
    uint64_t remaining = framing.length;
    size_t take = static_cast<size_t>(std::min<uint64_t>(remaining, buffer.size()));
    if (take > 0) {
      std::string piece = buffer.substr(0, take);
      buffer.erase(0, take);
      bool sent = co_await Send(to, piece);
      if (!sent) co_return Error::Of(Code::kUnavailable, "writing a request body");
      stats_.bytes_up += take;
      remaining -= take;
    }
    char buf[16384];
    Fd pipe_read, pipe_write;
    while (remaining > 0) {
      auto [ec, n] = co_await ReadSome(from, asio::buffer(buf, std::min<uint64_t>(sizeof buf, remaining)), ends);
      if (ec) co_return Error::Of(Code::kUnavailable, "the request body ended early");
      bool sent = co_await Send(to, std::string_view(buf, n));
      if (!sent) co_return Error::Of(Code::kUnavailable, "writing a request body");
      stats_.bytes_up += n;
      remaining -= n;
      if (n < sizeof buf || remaining == 0) continue;
      // A full buffer: a bulk body, the rest of which is spliced.
      if (!pipe_write.valid()) {
        if (!MakePipe(pipe_read, pipe_write)) co_return Error::Sys("pipe");
      }
      Drained drained = co_await Splice(from, to, pipe_read.get(), pipe_write.get(), stats_.bytes_up, remaining, ends);
      if (drained == Drained::kEnd || drained == Drained::kFailed) co_return Error::Of(Code::kUnavailable, "the request body ended early");
    }
    co_return Status();
  }

  asio::awaitable<Status> RelayChunked(tcp::socket& from, tcp::socket& to, std::string& buffer, RelayEnds& ends) {
    ChunkedScanner scanner;
    char buf[16384];
    for (;;) {
      ChunkedScanner::Step step = scanner.Feed(buffer);
      if (step.state == ChunkedScanner::State::kMalformed) co_return Error::Of(Code::kInvalidArgument, step.reason);
      if (step.used > 0) {
        std::string piece = buffer.substr(0, step.used);
        buffer.erase(0, step.used);
        bool sent = co_await Send(to, piece);
        if (!sent) co_return Error::Of(Code::kUnavailable, "writing a request body");
        stats_.bytes_up += piece.size();
      }
      if (step.state == ChunkedScanner::State::kDone) co_return Status();
      auto [ec, n] = co_await ReadSome(from, asio::buffer(buf), ends);
      if (ec) co_return Error::Of(Code::kUnavailable, "the request body ended early");
      buffer.append(buf, n);
    }
  }

  asio::awaitable<void> Intercept(tcp::socket& client, const std::string& hello, const std::string& box,
                                  const std::string& host, uint16_t port, Result<Fd>& dialed, bool per_request) {
    Exchange exchange{box, host, port};
    if (dialed.ok()) ++stats_.allowed;
    // A judged name: the judge sees each request's method and path here, in the clear, as on plain HTTP.
    const HttpConnection conn{box, host, port, false, per_request};
    RequestJudge judge;
    if (per_request) judge = [this, &conn](const HttpHead& head) { return JudgeRequest(conn, head); };
    Interceptor::Outcome out = co_await interceptor_->Run(client, hello, exchange, dialed, std::move(judge));
    stats_.bytes_up += out.bytes_up;
    stats_.bytes_down += out.bytes_down;
    if (!out.failure.empty()) ++stats_.denied;
    if (!out.refusal.empty()) Report(box, host + ":" + std::to_string(port), out.refusal);
  }

  // Writes `bytes` to `s`. A socket with room in its send buffer (the usual case) takes them at once, without a
  // trip through the event loop; what it does not take is written when it can. The descriptor number is taken at the
  // call (-1 once closed: EBADF), as in Splice.
  asio::awaitable<bool> Send(tcp::socket& s, std::string_view bytes) {
    ssize_t n = ::send(s.native_handle(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(bytes.size())) co_return true;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) co_return false;
    const size_t sent = n > 0 ? static_cast<size_t>(n) : 0;
    auto [ec, m] = co_await asio::async_write(s, asio::buffer(bytes.substr(sent)), kAwait);
    co_return !ec;
  }

  asio::awaitable<void> Deny(tcp::socket& client, const Sniff& sniff, const std::string& sandbox,
                             const std::string& target, const std::string& reason) {
    Report(sandbox, target, reason);
    std::string response;
    if (sniff.kind == Sniff::Kind::kTls) response = TlsDenyAlert();
    if (sniff.kind == Sniff::Kind::kHttp || sniff.kind == Sniff::Kind::kConnect) response = HttpDenyResponse(403, reason);
    if (!response.empty()) co_await Send(client, response);
  }

  // A refusal: counted, and given to on_deny (marked first at most once per sandbox and target every 30 s).
  void Report(const std::string& sandbox, const std::string& target, const std::string& reason) {
    ++stats_.denied;
    bool first = FirstInWindow(sandbox + " " + target);
    if (hooks_.on_deny) hooks_.on_deny(sandbox, target, reason, first);
  }

  // Bounded: past kMaxDenyKeys targets refused within the window, a new one is counted but not marked first (a
  // sandbox trying ever new names cannot grow the map, or the log); the map is swept at most once a second.
  bool FirstInWindow(const std::string& key) {
    constexpr size_t kMaxDenyKeys = 10000;
    constexpr auto kWindow = std::chrono::seconds(30);
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(deny_mu_);
    if (last_deny_.size() >= kMaxDenyKeys && now - last_deny_sweep_ >= std::chrono::seconds(1)) {
      std::erase_if(last_deny_, [&](auto& kv) { return now - kv.second > kWindow; });
      last_deny_sweep_ = now;
    }
    auto it = last_deny_.find(key);
    if (it == last_deny_.end()) {
      if (last_deny_.size() >= kMaxDenyKeys) return false;
      last_deny_.emplace(key, now);
      return true;
    }
    if (now - it->second < kWindow) return false;
    it->second = now;
    return true;
  }

  // Moves bytes from `from` to `to` until `from` ends (then half-closes `to`) or either fails (then closes both,
  // which ends the other direction too). A message goes through a small buffer: two system calls per message, the
  // read when the reactor reports the socket readable (ReadSome) and the write straight away (Send). A read that
  // fills the buffer means a bulk transfer: what follows moves through a pipe with splice, never through user space,
  // until the socket has nothing more to give.
  // Closing both here cannot reach another connection's descriptor: both directions run on the connection's event
  // loop, one thread (Accept), so a close happens only while the other direction is suspended in an asio operation
  // on these sockets (which the close cancels), and Splice and Send take each descriptor number from the socket at
  // the moment of each call (-1 once closed: EBADF, never a reused number). The pipe is this direction's own.
  asio::awaitable<void> Pump(tcp::socket& from, tcp::socket& to, std::atomic<uint64_t>& counter, RelayEnds& ends) {
    char buf[16384];
    Fd pipe_read, pipe_write;
    for (;;) {
      auto [ec, n] = co_await ReadSome(from, asio::buffer(buf), ends);
      if (ec == asio::error::eof) co_return HalfClose(to, ends);
      if (ec) co_return CloseBoth(from, to);
      counter += n;
      bool sent = co_await Send(to, std::string_view(buf, n));
      if (!sent) co_return CloseBoth(from, to);
      if (n < sizeof buf) continue;
      if (!pipe_write.valid()) {
        if (!MakePipe(pipe_read, pipe_write)) co_return CloseBoth(from, to);
      }
      uint64_t unbounded = UINT64_MAX;
      Drained drained = co_await Splice(from, to, pipe_read.get(), pipe_write.get(), counter, unbounded, ends);
      if (drained == Drained::kEnd) co_return HalfClose(to, ends);
      if (drained == Drained::kFailed) co_return CloseBoth(from, to);
    }
  }

  static bool MakePipe(Fd& read_end, Fd& write_end) {
    int p[2];
    if (::pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) return false;
    read_end = Fd(p[0]);
    write_end = Fd(p[1]);
    ::fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
    return true;
  }

  enum class Drained { kEmpty, kEnd, kFailed };

  // Splices from `from` to `to` through the (empty) pipe until `from` has nothing to read for now or `budget`
  // bytes have moved (kEmpty either way; `budget` is decreased by what moved). Never keep a native_handle() across
  // a co_await: the other direction may close the socket meanwhile.
  asio::awaitable<Drained> Splice(tcp::socket& from, tcp::socket& to, int pipe_read, int pipe_write,
                                  std::atomic<uint64_t>& counter, uint64_t& budget, RelayEnds& ends) {
    constexpr unsigned kFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
    while (budget > 0) {
      ssize_t n = ::splice(from.native_handle(), nullptr, pipe_write, nullptr, std::min<uint64_t>(budget, 1 << 20), kFlags);
      if (n == 0) co_return Drained::kEnd;
      if (n < 0) co_return errno == EAGAIN ? Drained::kEmpty : Drained::kFailed;
      counter += static_cast<uint64_t>(n);
      budget -= static_cast<uint64_t>(n);
      ends.last_read = std::chrono::steady_clock::now();
      while (n > 0) {
        ssize_t m = ::splice(pipe_read, nullptr, to.native_handle(), nullptr, static_cast<size_t>(n), kFlags);
        if (m > 0) {
          n -= m;
          continue;
        }
        if (m < 0 && errno == EAGAIN) {
          auto [ec] = co_await to.async_wait(tcp::socket::wait_write, kAwait);
          if (ec) co_return Drained::kFailed;
          continue;
        }
        co_return Drained::kFailed;
      }
    }
    co_return Drained::kEmpty;
  }

  // A direction ended: so does what `to` is sent, and the other direction reads on alone, each read trying the
  // socket first (ReadSome). When `to` cannot be shut down it is dead (reset); a read of it still waiting is then
  // cancelled, to read again that way: what is left goes on, then the reset closes both.
  static void HalfClose(tcp::socket& to, RelayEnds& ends) {
    ends.half_closed = true;
    boost::system::error_code ec;
    to.shutdown(tcp::socket::shutdown_send, ec);
    if (ec) to.cancel(ec);
  }

  static void CloseBoth(tcp::socket& a, tcp::socket& b) {
    boost::system::error_code ec;
    a.close(ec);
    b.close(ec);
  }

  ProxyOptions opts_;
  ProxyHooks hooks_;
  ProxyStats stats_;
  std::unique_ptr<Interceptor> interceptor_;  // when hooks_.intercept is set; outlives the connections' frames
  // What each sandbox holds (by sandbox; an entry goes when it holds nothing). Declared before the loops: a
  // connection's frame destroyed with its loop gives back what it held.
  std::mutex held_mu_;
  std::map<std::string, Held> held_;
  std::vector<std::unique_ptr<asio::io_context>> loops_;  // the event loops; the first also accepts
  tcp::acceptor acceptor_;
  asio::thread_pool pool_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  std::mutex deny_mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> last_deny_;
  std::chrono::steady_clock::time_point last_deny_sweep_{};
};

Result<std::unique_ptr<Proxy>> Proxy::Start(ProxyOptions options, ProxyHooks hooks) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(hooks));
  ISB_TRY(impl->Listen());
  return std::unique_ptr<Proxy>(new Proxy(std::move(impl)));
}

Proxy::Proxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Proxy::~Proxy() = default;
uint16_t Proxy::port() const { return impl_->port(); }
const ProxyStats& Proxy::stats() const { return impl_->stats(); }

}  // namespace isb::egress
