// One coroutine per preview connection on the proxy's own event loop (one thread): read a request head, decide by
// its host and cookie, then relay it and its response through the message relay. Dials run on a small pool.
#include "daemon/preview_proxy.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <optional>
#include <variant>

#include "api/preview_filter.h"
#include "api/web_auth.h"
#include "base/ascii.h"
#include "daemon/netns_dial.h"
#include "egress/edge_read.h"
#include "egress/http_head.h"
#include "egress/http_response.h"
#include "egress/message_relay.h"
#include "egress/socket_relay.h"

namespace isb::daemon {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);
// What a refused connection's client may still send, read and dropped, before it is closed anyway: enough for the
// rest of a head or a small body, not a channel to keep a connection busy with.
constexpr size_t kMaxRefusedDrain = 1 << 20;

// A response of the proxy's own: plain text, never cached, and the connection closed after it. No header of isb's
// pages (no CSP, no Server) is in it.
std::string PlainResponse(int status, std::string_view reason, const std::string& text) {
  const std::string body = text + "\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\nReferrer-Policy: no-referrer\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

std::string_view ReasonOf(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 414:
      return "URI Too Long";
    case 421:
      return "Misdirected Request";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
  }
  return "Error";
}

// The spent link's answer: the cookie, and a page that goes on to the app without the link in a Referer.
std::string OpenedResponse(const api::PreviewSession& session, bool secure) {
  const std::string body =
      "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"referrer\" content=\"no-referrer\">"
      "<meta http-equiv=\"refresh\" content=\"0;url=/\"><title>Opening the preview</title></head>"
      "<body><p><a href=\"/\" rel=\"noreferrer\">Open the preview</a></p></body></html>\n";
  return "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n"
         "Referrer-Policy: no-referrer\r\nSet-Cookie: " +
         std::string(api::kPreviewCookie) + "=" + session.cookie +
         "; Path=/; Max-Age=" + std::to_string(session.max_age.count()) + "; HttpOnly; SameSite=Strict" +
         (secure ? "; Secure" : "") + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// The isb_preview cookie among every Cookie field of the head.
std::string PreviewCookie(const egress::HttpHead& head) {
  for (const egress::HttpHeader& h : head.headers) {
    if (h.name.size() != 6 || !EqualsIgnoreCase(h.name, "Cookie")) continue;
    std::string v = api::CookieValue(h.value, api::kPreviewCookie);
    if (!v.empty()) return v;
  }
  return {};
}

bool WantsClose(const std::vector<egress::HttpHeader>& headers, int minor_version) {
  const std::string* c = egress::FindHeader(headers, "Connection");
  if (c != nullptr && c->find("close") != std::string::npos) return true;
  return minor_version == 0 && (c == nullptr || c->find("keep-alive") == std::string::npos);
}

// Closes `s` at `deadline`, which ends whatever waits on it; cancelled (the parallel group ending) before.
asio::awaitable<void> CloseAt(tcp::socket& s, std::chrono::steady_clock::time_point deadline) {
  asio::steady_timer timer(co_await asio::this_coro::executor, deadline);
  auto [ec] = co_await timer.async_wait(kAwait);
  if (ec) co_return;
  // Due in the same turn as the other branch's completion: the group's cancellation came too late for the timer,
  // but the other branch won, and what it waited on must stay open.
  if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) co_return;
  boost::system::error_code ignored;
  s.close(ignored);
}

// The client's address of a connection given, as the per-address cap counts it; empty when it has none.
std::string PeerAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  char text[INET6_ADDRSTRLEN] = {};
  const void* at = ss.ss_family == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr)
                                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&ss)->sin_addr);
  if (::inet_ntop(ss.ss_family, at, text, sizeof text) == nullptr) return {};
  return text;
}

// Whether a client address (PeerAddress's text) is a loopback one: 127.0.0.0/8 or ::1.
bool IsLoopbackAddress(const std::string& address) {
  boost::system::error_code ec;
  const asio::ip::address a = asio::ip::make_address(address, ec);
  return !ec && a.is_loopback();
}

// How often a client with bytes waiting unread is looked at again for a hang-up, while its dial waits or runs.
constexpr auto kHangUpRecheck = std::chrono::milliseconds(100);

