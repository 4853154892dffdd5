// The only Beast translation unit: accept loops, one coroutine per connection, tool calls on a worker pool.
#include "api/http_server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "api/json_util.h"
#include "api/listen_address.h"
#include "api/metrics_endpoint.h"
#include "api/preview_host.h"
#include "api/server_routes.h"
#include "api/web_auth.h"
#include "base/mutex.h"
#include "identity/rate_limit.h"

namespace isb::api {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using unix_proto = net::local::stream_protocol;

namespace {

// Whether a Host header names this host by a loopback name: localhost, 127.0.0.0/8 or [::1], any port.
bool NamesLoopback(std::string_view host) {
  std::string h(host);
  if (h.starts_with('[')) {
    const size_t close = h.find(']');
    h = close == std::string::npos ? "" : h.substr(1, close - 1);
  } else if (const size_t colon = h.find(':'); colon != std::string::npos) {
    h = h.substr(0, colon);
  }
  for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return h == "localhost" || IsLoopbackHost(h);
}

// Whether two answers of the authenticator give the same access: what every check of a call looks at.
bool SameAccess(const Identity& a, const Identity& b) {
  return a.user_id == b.user_id && a.credential_id == b.credential_id && a.superadmin == b.superadmin &&
         a.platform_admin == b.platform_admin && a.org_scope == b.org_scope && a.role_cap == b.role_cap &&
         a.roles == b.roles && a.scopes == b.scopes;
}

// Whether the caller of an open stream or terminal is still let in as it was: asked of the authenticator at most
// once per `every`; once not, never again. Thread-safe (a terminal asks from its reader and its exec).
class CallerCheck {
 public:
  CallerCheck(const Authenticator& auth, Request req, Identity who, std::chrono::milliseconds every)
      : auth_(auth),
        req_(std::move(req)),
        who_(std::move(who)),
        every_(every),
        next_(std::chrono::steady_clock::now() + every) {}
  bool Holds() {
    MutexLock lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (!holds_ || now < next_) return holds_;
    Result<Identity> again = auth_(req_, false);
    holds_ = again.ok() && SameAccess(*again, who_);
    next_ = std::chrono::steady_clock::now() + every_;
    return holds_;
  }

