// One coroutine per preview connection on the proxy's own event loop (one thread): read a request head, decide by
// its host and cookie, then relay it and its response through the message relay.
#include "daemon/preview_proxy.h"

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <cstdio>
#include <cstring>
#include <list>
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
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
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

// Closes `s` once `after` has passed, which ends whatever waits on it; cancelled (the parallel group ending) before.
asio::awaitable<void> CloseAfter(tcp::socket& s, std::chrono::milliseconds after) {
  asio::steady_timer timer(co_await asio::this_coro::executor, after);
  auto [ec] = co_await timer.async_wait(kAwait);
  if (ec) co_return;
  boost::system::error_code ignored;
  s.close(ignored);
}

}  // namespace

class PreviewProxy::Impl {
 public:
  Impl(api::PreviewAccess& access, PreviewProxyOptions options, std::atomic<size_t>& open)
      : access_(access), opts_(std::move(options)), open_(open), work_(asio::make_work_guard(ioc_)) {
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~Impl() { Stop(); }

  void Take(int fd, std::string pending) {
    asio::post(ioc_, [this, fd, pending = std::move(pending)]() mutable {
      Fd owned(fd);
      if (stopped_ || conns_.size() >= opts_.max_connections) return;
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
      auto conn = std::make_shared<Conn>(ioc_);
      boost::system::error_code ec;
      conn->client.assign(ss.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), owned.Release(), ec);
      if (ec) return;
      egress::EnableEdgeReads(conn->client);
      conns_.push_back(conn);
      ++open_;
      asio::co_spawn(ioc_, Serve(conn, std::move(pending)), [this, conn](std::exception_ptr failed) {
        conns_.remove(conn);
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
    asio::post(ioc_, [this] {
      stopped_ = true;
      for (const auto& c : conns_) c->Close();
      work_.reset();
    });
    thread_.join();
  }

 private:
  struct Conn {
    explicit Conn(asio::io_context& ioc) : client(ioc), app(ioc) {}
    void Close() {
      boost::system::error_code ignored;
      client.close(ignored);
      app.close(ignored);
    }
    tcp::socket client, app;
    std::string key;  // the session's, once a request was let in
  };

  asio::awaitable<void> Serve(std::shared_ptr<Conn> c, std::string buffer);
  // Reads until `buffer` holds a whole request head, or answers why not; nullopt: the connection is to end.
  asio::awaitable<std::optional<egress::HttpHead>> ReadHead(Conn& c, egress::RelayEnds& ends, std::string& buffer);
  // Dials the preview's port in its sandbox; an answer for the client when that fails.
  asio::awaitable<std::string> Dial(Conn& c, const api::PreviewHost& host);
  asio::awaitable<void> Answer(Conn& c, const std::string& response) {
    co_await egress::Send(c.client, response);
    boost::system::error_code ignored;
    c.client.shutdown(tcp::socket::shutdown_send, ignored);
  }

  api::PreviewAccess& access_;
  const PreviewProxyOptions opts_;
  std::atomic<size_t>& open_;
  api::PreviewFilter filter_;
  std::atomic<uint64_t> bytes_up_{0}, bytes_down_{0}, idle_closed_{0};
  asio::io_context ioc_{1};
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::list<std::shared_ptr<Conn>> conns_;  // the event loop's thread only
  bool stopped_ = false;
  std::thread thread_;
};

asio::awaitable<std::optional<egress::HttpHead>> PreviewProxy::Impl::ReadHead(Conn& c, egress::RelayEnds& ends,
                                                                              std::string& buffer) {
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
    auto got = co_await (client.ReadInto(buffer, egress::kMaxHttpHead - buffer.size()) ||
                         CloseAfter(c.client, opts_.head_timeout));
    if (got.index() == 1) co_return std::nullopt;  // too slow: closed
    Result<size_t> n = std::get<0>(got);
    if (!n.ok() || *n == 0) co_return std::nullopt;
  }
}

asio::awaitable<std::string> PreviewProxy::Impl::Dial(Conn& c, const api::PreviewHost& host) {
  const std::string where = "port " + std::to_string(host.port) + " in sandbox " + host.sandbox;
  Result<Fd> netns = opts_.netns(host.sandbox);
  if (!netns.ok())
    co_return PlainResponse(502, "Bad Gateway",
                            "the preview of " + where + " is not reachable: " + netns.error().message);
  Result<Fd> dialed = ConnectLoopbackIn(netns->get(), host.port);
  if (!dialed.ok())
    co_return PlainResponse(502, "Bad Gateway", "nothing answers on " + where + ": " + dialed.error().message);
  boost::system::error_code ec;
  c.app.assign(tcp::v4(), dialed->Release(), ec);
  if (ec) co_return PlainResponse(502, "Bad Gateway", "nothing answers on " + where + ": " + ec.message());
  egress::EnableEdgeReads(c.app);
  // A loopback connect has mostly ended by now; else its end is the socket's first edge, after this wait is queued.
  pollfd ready{c.app.native_handle(), POLLOUT, 0};
  if (::poll(&ready, 1, 0) == 0)
    co_await (c.app.async_wait(tcp::socket::wait_write, kAwait) || CloseAfter(c.app, opts_.head_timeout));
  int err = ETIMEDOUT;
  if (c.app.is_open()) {
    socklen_t len = sizeof err;
    if (::getsockopt(c.app.native_handle(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  }
  if (err != 0) {
    c.app.close(ec);
    co_return PlainResponse(502, "Bad Gateway", "nothing answers on " + where + ": " + std::strerror(err));
  }
  co_return std::string();
}

asio::awaitable<void> PreviewProxy::Impl::Serve(std::shared_ptr<Conn> c, std::string buffer) {
  egress::RelayEnds ends;
  egress::SocketStream client(c->client, ends, bytes_down_);
  egress::SocketStream app(c->app, ends, bytes_up_);
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
        answer = OpenedResponse(*spent, false);
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
      std::string failed = co_await Dial(*c, *host);
      if (!failed.empty()) {
        co_await Answer(*c, failed);
        break;
      }
    }
    const egress::Exchange exchange{host->sandbox, api::PreviewHostName(*host, access_.domain()), host->port, false};
    std::string as_sent = buffer.substr(0, head->size);
    buffer.erase(0, head->size);
    egress::PreparedMessage request = egress::PrepareRequest(filter_, exchange, std::move(as_sent), *head);
    if (!(co_await egress::RelayMessage(client, app, buffer, request)).ok()) break;
    // The response, after any interim ones (100 Continue); 101 ends the HTTP exchange.
    egress::ResponseHead response;
    for (;;) {
      egress::ResponseHeadResult r = egress::ParseResponseHead(from_app);
      if (r.kind == egress::ResponseHeadResult::kMalformed) {
        co_await Answer(*c, PlainResponse(502, "Bad Gateway", "the app's response is malformed: " + r.reason));
        co_return c->Close();
      }
      if (r.kind == egress::ResponseHeadResult::kNeedMore) {
        Result<size_t> n = co_await app.ReadInto(from_app, egress::kRelayPiece);
        if (!n.ok() || *n == 0) {
          co_await Answer(*c, PlainResponse(502, "Bad Gateway", "the app closed the connection without a response"));
          co_return c->Close();
        }
        continue;
      }
      std::string head_bytes = from_app.substr(0, r.head.size);
      from_app.erase(0, r.head.size);
      egress::PreparedMessage out = egress::PrepareResponse(filter_, exchange, *head, std::move(head_bytes), r.head);
      if (r.head.status >= 100 && r.head.status < 200 && r.head.status != 101) {
        if (!(co_await client.Write(out.head.Bytes())).ok()) co_return c->Close();
        continue;
      }
      if (!(co_await egress::RelayMessage(app, client, from_app, out)).ok()) co_return c->Close();
      response = std::move(r.head);
      break;
    }
    if (response.status == 101) {
      // The app took the upgrade (a WebSocket): bytes from here on, either way, until both have ended.
      if (!from_app.empty() && !(co_await client.Write(from_app)).ok()) break;
      if (!buffer.empty() && !(co_await app.Write(buffer)).ok()) break;
      co_await (
          (egress::Pump(c->client, c->app, bytes_up_, ends) && egress::Pump(c->app, c->client, bytes_down_, ends)) ||
          egress::Watch(c->client, c->app, ends, opts_.idle_timeout, idle_closed_));
      break;
    }
    if (response.until_close || WantsClose(head->headers, head->minor_version) ||
        WantsClose(response.headers, response.minor_version))
      break;
  }
  c->Close();
}

PreviewProxy::PreviewProxy(api::PreviewAccess& access, PreviewProxyOptions options)
    : impl_(std::make_unique<Impl>(access, std::move(options), open_)) {}
PreviewProxy::~PreviewProxy() { Stop(); }

bool PreviewProxy::Takes(std::string_view host_field, std::string_view target) const {
  return impl_->Takes(host_field, target);
}

void PreviewProxy::Take(int fd, std::string pending) { impl_->Take(fd, std::move(pending)); }
void PreviewProxy::CutEnded() { impl_->CutEnded(); }
void PreviewProxy::Stop() { impl_->Stop(); }

}  // namespace isb::daemon