// Waits until the client of a connection whose dial waits or runs has hung up (its end of the connection ended or
// reset), without reading a byte it may still send (the request's body, the next request): the kernel's POLLRDHUP
// says so whatever bytes wait unread before the end. An empty socket is waited on until something comes; one with
// bytes waiting would end such a wait at once, so it is looked at again every kHangUpRecheck instead of spinning.
// False: cancelled (the parallel group ending once the dial has), or the socket closed here.
asio::awaitable<bool> ClientHungUp(tcp::socket& client) {
  asio::steady_timer later(co_await asio::this_coro::executor);
  for (;;) {
    pollfd p{client.native_handle(), POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) co_return true;
    if ((p.revents & POLLIN) != 0) {
      later.expires_after(kHangUpRecheck);
      auto [ec] = co_await later.async_wait(kAwait);
      if (ec) co_return false;
      continue;
    }
    auto [ec] = co_await client.async_wait(tcp::socket::wait_read, kAwait);
    if (ec) co_return false;
  }
}

// A TCP socket's protocol, by the family of its own address.
tcp ProtocolOf(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return ss.ss_family == AF_INET6 ? tcp::v6() : tcp::v4();
}

// A connection over a cap: its one answer, sent as the socket takes it (a fresh socket's buffer holds it), then the
// close.
void Refuse(Fd fd, int status, const std::string& why) {
  const std::string answer = PlainResponse(status, ReasonOf(status), why);
  (void)::send(fd.get(), answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd.get(), SHUT_WR);
}

// A dial dropped before it started: its proxy stopped or its client is gone (no one reads the 502).
constexpr char kDialDropped[] = "the preview has ended";

// A duration in a message: "90 s", or "300 ms" when it is no whole number of seconds.
std::string Spoken(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
  return std::to_string(d.count()) + " ms";
}

// What a dial worker hands back: the app's connection, or the 502's text.
struct Dialed {
  Fd fd;
  std::string failure;
};

// How an exchange ended: the connection closes, takes another request, or goes on as bytes (101).
enum class Next { kClose, kAnother, kUpgraded };

}  // namespace

class PreviewProxy::Impl {
 public:
  Impl(api::PreviewAccess& access, PreviewProxyOptions options, std::atomic<size_t>& open, std::atomic<size_t>& dials)
      : access_(access),
        opts_(std::move(options)),
        open_(open),
        dials_(dials),
        work_(asio::make_work_guard(ioc_)),
        dialers_(std::max<size_t>(opts_.dial_workers, 1)) {
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~Impl() { Stop(); }

  void Take(int fd, std::string pending, int refused = 0) {
    // Owned from here: a post that never runs (the loop stopped) still closes it.
    asio::post(ioc_, [this, owned = Fd(fd), pending = std::move(pending), refused]() mutable {
      if (stopped_) return;
      std::string address = PeerAddress(owned.get());
      if (conns_.size() >= opts_.max_connections)
        return Refuse(std::move(owned), 503,
                      "the preview proxy has " + std::to_string(opts_.max_connections) +
                          " connections open; try again once one has closed");
      const bool counted = opts_.limit_loopback_peers || !IsLoopbackAddress(address);
      if (counted && per_address_[address] >= opts_.max_connections_per_address)
        return Refuse(std::move(owned), 429,
                      "this address has " + std::to_string(opts_.max_connections_per_address) +
                          " preview connections open; close one first");
      auto conn = std::make_shared<Conn>(ioc_);
      boost::system::error_code ec;
      conn->client.assign(ProtocolOf(owned.get()), owned.get(), ec);
      if (ec) return;  // `owned` closes it
      owned.Release();
      egress::EnableEdgeReads(conn->client);
      if (counted) {
        conn->address = std::move(address);
        ++per_address_[conn->address];
      }
      conn->counted = counted;
      conns_.push_back(conn);
      ++open_;
      auto serve = refused != 0 ? ServeRefused(conn, refused) : Serve(conn, std::move(pending));
      asio::co_spawn(ioc_, std::move(serve), [this, conn](std::exception_ptr failed) {
        conns_.remove(conn);
        if (conn->counted && --per_address_[conn->address] == 0) per_address_.erase(conn->address);
        --open_;
        if (!failed) return;
        try {
          std::rethrow_exception(failed);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "isb serve: preview: a connection failed: %s\n", e.what());
        }
      });
    });
  }

  bool Takes(std::string_view host_field, std::string_view target) const {
    return api::ParsePreviewOfRequest(host_field, target, access_.domain()).has_value();
  }

  void CutEnded() {
    asio::post(ioc_, [this] {
      for (const auto& c : conns_)
        if (!c->key.empty() && !access_.Alive(c->key)) c->Close();
    });
  }