 private:
  const Authenticator& auth_;
  const Request req_;
  const Identity who_;
  const std::chrono::milliseconds every_;
  Mutex mu_;
  bool holds_ ISB_GUARDED_BY(mu_) = true;
  std::chrono::steady_clock::time_point next_ ISB_GUARDED_BY(mu_);
};

constexpr auto kAwait = net::as_tuple(net::use_awaitable);

// Runs f() on a worker thread and resumes the calling coroutine with its result (or its exception) on the
// coroutine's own executor: one post to the pool, one dispatch back, and no coroutine of its own on the pool (whose
// completion would wake a second worker on every call).
template <class F>
auto OnWorker(net::thread_pool& pool, F f) {
  using T = std::invoke_result_t<F&>;
  auto initiate = [&pool](auto handler, F work) {
    auto home = net::prefer(net::get_associated_executor(handler), net::execution::outstanding_work.tracked);
    net::post(pool, [h = std::move(handler), home = std::move(home), work = std::move(work)]() mutable {
      std::exception_ptr error;
      std::optional<T> result;
      try {
        result.emplace(work());
      } catch (...) {
        error = std::current_exception();
      }
      net::dispatch(home, [h2 = std::move(h), error, out = std::move(result)]() mutable {
        std::move(h2)(error, out ? std::move(*out) : T{});
      });
    });
  };
  return net::async_initiate<const net::use_awaitable_t<>&, void(std::exception_ptr, T)>(initiate, net::use_awaitable,
                                                                                         std::move(f));
}

bool IsHttpParseError(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::partial_message).category();
}

Request ToRequest(const http::request<http::string_body>& msg, bool via_unix) {
  Request req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  for (const auto& field : msg) req.headers.Add(std::string(field.name_string()), std::string(field.value()));
  req.body = msg.body();
  req.via_unix_socket = via_unix;
  return req;
}

template <class Message>
void CopyHeaders(const Response& from, Message& to) {
  to.result(static_cast<unsigned>(from.status));
  to.set(http::field::server, "isb");
  for (const auto& [name, value] : from.headers.fields()) to.set(name, value);
}

bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

// `resource_metadata`: the RFC 9728 metadata URL of the resource refused, or "" for none.
Response Unauthenticated(const std::string& message, const std::string& resource_metadata = "") {
  Response r = ErrorResponse(Error::Of(Code::kUnauthenticated, message));
  std::string challenge = "Bearer realm=\"isb\"";
  if (!resource_metadata.empty()) {
    // A quoted-string (RFC 9110 §5.6.4): the URL holds the request's Host, so '"' and a backslash in it are escaped.
    challenge += ", resource_metadata=\"";
    for (char c : resource_metadata) {
      if (c == '"' || c == '\\') challenge.push_back('\\');
      challenge.push_back(c);
    }
    challenge += "\"";
  }
  r.headers.Set("WWW-Authenticate", challenge);
  return r;
}

// Makes the socket's directory 0700 (creating it when absent) and removes a stale socket left by a dead daemon.
Status PrepareUnixSocket(const std::string& path) {
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return Error::Of(Code::kInvalidArgument, "unix socket path is too long (max 107 bytes): " + path);
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (mkdir(dir.c_str(), 0700) != 0) {
    if (errno != EEXIST) return Error::Sys("creating the socket directory " + dir);
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) return Error::Sys("stat " + dir);
    if (!S_ISDIR(st.st_mode)) return Error::Msg(dir + " is not a directory");
    if ((st.st_mode & 077) != 0) {
      // Tightening a shared directory such as /tmp would break the system; only our own private one is changed.
      if (st.st_uid != geteuid() || (st.st_mode & (S_ISVTX | S_IWOTH)) != 0) {
        return Error::Msg("the socket directory " + dir +
                          " is shared with other users; put the socket in a "
                          "directory of its own (it is made 0700)");
      }
      if (chmod(dir.c_str(), 0700) != 0) return Error::Sys("chmod 0700 " + dir);
    }
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return {};
  if (!S_ISSOCK(st.st_mode)) return Error::Msg(path + " exists and is not a socket; remove it or choose another path");
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::Sys("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  bool live = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  if (live) return Error::Msg("another server is listening on " + path + "; stop it first");
  if (unlink(path.c_str()) != 0) return Error::Sys("removing the stale socket " + path);
  return {};
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, RestApi& rest, McpServer& mcp, Authenticator auth)
      : opts_(std::move(options)),
        rest_(rest),
        mcp_(mcp),
        auth_(std::move(auth)),
        router_(Router::Make(ServerRoutes())),
        ioc_(std::max(1, opts_.io_threads)),
        pool_(static_cast<size_t>(std::max(1, opts_.worker_threads))),
        unix_pool_(static_cast<size_t>(std::max(1, opts_.unix_worker_threads))) {}

  ~Impl() { Stop(); }

  Status Start();
  void Stop();
  uint16_t port() const { return port_; }
  const std::vector<Route>& routes() const {
    static const std::vector<Route> kNone;
    return router_.ok() ? router_->routes() : kNone;
  }

 private:
  // Counted slots per key (an account's calls, an address's connections), at most `limit` held per key.
  class KeyedSlots {
   public:
    explicit KeyedSlots(size_t limit) : limit_(limit) {}
    // A slot for `key`, given back when the last copy of the pointer goes; null when `key` holds them all.
    std::shared_ptr<void> Take(const std::string& key);

   private:
    const size_t limit_;
    Mutex mu_;
    std::unordered_map<std::string, size_t> held_ ISB_GUARDED_BY(mu_);
  };
  // Refuses a connection at accept: a 503 saying why (FailAndClose), then close.
  template <class Protocol>
  void Turn(typename Protocol::socket socket, const std::string& message);
  static constexpr size_t kMaxTurning = 256;
  std::atomic<size_t> turning_{0};  // connections being turned away

  template <class Protocol>
  net::awaitable<void> Accept(net::basic_socket_acceptor<Protocol>& acceptor, bool via_unix);
  template <class Protocol>
  // The slots are held until the connection is done: one of its listener's and, over TCP, one of its address's.
  net::awaitable<void> Serve(beast::basic_stream<Protocol> stream, bool via_unix, std::shared_ptr<void> connection_slot,
                             std::shared_ptr<void> address_slot);
  template <class Protocol>
  net::awaitable<void> FailAndClose(beast::basic_stream<Protocol>& stream, int status, const std::string& message);
  // Sends a 101 and gives the connection to the response's `upgraded` on a worker until it returns.
  template <class Protocol>
  net::awaitable<void> HandOver(Response resp, beast::basic_stream<Protocol>& stream, beast::flat_buffer& buffer,
                                net::thread_pool& workers);
  template <class Protocol>
  bool RunStream(const Response& resp, beast::basic_stream<Protocol>& stream);

  Response Dispatch(const Request& req);
  // A request to a route that needs a login: its caller's identity, then the account's call slot, then the route.
  Response Authenticated(const Route& route, const Request& req);
  // Where a 401 from `route` points an OAuth client: the MCP resource's metadata URL, or "" elsewhere.
  std::string ResourceMetadata(const Route& route, const Request& req) const {
    return route.handler == Handler::kMcp && opts_.resource_metadata ? opts_.resource_metadata(req) : "";
  }
  // The route's handler, for a caller already let in.
  Response Handle(const Route& route, const Request& req, const Identity& identity);

  HttpServerOptions opts_;
  RestApi& rest_;
  McpServer& mcp_;
  Authenticator auth_;
  const Result<Router> router_;  // an error only if ServerRoutes() is malformed; Start then says so
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> connections_[2] = {0, 0};        // open over TCP, over the unix socket
  KeyedSlots calls_{opts_.max_calls_per_account};      // per account, over TCP
  KeyedSlots streams_{opts_.max_streams_per_account};  // events streams and terminals per account, over TCP
  KeyedSlots all_streams_{opts_.max_streams};          // and in all, under the one key ""
  // HttpServerOptions::on_refused's budgets: per account or address, and for all of them together (addresses are
  // many: any local user may send from all of 127.0.0.0/8). Checked and spent as one step.
  Mutex refusal_mu_;
  identity::RateLimiter refusal_rows_ ISB_GUARDED_BY(refusal_mu_){{kRefusalRowsPerMinute, 60, 10000}};
  identity::RateLimiter all_refusal_rows_ ISB_GUARDED_BY(refusal_mu_){{kRefusalRowsPerMinute * 10, 60, 1}};
  // Tells on_refused of `error`, within the budget of `key`, and answers with it.
  Response Refuse(const Route& route, const Request& req, const Identity* who, const std::string& key, Error error);
  // Whether on_refused may be told of one more refusal of `key`; spends it if so.
  bool SpendRefusalRow(const std::string& key);
  // Tells on_refused (surface "http") of a request refused as malformed or too large before it could be read, from
  // the address `stream` is connected to, within that address's budget: a flood of them is visible.
  // Whether a head the parser refused names a preview: by the Host field and target it parsed before the fault
  // (the bytes it used are gone from `buffer`), else by those bytes scanned.
  // Once the start line was parsed (its target is known) the buffer holds field lines only: the first Host field
  // parsed decides, else the first scanned; never a field line read as a request line.
  bool PreviewNamed(const http::request<http::string_body>& parsed, const beast::flat_buffer& buffer) const {
    const std::string seen = beast::buffers_to_string(buffer.data());
    if (!parsed.target().empty()) {
      const std::string_view host = parsed[http::field::host];
      return opts_.preview_takes(host.empty() ? ScanHostField(seen) : host, parsed.target());
    }
    const RequestNames names = ScanRequestNames(seen);
    return opts_.preview_takes(names.host, names.target);
  }
  // A request the server refuses before it is read, by the read's error: its status (0: none) and why.
  struct Refusal {
    int status = 0;
    std::string why;
  };
  Refusal RefusalOf(const beast::error_code& ec) const;
  template <class Protocol>
  void TellMalformed(beast::basic_stream<Protocol>& stream, int status, const std::string& message);
  KeyedSlots addresses_{opts_.max_connections_per_address};  // connections per remote address, over TCP
  uint16_t port_ = 0;
  bool started_ = false, stopped_ = false;
  net::io_context ioc_;
  net::thread_pool pool_;       // TCP's calls
  net::thread_pool unix_pool_;  // the unix socket's
  std::optional<tcp::acceptor> tcp_;
  std::optional<unix_proto::acceptor> unix_;
  std::vector<std::thread> threads_;
};

Status HttpServer::Impl::Start() {
  if (started_) return Error::Msg("HttpServer::Start called twice");
  if (!router_.ok()) return router_.error();
  beast::error_code ec;
  if (opts_.listen_tcp) {
    ISB_TRY(CheckListenAddress(opts_.host));
    auto address = net::ip::make_address(opts_.host == "localhost" ? "127.0.0.1" : opts_.host, ec);
    if (ec) return Error::Of(Code::kInvalidArgument, "listen address '" + opts_.host + "': " + ec.message());
    tcp::endpoint ep(address, opts_.port);
    tcp_.emplace(ioc_);
    std::string where = opts_.host + ":" + std::to_string(opts_.port);
    if (tcp_->open(ep.protocol(), ec); ec) return Error::Msg("cannot open a socket for " + where + ": " + ec.message());
    tcp_->set_option(net::socket_base::reuse_address(true), ec);
    if (tcp_->bind(ep, ec); ec) return Error::Msg("cannot listen on " + where + ": " + ec.message());
    if (tcp_->listen(net::socket_base::max_listen_connections, ec); ec) {
      return Error::Msg("cannot listen on " + where + ": " + ec.message());
    }
    port_ = tcp_->local_endpoint().port();
  }
  if (!opts_.unix_socket_path.empty()) {
    const std::string& path = opts_.unix_socket_path;
    ISB_TRY(PrepareUnixSocket(path));
    unix_.emplace(ioc_);
    unix_proto::endpoint ep(path);
    if (unix_->open(ep.protocol(), ec); ec) return Error::Msg("cannot open a unix socket: " + ec.message());
    if (unix_->bind(ep, ec); ec) return Error::Msg("cannot bind " + path + ": " + ec.message());
    // The directory is 0700 already, so nobody else can reach the socket before this chmod.
    if (chmod(path.c_str(), 0600) != 0) return Error::Sys("chmod 0600 " + path);
    if (unix_->listen(net::socket_base::max_listen_connections, ec); ec) {
      return Error::Msg("cannot listen on " + path + ": " + ec.message());
    }
  }
  auto ignore = [](std::exception_ptr) {};
  if (tcp_) net::co_spawn(ioc_, Accept(*tcp_, false), ignore);
  if (unix_) net::co_spawn(ioc_, Accept(*unix_, true), ignore);
  started_ = true;
  for (int i = 0; i < std::max(1, opts_.io_threads); ++i) threads_.emplace_back([this] { ioc_.run(); });
  return {};
}

void HttpServer::Impl::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  stopping_ = true;
  net::post(ioc_, [this] {
    beast::error_code ec;
    if (tcp_) tcp_->close(ec);
    if (unix_) unix_->close(ec);
  });
  ioc_.stop();
  for (auto& t : threads_) t.join();
  // Running tool calls finish (streams notice stopping_ and give up writing); queued ones are dropped.
  pool_.stop();
  unix_pool_.stop();
  pool_.join();
  unix_pool_.join();
  if (unix_) unlink(opts_.unix_socket_path.c_str());
}

