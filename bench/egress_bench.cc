// The egress benchmark's two servers (bench/egress.sh runs them and the clients):
//
//   egress_bench origin CERT KEY
//     An HTTP origin on 127.0.0.1 (plain and TLS, keep-alive, many connections, two threads): any request for a
//     target ending in /bulk gets 100 MiB, any other request 1 KiB. Prints "http PORT tls PORT".
//   egress_bench proxy NAME
//     isb's egress proxy (egress::Proxy with the real classifier and the SSRF-safe dialer) with NAME allowed and
//     pinned to 127.0.0.1, every other name refused. Two listeners: the explicit proxy (HTTP_PROXY: absolute-form
//     requests and CONNECT; dials the port asked for) and a transparent one (what a sandbox's redirected connection
//     reaches: the name from the TLS SNI or the Host; dials NAME's TLS port, given as --sni-port). Prints
//     "explicit PORT sni PORT", and its counters on exit.
//
// Both run until SIGINT or SIGTERM.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "egress/classify.h"
#include "egress/dialer.h"
#include "egress/pin.h"
#include "egress/proxy.h"

namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);
constexpr size_t kSmall = 1024;
constexpr size_t kBulk = 100u << 20;
constexpr size_t kChunk = 1u << 20;

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "egress_bench: %s\n", why.c_str());
  std::exit(1);
}

// Blocks SIGINT and SIGTERM in every thread (call before starting any) and waits for one of them.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}
void WaitForStop(const sigset_t& set) {
  int sig = 0;
  sigwait(&set, &sig);
}

// ---- the origin ----

std::string Headers(size_t length) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " + std::to_string(length) +
         "\r\n\r\n";
}

// Answers every request on one connection, in order, until the client closes. A request is its head (requests
// carry no body here); the request line's target decides the size.
template <typename Stream>
asio::awaitable<void> Serve(Stream& s) {
  static const std::string small = Headers(kSmall) + std::string(kSmall, 'x');
  static const std::string bulk_head = Headers(kBulk);
  static const std::string chunk(kChunk, 'y');
  std::string in;
  char buf[16384];
  for (;;) {
    size_t end;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) {
      auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), kAwait);
      if (ec) co_return;
      in.append(buf, n);
    }
    std::string_view line(in.data(), in.find("\r\n"));
    size_t sp = line.rfind(' ');
    bool is_bulk = sp != std::string_view::npos && line.substr(0, sp).ends_with("/bulk");
    in.erase(0, end + 4);
    if (!is_bulk) {
      auto [ec, n] = co_await asio::async_write(s, asio::buffer(small), kAwait);
      if (ec) co_return;
      continue;
    }
    auto [ec, n] = co_await asio::async_write(s, asio::buffer(bulk_head), kAwait);
    if (ec) co_return;
    for (size_t sent = 0; sent < kBulk; sent += kChunk) {
      auto [wec, m] = co_await asio::async_write(s, asio::buffer(chunk), kAwait);
      if (wec) co_return;
    }
  }
}

asio::awaitable<void> ServePlain(tcp::socket s) {
  s.set_option(tcp::no_delay(true));
  co_await Serve(s);
}

asio::awaitable<void> ServeTls(tcp::socket s, ssl::context& ctx) {
  s.set_option(tcp::no_delay(true));
  ssl::stream<tcp::socket> tls(std::move(s), ctx);
  auto [ec] = co_await tls.async_handshake(ssl::stream_base::server, kAwait);
  if (ec) co_return;
  co_await Serve(tls);
}

asio::awaitable<void> AcceptPlain(tcp::acceptor& a) {
  for (;;) {
    auto [ec, s] = co_await a.async_accept(kAwait);
    if (ec) co_return;
    asio::co_spawn(a.get_executor(), ServePlain(std::move(s)), asio::detached);
  }
}

asio::awaitable<void> AcceptTls(tcp::acceptor& a, ssl::context& ctx) {
  for (;;) {
    auto [ec, s] = co_await a.async_accept(kAwait);
    if (ec) co_return;
    asio::co_spawn(a.get_executor(), ServeTls(std::move(s), ctx), asio::detached);
  }
}