  void Stop() {
    if (!thread_.joinable()) return;
    stopped_ = true;  // dials waiting for a worker are dropped from here on
    asio::post(ioc_, [this] {
      stopped_ = true;
      for (const auto& c : conns_) c->Close();
      work_.reset();
    });
    thread_.join();
    dialers_.join();
  }

 private:
  struct Conn {
    explicit Conn(asio::io_context& ioc) : client(ioc), app(ioc) {}
    void Close() {
      gone = true;
      boost::system::error_code ignored;
      client.close(ignored);
      app.close(ignored);
    }
    tcp::socket client, app;
    std::string key;                // the session's, once a request was let in
    std::string address;            // the client's, as per_address_ counts it
    std::atomic<bool> gone{false};  // closed: read by dial workers
    bool counted = false;  // whether per_address_ counts it (a loopback peer is not, unless limit_loopback_peers)
  };

  asio::awaitable<void> Serve(std::shared_ptr<Conn> c, std::string buffer);
  // The answer `status` (400 or 431), then what the client still sends is read and dropped until it ends or
  // head_timeout passes: a close with unread bytes would reset the connection, and the answer could be lost.
  asio::awaitable<void> ServeRefused(std::shared_ptr<Conn> c, int status);
  // Reads until `buffer` holds a whole request head, or answers why not; nullopt: the connection is to end.
  asio::awaitable<std::optional<egress::HttpHead>> ReadHead(Conn& c, egress::RelayEnds& ends, std::string& buffer);
  // Dials the preview's port in its sandbox on a dial worker; an answer for the client when that fails (none is
  // sent once the client is gone: Conn::gone).
  asio::awaitable<std::string> Dial(std::shared_ptr<Conn> c, const api::PreviewHost& host);
  // Ends once the client of `c` has hung up, having closed `c` (so its dial is dropped if no worker has taken it),
  // or once `c` is closed here.
  asio::awaitable<void> WatchHangUp(std::shared_ptr<Conn> c) {
    // Awaited apart from the condition: g++ 12 miscompiles a co_await inside `&&` (an illegal instruction).
    const bool hung_up = co_await ClientHungUp(c->client);
    if (hung_up && !c->gone) c->Close();
  }
  // Looks up the sandbox's namespace and dials the app in it: on a dial worker, blocking. (A member coroutine
  // with its argument by value, not a lambda's captures: g++ 12 frees those early.)
  asio::awaitable<Dialed> DialOnWorker(api::PreviewHost host, std::shared_ptr<Conn> c);
  // The lookup and the connect, on the worker's thread; checks whether the client is gone between the steps.
  Dialed DialNow(const api::PreviewHost& host, const Conn& c);
  // One request let in and its response (after any interim ones), relayed between the client and the app.
  asio::awaitable<Next> Exchange(Conn& c, egress::RelayEnds& ends, const api::PreviewHost& host,
                                 const egress::HttpHead& head, std::string& buffer, std::string& from_app);
  asio::awaitable<void> Answer(Conn& c, const std::string& response) {
    // Outside any idle watch: a client that never reads is closed at head_timeout instead of holding the write.
    const auto deadline = std::chrono::steady_clock::now() + opts_.head_timeout;
    co_await (egress::Send(c.client, response) || CloseAt(c.client, deadline));
    boost::system::error_code ignored;
    c.client.shutdown(tcp::socket::shutdown_send, ignored);
  }

  api::PreviewAccess& access_;
  const PreviewProxyOptions opts_;
  std::atomic<size_t>& open_;
  std::atomic<size_t>& dials_;  // the sum of dialing_
  api::PreviewFilter filter_;
  std::atomic<uint64_t> bytes_up_{0}, bytes_down_{0}, idle_closed_{0};
  asio::io_context ioc_{1};
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  asio::thread_pool dialers_;
  std::list<std::shared_ptr<Conn>> conns_;     // the event loop's thread only
  std::map<std::string, size_t> per_address_;  // open connections by client address; the loop's only
  std::map<std::string, size_t> dialing_;      // dials waiting or running by sandbox; the loop's only
  std::atomic<bool> stopped_{false};
  std::thread thread_;
};