template <class Protocol>
net::awaitable<void> HttpServer::Impl::Accept(net::basic_socket_acceptor<Protocol>& acceptor, bool via_unix) {
  for (;;) {
    net::any_io_executor strand = net::make_strand(ioc_);
    auto [ec, socket] = co_await acceptor.async_accept(strand, kAwait);
    if (stopping_ || ec == net::error::operation_aborted) co_return;
    if (ec) {
      // EMFILE and friends: back off briefly instead of spinning.
      net::steady_timer timer(ioc_, std::chrono::milliseconds(50));
      co_await timer.async_wait(kAwait);
      continue;
    }
    // The unix socket has slots of its own, so connections over TCP never lock the host's caller out; over TCP,
    // one remote address may hold only some of them, so a peer that opens connections and sends nothing (or sends
    // slowly) cannot take every slot from everyone else.
    std::atomic<size_t>& open = connections_[via_unix];
    if (open.load() >= opts_.max_connections) {
      Turn<Protocol>(std::move(socket), "the server has " + std::to_string(opts_.max_connections) +
                                            " connections open; try again once one has closed");
      continue;
    }
    ++open;
    std::shared_ptr<void> connection_slot(static_cast<void*>(this), [&open](void*) { --open; });
    std::shared_ptr<void> address_slot;
    if constexpr (std::is_same_v<Protocol, tcp>) {
      beast::error_code peer_ec;
      auto peer = socket.remote_endpoint(peer_ec);
      const bool counted = peer_ec || opts_.limit_loopback_peers || !peer.address().is_loopback();
      if (counted) address_slot = addresses_.Take(peer_ec ? std::string() : peer.address().to_string());
      if (counted && !address_slot) {
        Turn<Protocol>(std::move(socket), "this address has " + std::to_string(opts_.max_connections_per_address) +
                                              " connections open; close one first");
        continue;
      }
    }
    auto executor = socket.get_executor();
    net::co_spawn(executor,
                  Serve(beast::basic_stream<Protocol>(std::move(socket)), via_unix, std::move(connection_slot),
                        std::move(address_slot)),
                  [](std::exception_ptr) {});
  }
}

