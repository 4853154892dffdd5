// The proxy's listener and accept loop, and each connection's path from its first bytes to its relay: the sniff,
// the sandbox's share, the policy's decision and the dial, then a tunnel, the plain HTTP relay or interception.
// One coroutine per connection on a small io_context; policy and dialing on a pool of blocking threads.
#include "egress/proxy.h"

// netinet/in.h before the kernel header, which then leaves glibc's definitions alone.
#include <netinet/in.h>
#include <linux/netfilter_ipv4.h>
#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <chrono>

#include "base/metric_families.h"
#include "egress/edge_read.h"
#include "egress/proxy_impl.h"

namespace isb::egress {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);
// How long the accept loop waits after a failed accept (EMFILE, ENFILE, ENOBUFS) before it tries again.
constexpr auto kAcceptRetry = std::chrono::milliseconds(50);
const std::string kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";

// One io_context per event-loop thread, each run by that thread alone (concurrency hint 1).
std::vector<std::unique_ptr<asio::io_context>> MakeLoops(int threads) {
  std::vector<std::unique_ptr<asio::io_context>> loops;
  for (int i = 0; i < std::max(threads, 1); ++i) {
    loops.push_back(std::make_unique<asio::io_context>(1));
    // Its reactor (an epoll, a timer and a wake-up descriptor) made now rather than at its first connection, so
    // the proxy's descriptors are as many before any connection as after the last one has gone.
    asio::use_service<asio::detail::reactor>(*loops.back());
  }
  return loops;
}

// Counts a connection in ProxyStats::active while it lives.
struct Active {
  explicit Active(ProxyStats& s) : stats(s) { ++stats.active; }
  ~Active() { --stats.active; }
  ProxyStats& stats;
};

}  // namespace

std::string TlsDenyAlert() {
  // A TLS record (alert, TLS 1.0 record version as in a first flight) with a fatal unrecognized_name alert.
  return std::string("\x15\x03\x01\x00\x02\x02\x70", 7);
}

std::string HttpDenyResponse(int status, const std::string& reason) {
  // The filter's refusals name isb already.
  std::string body = (reason.starts_with("isb: ") ? reason : "isb: " + reason) + "\n";
  std::string text = status == 403   ? "Forbidden"
                     : status == 400 ? "Bad Request"
                     : status == 413 ? "Content Too Large"
                     : status == 421 ? "Misdirected Request"
                                     : "Bad Gateway";
  return "HTTP/1.1 " + std::to_string(status) + " " + text +
         "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

Proxy::Impl::Impl(ProxyOptions o, ProxyHooks h)
    : opts_(std::move(o)),
      hooks_(std::move(h)),
      filter_(opts_.filter ? opts_.filter : std::make_shared<MessageFilter>()),
      loops_(MakeLoops(opts_.threads)),
      acceptor_(*loops_[0]),
      pool_(opts_.blocking_threads) {}

Proxy::Impl::~Impl() {
  asio::post(*loops_[0], [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
  });
  for (auto& loop : loops_) loop->stop();
  for (std::thread& t : threads_) t.join();
  pool_.join();
}

Status Proxy::Impl::Listen() {
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
  if (ec)
    return Error::Of(Code::kUnavailable,
                     "proxy cannot listen on port " + std::to_string(opts_.port) + ": " + ec.message());
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

asio::awaitable<void> Proxy::Impl::Accept() {
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
    // A relayed message is often written in more than one piece (an intercepted head, then its body): without
    // this, Nagle's algorithm holds the last piece for the client's delayed ACK (40 ms a request).
    boost::system::error_code nodelay;
    socket.set_option(asio::ip::tcp::no_delay(true), nodelay);
    asio::co_spawn(socket.get_executor(), Handle(std::move(socket)), asio::detached);
  }
}

std::function<Admission()> Proxy::Impl::DecideCall(const std::string& sandbox, const std::string& host, uint16_t port,
                                                   const std::string& method, const std::string& path) {
  return [this, sandbox, host, port, method, path] { return hooks_.decide(sandbox, host, port, method, path); };
}

std::function<Result<Fd>()> Proxy::Impl::DialCall(const std::string& host, uint16_t port) {
  return [this, host, port] { return hooks_.dial(host, port); };
}

asio::awaitable<void> Proxy::Impl::Handle(Socket client) {
  Active active(stats_);
  boost::system::error_code ec;
  tcp::endpoint local = client.local_endpoint(ec);
  if (ec || !local.address().is_v4()) co_return;
  std::optional<std::string> sandbox = hooks_.sandbox(local.address().to_v4().to_uint());
  if (!sandbox) co_return;
  if (!shares_.Take(*sandbox, SandboxShares::Kind::kConnection, opts_.connections_per_sandbox)) {
    ++stats_.denied;
    co_return;  // closed at once: the sandbox has connections_per_sandbox open already
  }
  SandboxShares::Holding connection(shares_, *sandbox, SandboxShares::Kind::kConnection);
  // The sandbox's counters, found once: each piece relayed is then two atomic adds (the totals' and the sandbox's).
  const std::shared_ptr<SandboxBytes> traffic = traffic_.Find(*sandbox);
  const Counts counts{ByteCount(stats_.bytes_up, traffic ? &traffic->up : nullptr),
                      ByteCount(stats_.bytes_down, traffic ? &traffic->down : nullptr)};
  // The port the sandbox asked for, from conntrack's record of the redirect; a direct connection keeps its own.
  uint16_t port = local.port();
  sockaddr_in original{};
  socklen_t len = sizeof original;
  if (::getsockopt(client.native_handle(), SOL_IP, SO_ORIGINAL_DST, &original, &len) == 0)
    port = ntohs(original.sin_port);
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
    auto result = co_await (
        client.async_read_some(asio::buffer(buf, std::min(sizeof buf, opts_.max_head - head.size())), kAwait) ||
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
      std::string why =
          "a connection without a name on port " + std::to_string(port) + " needs exactly one host listed on that port";
      co_await Deny(client, sniff, *sandbox, what, why);
      co_return;
    }
    host = *only;
  }
  std::string target = host + ":" + std::to_string(port);
  std::string box = *sandbox;
  Admission admission = *co_await OffLoopFor(box, DecideCall(box, host, port, sniff.method, sniff.path));
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
    co_await Intercept(client, head, box, host, port, dialed, admission.per_request, traffic.get());
    co_return;
  }
  // A CONNECT that cannot be dialled gets its 502 in the clear (below); else the tunnel's first bytes are the TLS.
  if (intercepted && dialed.ok()) {
    bool sent = co_await Send(client, kEstablished);
    if (!sent) co_return;
    std::string hello = sniff.upstream_prefix.value_or("");
    co_await Intercept(client, hello, box, host, port, dialed, admission.per_request, traffic.get());
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
  const std::chrono::milliseconds idle(opts_.relay_idle_ms);
  client.native_non_blocking(true, ec);
  upstream.native_non_blocking(true, ec);
  EnableEdgeReads(client);
  EnableEdgeReads(upstream);
  if (sniff.kind == Sniff::Kind::kHttp) {
    HttpConnection conn{box, host, port, explicit_proxy, admission.per_request};
    RelayEnds ends;
    co_await ((RelayRequests(client, upstream, head, conn, counts, ends) &&
               RelayResponses(upstream, client, counts.down, ends)) ||
              Watch(client, upstream, ends, idle, stats_.idle_closed));
    co_return;
  }
  if (sniff.kind == Sniff::Kind::kConnect) {
    RelayEnds ends;
    co_await ((RelayTunnel(client, upstream, sniff.upstream_prefix.value_or(""), box, host, port, counts.up, ends) &&
               Pump(upstream, client, counts.down, ends)) ||
              Watch(client, upstream, ends, idle, stats_.idle_closed));
    co_return;
  }
  const std::string& first = sniff.upstream_prefix ? *sniff.upstream_prefix : head;
  if (!first.empty()) {
    bool sent = co_await Send(upstream, first);
    if (!sent) co_return;
  }
  counts.up.Add(first.size());
  RelayEnds ends;
  co_await ((Pump(client, upstream, counts.up, ends) && Pump(upstream, client, counts.down, ends)) ||
            Watch(client, upstream, ends, idle, stats_.idle_closed));
}