asio::awaitable<std::optional<egress::HttpHead>> PreviewProxy::Impl::ReadHead(Conn& c, egress::RelayEnds& ends,
                                                                              std::string& buffer) {
  // One deadline for the whole head: a client sending a byte at a time is still closed when it passes.
  const auto deadline = std::chrono::steady_clock::now() + opts_.head_timeout;
  for (int reads = 0;; ++reads) {
    egress::HeadResult r = egress::ParseHttpHead(buffer);
    if (r.kind == egress::HeadResult::kParsed) co_return std::move(r.head);
    int status = r.status;
    std::string reason = r.reason;
    if (r.kind == egress::HeadResult::kNotHttp) {
      status = 400;
    } else if (r.kind == egress::HeadResult::kNeedMore) {
      if (buffer.size() >= egress::kMaxHttpHead) {
        status = 431;
        reason = "request head too large";
      } else if (reads >= egress::kMaxHeadReads) {
        status = 400;
        reason = egress::kTooManyPieces;
      }
    }
    if (status != 0) {
      co_await Answer(c, PlainResponse(status, ReasonOf(status), reason));
      co_return std::nullopt;
    }
    egress::SocketStream client(c.client, ends, bytes_down_);
    auto got = co_await (client.ReadInto(buffer, egress::kMaxHttpHead - buffer.size()) || CloseAt(c.client, deadline));
    if (got.index() == 1) co_return std::nullopt;  // too slow: closed
    Result<size_t> n = std::get<0>(got);
    if (!n.ok() || *n == 0) co_return std::nullopt;
  }
}

asio::awaitable<Dialed> PreviewProxy::Impl::DialOnWorker(api::PreviewHost host, std::shared_ptr<Conn> c) {
  // Whatever the lookup or the dial throws (a thread that cannot start at the daemon's task limit) is this dial's
  // failure: the group waits for this branch to succeed, so an exception would leave the client unanswered.
  Dialed out;
  try {
    out = DialNow(host, *c);
  } catch (const std::exception& e) {
    out = Dialed{Fd(), "the preview of port " + std::to_string(host.port) + " in sandbox " + host.sandbox +
                           " could not be dialled: " + e.what()};
  }
  co_return out;
}

Dialed PreviewProxy::Impl::DialNow(const api::PreviewHost& host, const Conn& conn) {
  const Conn* c = &conn;
  const std::string where = "port " + std::to_string(host.port) + " in sandbox " + host.sandbox;
  if (stopped_ || c->gone) return Dialed{Fd(), kDialDropped};
  Result<Fd> netns = opts_.netns(host.sandbox);
  if (!netns.ok()) return Dialed{Fd(), "the preview of " + where + " is not reachable: " + netns.error().message};
  if (stopped_ || c->gone) return Dialed{Fd(), kDialDropped};
  Result<Fd> dialed = DialLoopbackIn(netns->get(), host.port, opts_.dial_timeout);
  if (!dialed.ok()) return Dialed{Fd(), "nothing answers on " + where + ": " + dialed.error().message};
  if (stopped_ || c->gone) return Dialed{Fd(), kDialDropped};  // the connection made is closed here
  return Dialed{std::move(*dialed), {}};
}

asio::awaitable<std::string> PreviewProxy::Impl::Dial(std::shared_ptr<Conn> conn, const api::PreviewHost& host) {
  Conn& c = *conn;
  size_t& dialing = dialing_[host.sandbox];
  if (dialing >= opts_.max_dials_per_sandbox) {
    if (dialing == 0) dialing_.erase(host.sandbox);
    co_return PlainResponse(503, "Service Unavailable",
                            "sandbox " + host.sandbox + " has " + std::to_string(opts_.max_dials_per_sandbox) +
                                " preview connections waiting for its app; try again once one has connected");
  }
  ++dialing;
  ++dials_;
  // The lookup (a database query) and the connect block: on a worker, resuming here with the connection. Meanwhile
  // a client that hangs up is closed at once (Conn::gone), so a worker that comes to its dial drops it unmade. No
  // cancellation reaches the dial (nor so its worker's thread): the group waits for the worker, so the slot stays
  // taken until the worker has dropped the dial or ended the one under way (the queue of a sandbox never grows past
  // its cap, however fast clients come and go), and the connection it made is dropped with the group's result,
  // closed, never handed on.
  auto ended = co_await (asio::co_spawn(dialers_, DialOnWorker(host, conn),
                                        asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable)) ||
                         WatchHangUp(conn));
  if (--dialing_[host.sandbox] == 0) dialing_.erase(host.sandbox);
  --dials_;
  if (ended.index() == 1 || stopped_ || !c.client.is_open())
    co_return PlainResponse(502, "Bad Gateway", kDialDropped);  // `ended` closes what was made
  Dialed& dialed = std::get<0>(ended);
  if (!dialed.failure.empty()) co_return PlainResponse(502, "Bad Gateway", dialed.failure);
  boost::system::error_code ec;
  const tcp protocol = ProtocolOf(dialed.fd.get());
  c.app.assign(protocol, dialed.fd.get(), ec);
  if (ec) co_return PlainResponse(502, "Bad Gateway", "the app's connection: " + ec.message());
  dialed.fd.Release();
  egress::EnableEdgeReads(c.app);
  co_return std::string();
}