template <class Protocol>
net::awaitable<void> HttpServer::Impl::Serve(beast::basic_stream<Protocol> stream, bool via_unix,
                                             [[maybe_unused]] std::shared_ptr<void> connection_slot,
                                             [[maybe_unused]] std::shared_ptr<void> address_slot) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<uint32_t>(opts_.max_header_bytes));
    // No body limit while the head is read: Beast checks Content-Length against it when the head ends and would
    // fail a preview's well-formed head. isb's limit is applied below, to isb's own routes only.
    parser.body_limit(boost::none);
    stream.expires_after(opts_.header_timeout);
    auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, kAwait);
    if constexpr (std::is_same_v<Protocol, tcp>) {
      if (!ec && opts_.preview && opts_.preview_takes(parser.get()[http::field::host], parser.get().target())) {
        std::ostringstream head;
        head << parser.get().base();
        const int fd = ::fcntl(beast::get_lowest_layer(stream).socket().native_handle(), F_DUPFD_CLOEXEC, 0);
        if (fd >= 0) opts_.preview(fd, head.str() + beast::buffers_to_string(buffer.data()));
        co_return;
      }
      // A head too large or malformed that names a preview is the preview proxy's to answer, not isb's pages; it is
      // told for the audit log all the same.
      const bool bad_head =
          ec == http::error::header_limit ||
          (ec && IsHttpParseError(ec) && ec != http::error::end_of_stream && ec != http::error::partial_message);
      if (bad_head && opts_.preview_refused && PreviewNamed(parser.get(), buffer)) {
        const Refusal refusal = RefusalOf(ec);
        TellMalformed(stream, refusal.status, refusal.why);
        const int fd = ::fcntl(beast::get_lowest_layer(stream).socket().native_handle(), F_DUPFD_CLOEXEC, 0);
        if (fd >= 0) opts_.preview_refused(fd, refusal.status);
        co_return;
      }
    }
    if (!ec) {
      const auto length = parser.content_length();
      if (length && *length > opts_.max_body_bytes)
        ec = http::error::body_limit;
      else
        parser.body_limit(opts_.max_body_bytes);
    }
    if (!ec && EqualsIgnoreCase(std::string_view(parser.get()[http::field::expect]), "100-continue")) {
      http::response<http::empty_body> cont{http::status::continue_, 11};
      stream.expires_after(opts_.write_timeout);
      std::tie(ec, n) = co_await http::async_write(stream, cont, kAwait);
    }
    if (!ec) {
      stream.expires_after(opts_.body_timeout);
      std::tie(ec, n) = co_await http::async_read(stream, buffer, parser, kAwait);
    }
    if (const Refusal refusal = RefusalOf(ec); refusal.status != 0) {
      TellMalformed(stream, refusal.status, refusal.why);
      co_await FailAndClose(stream, refusal.status, refusal.why);
      co_return;
    }
    if (ec) co_return;  // closed, reset or timed out

    Request req = ToRequest(parser.get(), via_unix);
    if constexpr (std::is_same_v<Protocol, tcp>) {
      beast::error_code peer_ec;
      auto peer = beast::get_lowest_layer(stream).socket().remote_endpoint(peer_ec);
      if (!peer_ec) req.remote_address = peer.address().to_string();
    }
    bool keep_alive = parser.get().keep_alive();
    net::thread_pool& workers = via_unix ? unix_pool_ : pool_;
    Response resp = co_await OnWorker(workers, [&] { return Dispatch(req); });

    stream.expires_after(opts_.write_timeout);
    if (resp.upgraded && resp.status == 101) {
      co_await HandOver(std::move(resp), stream, buffer, workers);
      co_return;
    }
    if (!resp.stream) {
      http::response<http::string_body> res;
      CopyHeaders(resp, res);
      res.body() = std::move(resp.body);
      res.keep_alive(keep_alive);
      res.prepare_payload();
      if (req.method == "HEAD") res.body().clear();  // Content-Length stays that of the GET
      std::tie(ec, n) = co_await http::async_write(stream, res, kAwait);
      if (ec) co_return;
    } else {
      http::response<http::empty_body> head;
      CopyHeaders(resp, head);
      head.keep_alive(keep_alive);
      head.chunked(true);
      http::response_serializer<http::empty_body> sr{head};
      std::tie(ec, n) = co_await http::async_write_header(stream, sr, kAwait);
      if (ec) co_return;
      bool alive = co_await OnWorker(workers, [&] { return RunStream(resp, stream); });
      if (!alive) co_return;
      stream.expires_after(opts_.write_timeout);
      std::tie(ec, n) = co_await net::async_write(stream, http::make_chunk_last(), kAwait);
      if (ec) co_return;
    }
    if (!keep_alive) {
      beast::error_code ignored;
      stream.socket().shutdown(Protocol::socket::shutdown_send, ignored);
      co_return;
    }
  }
}