asio::awaitable<void> Proxy::Impl::Intercept(Socket& client, const std::string& hello, const std::string& box,
                                             const std::string& host, uint16_t port, Result<Fd>& dialed,
                                             bool per_request, SandboxBytes* traffic) {
  Exchange exchange{box, host, port, true};
  if (dialed.ok()) ++stats_.allowed;
  // A judged name: the judge sees each request's method and path here, in the clear, as on plain HTTP.
  const HttpConnection conn{box, host, port, false, per_request};
  RequestJudge judge;
  if (per_request) judge = [this, &conn](const HttpHead& head) { return JudgeRequest(conn, head); };
  Interceptor::Outcome out =
      co_await interceptor_->Run(client, hello, exchange, dialed, *filter_, std::move(judge), traffic);
  stats_.bytes_up += out.bytes_up;
  stats_.bytes_down += out.bytes_down;
  if (!out.failure.empty()) ++stats_.denied;
  if (!out.refusal.empty()) Report(box, host + ":" + std::to_string(port), out.refusal);
}

// Why the judge refuses `head` on `conn` (a judged name), or empty.
asio::awaitable<std::string> Proxy::Impl::JudgeRequest(const HttpConnection& conn, const HttpHead& head) {
  Admission admission =
      *co_await OffLoopFor(conn.sandbox, DecideCall(conn.sandbox, conn.host, conn.port, head.method, head.path));
  if (admission.allow) co_return "";
  if (admission.reason.empty())
    admission.reason = "egress to " + conn.host + ":" + std::to_string(conn.port) + " is not allowed";
  co_return admission.reason;
}

asio::awaitable<void> Proxy::Impl::Deny(Socket& client, const Sniff& sniff, const std::string& sandbox,
                                        const std::string& target, const std::string& reason) {
  Report(sandbox, target, reason);
  std::string response;
  if (sniff.kind == Sniff::Kind::kTls) response = TlsDenyAlert();
  if (sniff.kind == Sniff::Kind::kHttp || sniff.kind == Sniff::Kind::kConnect) response = HttpDenyResponse(403, reason);
  if (!response.empty()) co_await Send(client, response);
}

void Proxy::Impl::Report(const std::string& sandbox, const std::string& target, const std::string& reason) {
  ++stats_.denied;
  metrics::ProxyRefusals().With({std::string(metrics::RefusalKind(reason))}).Inc();
  bool first = deny_window_.FirstInWindow(sandbox + " " + target);
  if (hooks_.on_deny) hooks_.on_deny(sandbox, target, reason, first);
}

Result<std::unique_ptr<Proxy>> Proxy::Start(ProxyOptions options, ProxyHooks hooks) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(hooks));
  ISB_TRY(impl->Listen());
  return std::unique_ptr<Proxy>(new Proxy(std::move(impl)));
}

Proxy::Proxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Proxy::~Proxy() = default;
uint16_t Proxy::port() const { return impl_->port(); }
const ProxyStats& Proxy::stats() const { return impl_->stats(); }
SandboxTraffic& Proxy::traffic() { return impl_->traffic(); }

}  // namespace isb::egress