int RunOrigin(const char* cert, const char* key) {
  sigset_t stop = BlockStopSignals();
  ssl::context ctx(ssl::context::tls_server);
  boost::system::error_code ec;
  ctx.use_certificate_chain_file(cert, ec);
  if (!ec) ctx.use_private_key_file(key, ssl::context::pem, ec);
  if (ec) Die(std::string("origin: the certificate or key: ") + ec.message());
  asio::io_context ioc(2);
  tcp::endpoint any(asio::ip::address_v4::loopback(), 0);
  tcp::acceptor plain(ioc, any), tls(ioc, any);
  asio::co_spawn(ioc, AcceptPlain(plain), asio::detached);
  asio::co_spawn(ioc, AcceptTls(tls, ctx), asio::detached);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) threads.emplace_back([&] { ioc.run(); });
  std::printf("http %u tls %u\n", plain.local_endpoint().port(), tls.local_endpoint().port());
  std::fflush(stdout);
  WaitForStop(stop);
  ioc.stop();
  for (std::thread& t : threads) t.join();
  return 0;
}

// ---- isb's proxy ----

// A free loopback port: the explicit proxy must know its own port before it listens (a connection is an explicit
// proxy request when it arrives at that port).
uint16_t FreePort() {
  asio::io_context ioc;
  tcp::acceptor a(ioc, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  return a.local_endpoint().port();
}

std::unique_ptr<isb::egress::Proxy> StartProxy(const std::string& name, const std::string& pin, uint16_t port,
                                               uint16_t explicit_port) {
  using namespace isb::egress;
  isb::Result<Pin> parsed = ParsePin(pin);
  if (!parsed.ok()) Die("pin " + pin + ": " + parsed.error().message);
  isb::Result<Dialer> dialer = Dialer::Create(DialerOptions{.pins = {*parsed}});
  if (!dialer.ok()) Die("dialer: " + dialer.error().message);
  ProxyHooks h;
  h.classify = ClassifyConnection;
  h.sandbox = [](uint32_t host_end) -> std::optional<std::string> {
    if (host_end == INADDR_LOOPBACK) return "bench";
    return std::nullopt;
  };
  h.host_for_port = [](const std::string&, uint16_t) -> std::optional<std::string> { return std::nullopt; };
  h.decide = [name](const std::string&, const std::string& host, uint16_t, const std::string&, const std::string&) {
    if (host == name) return Admission{true, ""};
    return Admission{false, "egress to " + host + " is not allowed"};
  };
  h.dial = [d = std::move(*dialer)](const std::string& host, uint16_t p) { return d.Dial(host, p); };
  h.on_deny = [](const std::string&, const std::string&, const std::string&, bool) {};
  ProxyOptions o;
  o.listen_address = "127.0.0.1";
  o.port = port;
  o.explicit_port = explicit_port;
  auto proxy = Proxy::Start(o, std::move(h));
  if (!proxy.ok()) Die("proxy: " + proxy.error().message);
  return std::move(*proxy);
}

int RunProxy(const std::string& name, const std::string& sni_target_port) {
  sigset_t stop = BlockStopSignals();
  uint16_t port = FreePort();
  auto explicit_proxy = StartProxy(name, name + "=127.0.0.1", port, port);
  // Port 0 is never a connection's destination, so the transparent listener sniffs every connection.
  auto transparent = StartProxy(name, name + "=127.0.0.1:" + sni_target_port, 0, 0);
  std::printf("explicit %u sni %u\n", explicit_proxy->port(), transparent->port());
  std::fflush(stdout);
  WaitForStop(stop);
  for (auto* p : {explicit_proxy.get(), transparent.get()}) {
    const isb::egress::ProxyStats& s = p->stats();
    std::fprintf(stderr, "egress_bench: proxy %u: %lu accepted, %lu allowed, %lu denied, %lu B up, %lu B down\n",
                 p->port(), s.accepted.load(), s.allowed.load(), s.denied.load(), s.bytes_up.load(),
                 s.bytes_down.load());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 3 && args[0] == "origin") return RunOrigin(args[1].c_str(), args[2].c_str());
  if (args.size() == 4 && args[0] == "proxy" && args[2] == "--sni-port") return RunProxy(args[1], args[3]);
  std::fprintf(stderr, "usage: egress_bench origin CERT KEY | egress_bench proxy NAME --sni-port PORT\n");
  return 2;
}