template <class Protocol>
net::awaitable<void> HttpServer::Impl::HandOver(Response resp, beast::basic_stream<Protocol>& stream,
                                                beast::flat_buffer& buffer, net::thread_pool& workers) {
  http::response<http::empty_body> head;
  CopyHeaders(resp, head);
  auto [ec, n] = co_await http::async_write(stream, head, kAwait);
  if (ec) co_return;
  // The session reads and writes the socket itself (polling it) for as long as it lasts: no timeout of the HTTP
  // server's may cut it.
  stream.expires_never();
  const std::string pending(static_cast<const char*>(buffer.data().data()), buffer.size());
  const int fd = beast::get_lowest_layer(stream).socket().native_handle();
  std::function<bool()> stopping = [this] { return stopping_.load(); };
  co_await OnWorker(workers, [&] {
    resp.upgraded(fd, pending, stopping);
    return true;
  });
}

// Runs the response's producer on this worker thread; each chunk is written by the connection's strand while
// this thread waits. Returns false when the client went away or the server is stopping.
template <class Protocol>
bool HttpServer::Impl::RunStream(const Response& resp, beast::basic_stream<Protocol>& stream) {
  bool alive = true;
  ChunkWriter write = [&](std::string_view chunk) -> bool {
    if (!alive || stopping_) return alive = false;
    if (chunk.empty()) return true;  // an empty chunk would end the body
    auto data = std::make_shared<std::string>(chunk);
    auto done = std::make_shared<std::promise<beast::error_code>>();
    std::future<beast::error_code> result = done->get_future();
    net::post(stream.get_executor(), [this, &stream, data, done] {
      stream.expires_after(opts_.write_timeout);
      net::async_write(stream, http::make_chunk(net::buffer(*data)),
                       [data, done](beast::error_code ec, size_t) { done->set_value(ec); });
    });
    while (result.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      if (stopping_) return alive = false;
    }
    alive = !result.get();
    return alive;
  };
  try {
    resp.stream(write);
  } catch (const std::exception&) {
    return false;  // the body is cut short; the client sees the missing last chunk
  }
  return alive;
}