asio::awaitable<Next> PreviewProxy::Impl::Exchange(Conn& c, egress::RelayEnds& ends, const api::PreviewHost& host,
                                                   const egress::HttpHead& head, std::string& buffer,
                                                   std::string& from_app) {
  egress::SocketStream client(c.client, ends, bytes_down_);
  egress::SocketStream app(c.app, ends, bytes_up_);
  const egress::Exchange exchange{host.sandbox, api::PreviewHostName(host, access_.domain()), host.port, false};
  std::string as_sent = buffer.substr(0, head.size);
  buffer.erase(0, head.size);
  egress::PreparedMessage request = egress::PrepareRequest(filter_, exchange, std::move(as_sent), head);
  if (!(co_await egress::RelayMessage(client, app, buffer, request)).ok()) co_return Next::kClose;
  // The response, after any interim ones (100 Continue); 101 ends the HTTP exchange. Until its first byte, the app
  // has response_timeout; from there on only the idle watch holds.
  auto answer_by = std::chrono::steady_clock::now() + opts_.response_timeout;
  bool begun = false;  // a byte of the response came in this exchange
  for (;;) {
    egress::ResponseHeadResult r = egress::ParseResponseHead(from_app);
    if (r.kind == egress::ResponseHeadResult::kMalformed) {
      co_await Answer(c, PlainResponse(502, "Bad Gateway", "the app's response is malformed: " + r.reason));
      co_return Next::kClose;
    }
    if (r.kind == egress::ResponseHeadResult::kNeedMore) {
      const auto by = begun ? std::chrono::steady_clock::time_point::max() : answer_by;
      auto got = co_await (app.ReadInto(from_app, egress::kRelayPiece) || CloseAt(c.app, by));
      if (got.index() == 1) {  // the app's connection is closed
        co_await Answer(
            c, PlainResponse(504, "Gateway Timeout",
                             "port " + std::to_string(host.port) + " in sandbox " + host.sandbox +
                                 " took the request but sent no response within " + Spoken(opts_.response_timeout)));
        co_return Next::kClose;
      }
      Result<size_t> n = std::get<0>(got);
      if (!n.ok() || *n == 0) {
        co_await Answer(c, PlainResponse(502, "Bad Gateway", "the app closed the connection without a response"));
        co_return Next::kClose;
      }
      begun = true;
      continue;
    }
    std::string head_bytes = from_app.substr(0, r.head.size);
    from_app.erase(0, r.head.size);
    egress::PreparedMessage out = egress::PrepareResponse(filter_, exchange, head, std::move(head_bytes), r.head);
    if (r.head.status >= 100 && r.head.status < 200 && r.head.status != 101) {
      if (!(co_await client.Write(out.head.Bytes())).ok()) co_return Next::kClose;
      // An interim answer (100 Continue, 102 Processing) is not the response: the app has the timeout again for it.
      begun = false;
      answer_by = std::chrono::steady_clock::now() + opts_.response_timeout;
      continue;
    }
    if (!(co_await egress::RelayMessage(app, client, from_app, out)).ok()) co_return Next::kClose;
    if (r.head.status == 101) co_return Next::kUpgraded;
    if (r.head.until_close || WantsClose(head.headers, head.minor_version) ||
        WantsClose(r.head.headers, r.head.minor_version))
      co_return Next::kClose;
    co_return Next::kAnother;
  }
}