// Answers a request that could not be read, or a connection turned away (503), then drains what the client still
// sends (up to 16 MiB or 2 s) so the answer is not lost to a reset, and closes.
template <class Protocol>
net::awaitable<void> HttpServer::Impl::FailAndClose(beast::basic_stream<Protocol>& stream, int status,
                                                    const std::string& message) {
  Response r = ErrorResponse(Error::Of(status == 413   ? Code::kTooLarge
                                       : status == 503 ? Code::kUnavailable
                                                       : Code::kInvalidArgument,
                                       message));
  r.status = status;
  if (status == 503) r.headers.Set("Retry-After", "1");
  http::response<http::string_body> res;
  CopyHeaders(r, res);
  res.body() = std::move(r.body);
  res.keep_alive(false);
  res.prepare_payload();
  stream.expires_after(opts_.write_timeout);
  auto [ec, n] = co_await http::async_write(stream, res, kAwait);
  if (ec) co_return;
  beast::error_code ignored;
  stream.socket().shutdown(Protocol::socket::shutdown_send, ignored);
  stream.expires_after(std::chrono::seconds(2));
  std::vector<char> sink(64 << 10);
  for (size_t total = 0; total < (16u << 20);) {
    std::tie(ec, n) = co_await stream.async_read_some(net::buffer(sink), kAwait);
    if (ec) break;
    total += n;
  }
}

Response HttpServer::Impl::Dispatch(const Request& req) {
  try {
    const Route& route = router_->Find(req);
    if (route.needs_login) return Authenticated(route, req);
    if (Status upgrade = CheckUpgrade(route, req); !upgrade.ok()) return ErrorResponse(upgrade.error());
    return Handle(route, req, Identity{});
  } catch (const std::exception& e) {
    return ErrorResponse(Error::Of(Code::kInternal, std::string("internal error: ") + e.what()));
  }
}

std::shared_ptr<void> HttpServer::Impl::KeyedSlots::Take(const std::string& key) {
  MutexLock lock(mu_);
  size_t& held = held_[key];
  if (held >= limit_) {
    if (held == 0) held_.erase(key);
    return nullptr;
  }
  ++held;
  // The pointer is only there to make the slot non-null; the deleter gives the slot back and frees nothing.
  return std::shared_ptr<void>(static_cast<void*>(this), [this, key](void*) {
    MutexLock release(mu_);
    if (--held_[key] == 0) held_.erase(key);
  });
}

template <class Protocol>
void HttpServer::Impl::Turn(typename Protocol::socket socket, const std::string& message) {
  // A connection being turned away holds a descriptor for up to a second; past kMaxTurning of them, one is closed
  // at once, without a word.
  if (turning_.load() >= kMaxTurning) {
    beast::error_code ignored;
    socket.close(ignored);
    return;
  }
  ++turning_;
  std::shared_ptr<void> slot(static_cast<void*>(this), [this](void*) { --turning_; });
  auto executor = socket.get_executor();
  net::co_spawn(
      executor,
      [this, stream = beast::basic_stream<Protocol>(std::move(socket)), message,
       slot = std::move(slot)]() mutable -> net::awaitable<void> { co_await FailAndClose(stream, 503, message); },
      [](std::exception_ptr) {});
}

bool HttpServer::Impl::SpendRefusalRow(const std::string& key) {
  if (!opts_.on_refused) return false;
  MutexLock lock(refusal_mu_);
  if (refusal_rows_.RetryAfter(key) != 0 || all_refusal_rows_.RetryAfter("all") != 0) return false;
  refusal_rows_.RecordFailure(key);
  all_refusal_rows_.RecordFailure("all");
  return true;
}

HttpServer::Impl::Refusal HttpServer::Impl::RefusalOf(const beast::error_code& ec) const {
  if (ec == http::error::body_limit)
    return {413, "request body is larger than " + std::to_string(opts_.max_body_bytes) + " bytes"};
  if (ec == http::error::header_limit)
    return {431, "request headers are larger than " + std::to_string(opts_.max_header_bytes) + " bytes"};
  if (ec == http::error::partial_message) return {400, "truncated HTTP request: the connection ended mid-message"};
  if (ec && IsHttpParseError(ec) && ec != http::error::end_of_stream)
    return {400, "malformed HTTP request: " + ec.message()};
  return {};
}

template <class Protocol>
void HttpServer::Impl::TellMalformed(beast::basic_stream<Protocol>& stream, int status, const std::string& message) {
  Request req;
  if constexpr (std::is_same_v<Protocol, tcp>) {
    beast::error_code peer_ec;
    auto peer = beast::get_lowest_layer(stream).socket().remote_endpoint(peer_ec);
    if (!peer_ec) req.remote_address = peer.address().to_string();
  }
  // A budget of their own: malformed requests do not use up the rows of an address's refused credentials.
  const std::string key = req.remote_address.empty()           ? std::string("malformed:unix")
                          : IsLoopbackHost(req.remote_address) ? std::string("malformed:loopback")
                                                               : "malformed:" + req.remote_address;
  if (!SpendRefusalRow(key)) return;
  opts_.on_refused(req, nullptr, "http", Error::Of(status == 400 ? Code::kInvalidArgument : Code::kTooLarge, message));
}

Response HttpServer::Impl::Refuse(const Route& route, const Request& req, const Identity* who, const std::string& key,
                                  Error error) {
  const bool tell = SpendRefusalRow(key);
  if (tell) opts_.on_refused(req, who, SurfaceOf(route.handler), error);
  if (error.code == Code::kUnauthenticated) return Unauthenticated(error.message, ResourceMetadata(route, req));
  Response r = ErrorResponse(error);
  if (error.code == Code::kTooManyRequests) r.headers.Set("Retry-After", "1");
  return r;
}