asio::awaitable<void> PreviewProxy::Impl::Serve(std::shared_ptr<Conn> c, std::string buffer) {
  egress::RelayEnds ends;
  std::optional<api::PreviewHost> host;
  std::string from_app;
  for (;;) {
    std::optional<egress::HttpHead> head = co_await ReadHead(*c, ends, buffer);
    if (!head) break;
    std::optional<api::PreviewHost> named = api::ParsePreviewHost(head->host, access_.domain());
    if (!named || (host && !(*named == *host))) {
      co_await Answer(*c, PlainResponse(421, "Misdirected Request",
                                        "this connection is for another preview: open a connection of its own"));
      break;
    }
    host = named;
    if (head->path.rfind(api::kPreviewLinkPath, 0) == 0) {
      std::string_view token = std::string_view(head->path).substr(std::strlen(api::kPreviewLinkPath));
      token = token.substr(0, token.find_first_of("?#"));
      Result<api::PreviewSession> spent = access_.Spend(token, *host);
      // Chosen before the co_await: g++ 12 evaluates both arms of a conditional inside one.
      std::string answer;
      if (spent.ok())
        answer = OpenedResponse(*spent, access_.secure());
      else
        answer = PlainResponse(403, "Forbidden", spent.error().message);
      co_await Answer(*c, answer);
      break;
    }
    Result<std::string> key = access_.Check(PreviewCookie(*head), *host);
    if (!key.ok()) {
      co_await Answer(*c, PlainResponse(403, "Forbidden", key.error().message));
      break;
    }
    c->key = *key;
    if (!c->app.is_open()) {
      std::string failed = co_await Dial(c, *host);
      if (!failed.empty()) {
        if (!c->gone) co_await Answer(*c, failed);
        break;
      }
    }
    // A body or a response that stops moving for idle_timeout closes both sides (Watch).
    ends.last_read = std::chrono::steady_clock::now();
    auto done = co_await (Exchange(*c, ends, *host, *head, buffer, from_app) ||
                          egress::Watch(c->client, c->app, ends, opts_.idle_timeout, idle_closed_));
    if (done.index() == 1 || std::get<0>(done) == Next::kClose) break;
    if (std::get<0>(done) == Next::kUpgraded) {
      // The app took the upgrade (a WebSocket): bytes from here on, either way, until both have ended.
      egress::SocketStream client(c->client, ends, bytes_down_);
      egress::SocketStream app(c->app, ends, bytes_up_);
      // Before the watch starts: each write has idle_timeout, or its side is closed.
      const auto deadline = std::chrono::steady_clock::now() + opts_.idle_timeout;
      if (!from_app.empty()) {
        auto wrote = co_await (client.Write(from_app) || CloseAt(c->client, deadline));
        if (wrote.index() == 1 || !std::get<0>(wrote).ok()) break;
      }
      if (!buffer.empty()) {
        auto wrote = co_await (app.Write(buffer) || CloseAt(c->app, deadline));
        if (wrote.index() == 1 || !std::get<0>(wrote).ok()) break;
      }
      co_await (
          (egress::Pump(c->client, c->app, bytes_up_, ends) && egress::Pump(c->app, c->client, bytes_down_, ends)) ||
          egress::Watch(c->client, c->app, ends, opts_.idle_timeout, idle_closed_));
      break;
    }
  }
  c->Close();
}

asio::awaitable<void> PreviewProxy::Impl::ServeRefused(std::shared_ptr<Conn> c, int status) {
  co_await Answer(
      *c, PlainResponse(status, ReasonOf(status), status == 431 ? "request head too large" : "malformed request head"));
  egress::RelayEnds ends;
  egress::SocketStream client(c->client, ends, bytes_down_);
  const auto deadline = std::chrono::steady_clock::now() + opts_.head_timeout;
  size_t drained = 0;
  for (std::string dropped; drained < kMaxRefusedDrain; dropped.clear()) {
    auto got = co_await (client.ReadInto(dropped, egress::kRelayPiece) || CloseAt(c->client, deadline));
    if (got.index() == 1 || !std::get<0>(got).ok() || *std::get<0>(got) == 0) break;
    drained += *std::get<0>(got);
  }
  c->Close();
}

PreviewProxy::PreviewProxy(api::PreviewAccess& access, PreviewProxyOptions options)
    : impl_(std::make_unique<Impl>(access, std::move(options), open_, dials_)) {}
PreviewProxy::~PreviewProxy() { Stop(); }

bool PreviewProxy::Takes(std::string_view host_field, std::string_view target) const {
  return impl_->Takes(host_field, target);
}

void PreviewProxy::Take(int fd, std::string pending) { impl_->Take(fd, std::move(pending)); }
void PreviewProxy::TakeRefused(int fd, int status) { impl_->Take(fd, {}, status); }
void PreviewProxy::CutEnded() { impl_->CutEnded(); }
void PreviewProxy::Stop() { impl_->Stop(); }

}  // namespace isb::daemon