Response HttpServer::Impl::Authenticated(const Route& route, const Request& req) {
  Identity identity = Identity::Host();
  if (!req.via_unix_socket) {
    std::string header = req.headers.Get("Authorization");
    bool bearer = StartsWithIgnoreCase(header, "Bearer ") && header.size() > 7;
    // No credential at all: no bearer token, and no session among the cookies (a browser sends the cookies of
    // other apps on this host too).
    if (!bearer && CookieValue(req.headers.Get("Cookie"), kSessionCookie).empty()) {
      // --metrics-public: a caller on this host that names this host. A page in a browser that rebinds its own
      // name to 127.0.0.1, or a client a local tunnel brings in, arrives from loopback but names another host.
      if (route.handler == Handler::kMetrics && opts_.metrics && opts_.metrics_public &&
          IsLoopbackHost(req.remote_address) && NamesLoopback(req.headers.Get("Host")))
        return ServeMetrics(opts_.metrics, req, nullptr);
      // Every loopback address is one: a tunnel or proxy in front brings everyone from there, and any local user may
      // send from each of 127.0.0.0/8.
      return Refuse(route, req, nullptr,
                    "address:" + (IsLoopbackHost(req.remote_address) ? std::string("loopback") : req.remote_address),
                    Error::Of(Code::kUnauthenticated, "missing bearer token: send \"Authorization: Bearer <token>\""));
    }
    if (!auth_) return Unauthenticated("token authentication is not configured; use the unix socket");
    Result<Identity> who = auth_(req, false);
    if (!who.ok()) {
      if (who.error().code == Code::kForbidden) return ErrorResponse(who.error());
      if (who.error().code == Code::kTooManyRequests) {
        Response r = ErrorResponse(who.error());
        r.headers.Set("Retry-After", "60");
        return r;
      }
      return Unauthenticated(who.error().message, ResourceMetadata(route, req));
    }
    identity = std::move(*who);
  }
  // Only once the caller is known: a stranger learns nothing of a route, not even whether it upgrades.
  if (Status upgrade = CheckUpgrade(route, req); !upgrade.ok()) return ErrorResponse(upgrade.error());
  std::shared_ptr<void> slot;
  if (!req.via_unix_socket && !identity.superadmin) {
    const std::string account = identity.user_id > 0 ? "user:" + std::to_string(identity.user_id) : identity.Subject();
    slot = calls_.Take(account);
    if (!slot) {
      return Refuse(
          route, req, &identity, account,
          Error::Of(Code::kTooManyRequests, "this account has " + std::to_string(opts_.max_calls_per_account) +
                                                " calls running; try again once one has returned"));
    }
  }
  std::shared_ptr<void> stream_slot;
  const bool streams = route.handler == Handler::kEvents || route.handler == Handler::kTerminal;
  if (streams && !req.via_unix_socket) {
    const std::string account = identity.user_id > 0 ? "user:" + std::to_string(identity.user_id) : identity.Subject();
    std::shared_ptr<void> mine = streams_.Take(account), any = mine ? all_streams_.Take("") : nullptr;
    if (!any) {
      return Refuse(route, req, &identity, account,
                    Error::Of(Code::kTooManyRequests,
                              mine ? "the server has " + std::to_string(opts_.max_streams) +
                                         " event streams and terminals open; try again once one has closed"
                                   : "this account has " + std::to_string(opts_.max_streams_per_account) +
                                         " event streams and terminals open; close one (one events stream serves "
                                         "every tab of a browser)"));
    }
    stream_slot = std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(mine, any);
  }
  Response resp = Handle(route, req, identity);
  std::shared_ptr<CallerCheck> check;
  if ((resp.stream || resp.upgraded) && !req.via_unix_socket && auth_)
    check = std::make_shared<CallerCheck>(auth_, req, identity, opts_.reauthorize_every);
  if (resp.stream && (slot || stream_slot || check)) {
    resp.stream = [inner = std::move(resp.stream), slot, stream_slot, check](const ChunkWriter& write) {
      inner([&](std::string_view chunk) { return (!check || check->Holds()) && write(chunk); });
    };
  }
  if (resp.upgraded && (slot || stream_slot || check)) {
    resp.upgraded = [inner = std::move(resp.upgraded), slot, stream_slot, check](
                        int fd, std::string_view pending, const std::function<bool()>& stopping) {
      inner(fd, pending, [&] { return stopping() || (check && !check->Holds()); });
    };
  }
  return resp;
}

Response HttpServer::Impl::Handle(const Route& route, const Request& req, const Identity& identity) {
  switch (route.handler) {
    case Handler::kHealth:
    case Handler::kSignIn:  // RestApi hands /api/v1/auth/ to the sign-in routes (over TCP; the unix socket: 404)
    case Handler::kRest:
      return rest_.Handle(req, identity);
    case Handler::kMcp:
      return mcp_.Handle(req, identity);
    case Handler::kWebUi:
      return opts_.web_ui ? opts_.web_ui(req) : NoRouteResponse(req.Path());
    case Handler::kTerminal:
      return opts_.terminal ? opts_.terminal(req, identity) : NoRouteResponse(req.Path());
    case Handler::kEvents:
      return opts_.events ? opts_.events(req, identity) : NoRouteResponse(req.Path());
    case Handler::kOAuth:
      return opts_.oauth ? opts_.oauth(req) : NoRouteResponse(req.Path());
    case Handler::kMetrics:
      return opts_.metrics ? ServeMetrics(opts_.metrics, req, &identity) : NoRouteResponse(req.Path());
    case Handler::kNoRoute:
      return NoRouteResponse(req.Path());
  }
  return NoRouteResponse(req.Path());
}

HttpServer::HttpServer(HttpServerOptions options, RestApi& rest, McpServer& mcp, Authenticator authenticate)
    : impl_(std::make_unique<Impl>(std::move(options), rest, mcp, std::move(authenticate))) {}
HttpServer::~HttpServer() = default;
Status HttpServer::Start() { return impl_->Start(); }
uint16_t HttpServer::port() const { return impl_->port(); }
const std::vector<Route>& HttpServer::routes() const { return impl_->routes(); }
void HttpServer::Stop() { impl_->Stop(); }

}  // namespace isb::api
