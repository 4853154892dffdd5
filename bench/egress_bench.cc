// The egress benchmarks' servers (bench/egress.sh and bench/secrets.sh run them and the clients):
//
//   egress_bench origin CERT KEY
//     An HTTP origin on 127.0.0.1 (plain and TLS, keep-alive, many connections, two threads): any request for a
//     target ending in /bulk gets 100 MiB, any other request 1 KiB. A request with an X-Key header gets its value as
//     the body's first bytes (an API echoing a credential back, for the secrets scrubber to find). Prints
//     "http PORT tls PORT".
//   egress_bench proxy NAME --sni-port PORT [--secret PLACEHOLDER=VALUE --origin-ca FILE --sandbox-ca FILE]
//     isb's egress proxy (egress::Proxy with the real classifier and the SSRF-safe dialer) with NAME allowed and
//     pinned to 127.0.0.1, every other name refused. Two listeners: the explicit proxy (HTTP_PROXY: absolute-form
//     requests and CONNECT; dials the port asked for) and a transparent one (what a sandbox's redirected connection
//     reaches: the name from the TLS SNI or the Host; dials NAME's TLS port, given as --sni-port). Prints
//     "explicit PORT sni PORT", and its counters on exit. With --secret, NAME's TLS is intercepted as the daemon
//     intercepts a secret's hosts: a leaf minted from sandbox "bench"'s CA (written to --sandbox-ca as PEM, for
//     the clients to trust), the origin verified against --origin-ca, and every message through the SecretsFilter
//     with PLACEHOLDER bound to VALUE for NAME; the filter's counters are printed on exit too.
//   egress_bench relay HTTP_PORT TLS_PORT
//     The floor of any proxy on this machine: a relay that checks nothing and parses nothing. Each connection to
//     its first listener is joined to 127.0.0.1:HTTP_PORT, each to its second to 127.0.0.1:TLS_PORT, and bytes are
//     copied both ways (recv and send through a 64 KiB buffer, epoll, one loop per thread, two threads as isb's
//     proxy has). Prints "http PORT tls PORT".
//
// All run until SIGINT or SIGTERM.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/file.h"
#include "egress/cert_minter.h"
#include "egress/classify.h"
#include "egress/dialer.h"
#include "egress/pin.h"
#include "egress/proxy.h"
#include "secrets/secrets_filter.h"

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

// The value of the request head's X-Key field; empty when there is none.
std::string_view KeyOf(std::string_view head) {
  for (size_t at = head.find("\r\n"); at != std::string_view::npos; at = head.find("\r\n", at + 2)) {
    std::string_view line = head.substr(at + 2, head.find("\r\n", at + 2) - at - 2);
    if (line.size() < 6 || strncasecmp(line.data(), "x-key:", 6) != 0) continue;
    line.remove_prefix(6);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    return line;
  }
  return {};
}

// Answers every request on one connection, in order, until the client closes. A request is its head (requests
// carry no body here); the request line's target decides the size, an X-Key field the body's first bytes.
template <typename Stream>
asio::awaitable<void> Serve(Stream& s) {
  static const std::string small = Headers(kSmall) + std::string(kSmall, 'x');
  static const std::string bulk_head = Headers(kBulk);
  static const std::string chunk(kChunk, 'y');
  std::string in, answer, first_chunk;
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
    std::string_view key = KeyOf(std::string_view(in.data(), end + 2)).substr(0, kSmall);
    if (!is_bulk) {
      answer = small;
      answer.replace(answer.size() - kSmall, key.size(), key);
      in.erase(0, end + 4);
      auto [ec, n] = co_await asio::async_write(s, asio::buffer(answer), kAwait);
      if (ec) co_return;
      continue;
    }
    first_chunk = chunk;
    first_chunk.replace(0, key.size(), key);
    in.erase(0, end + 4);
    auto [ec, n] = co_await asio::async_write(s, asio::buffer(bulk_head), kAwait);
    if (ec) co_return;
    for (size_t sent = 0; sent < kBulk; sent += kChunk) {
      auto [wec, m] = co_await asio::async_write(s, asio::buffer(sent == 0 ? first_chunk : chunk), kAwait);
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

// What --secret asks for: NAME's TLS intercepted and its messages through the secrets filter.
struct Interception {
  std::shared_ptr<isb::egress::CertMinter> minter;
  std::string origin_ca;  // the PEM file the origin's certificate is verified against
  std::shared_ptr<isb::secrets::SecretsFilter> filter;
};

std::unique_ptr<isb::egress::Proxy> StartProxy(const std::string& name, const std::string& pin, uint16_t port,
                                               uint16_t explicit_port, const Interception* interception) {
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
  if (interception != nullptr) {
    // As the daemon does for a sandbox whose secrets name the host (src/daemon/egress_service.cc).
    h.intercept = [name](const std::string&, const std::string& host, uint16_t) { return host == name; };
    o.intercept.minter = interception->minter;
    o.intercept.upstream_ca_file = interception->origin_ca;
    o.filter = interception->filter;
  }
  auto proxy = Proxy::Start(o, std::move(h));
  if (!proxy.ok()) Die("proxy: " + proxy.error().message);
  return std::move(*proxy);
}

// --secret PLACEHOLDER=VALUE --origin-ca FILE --sandbox-ca FILE: the interception, the sandbox CA written out.
Interception InterceptionFor(const std::string& name, const std::string& secret, const std::string& origin_ca,
                             const std::string& sandbox_ca) {
  size_t eq = secret.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == secret.size())
    Die("--secret wants PLACEHOLDER=VALUE, both non-empty");
  Interception i{std::make_shared<isb::egress::CertMinter>(), origin_ca,
                 std::make_shared<isb::secrets::SecretsFilter>()};
  isb::Result<std::string> pem = i.minter->CaPem("bench");
  if (!pem.ok()) Die("the sandbox CA: " + pem.error().message);
  if (isb::Status w = isb::WriteFile(sandbox_ca, *pem); !w.ok()) Die("--sandbox-ca: " + w.error().message);
  isb::secrets::SandboxSecrets secrets;
  // Every port: the transparent listener's connections reach the proxy's own port, not 443.
  secrets.bindings.push_back({"BENCH_KEY", secret.substr(0, eq), secret.substr(eq + 1), {{name, false, std::nullopt}}});
  // X-Key is not a credential header: the secret names it, as `isb secret set --header X-Key` does.
  secrets.bindings.back().headers = {"X-Key"};
  i.filter->Set("bench", std::move(secrets));
  return i;
}

int RunProxy(const std::string& name, const std::string& sni_target_port,
             const std::optional<Interception>& intercept) {
  sigset_t stop = BlockStopSignals();
  ::signal(SIGPIPE, SIG_IGN);  // a splice into a socket its peer reset raises it (proxy.h)
  uint16_t port = FreePort();
  const Interception* i = intercept ? &*intercept : nullptr;
  auto explicit_proxy = StartProxy(name, name + "=127.0.0.1", port, port, i);
  // Port 0 is never a connection's destination, so the transparent listener sniffs every connection.
  auto transparent = StartProxy(name, name + "=127.0.0.1:" + sni_target_port, 0, 0, i);
  std::printf("explicit %u sni %u\n", explicit_proxy->port(), transparent->port());
  std::fflush(stdout);
  WaitForStop(stop);
  for (auto* p : {explicit_proxy.get(), transparent.get()}) {
    const isb::egress::ProxyStats& s = p->stats();
    std::fprintf(stderr, "egress_bench: proxy %u: %lu accepted, %lu allowed, %lu denied, %lu B up, %lu B down\n",
                 p->port(), s.accepted.load(), s.allowed.load(), s.denied.load(), s.bytes_up.load(),
                 s.bytes_down.load());
  }
  if (i != nullptr) {
    for (const auto& [secret, c] : i->filter->Counters("bench"))
      std::fprintf(stderr, "egress_bench: secret %s: %lu swapped, %lu scrubbed, %lu held\n", secret.c_str(), c.swapped,
                   c.scrubbed, c.held);
  }
  return 0;
}

// ---- the floor: a relay that only copies ----

// One direction of a joined pair: what was read from `from` and not yet sent to `to`.
struct Flow {
  int from = -1, to = -1;
  char buf[64 << 10];
  size_t off = 0, len = 0;
  bool ended = false;  // `from` reached its end and `to` was shut for writing
};

// A joined pair of sockets. Each socket's epoll entry points at the pair; it waits for input while its flow out has
// room, and for output while the flow into it has bytes left.
struct Pair {
  int fd[2];
  Flow flow[2];  // flow[i] reads fd[i] and writes fd[1 - i]
};

void Watch(int ep, Pair* p, int i, int op) {
  uint32_t events = 0;
  if (!p->flow[i].ended && p->flow[i].len == 0) events |= EPOLLIN;
  if (p->flow[1 - i].len > 0) events |= EPOLLOUT;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = reinterpret_cast<uintptr_t>(p) | static_cast<uintptr_t>(i);  // a Pair is aligned: bit 0 is free
  ::epoll_ctl(ep, op, p->fd[i], &ev);
}

// Sends what flow f holds; false when its peer refused (the pair is then closed by the caller).
bool Drain(Flow& f) {
  while (f.len > 0) {
    ssize_t n = ::send(f.to, f.buf + f.off, f.len, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN;
    f.off += static_cast<size_t>(n);
    f.len -= static_cast<size_t>(n);
  }
  f.off = 0;
  return true;
}

// Moves what can move on socket i of p; false when the pair is done (both ends ended, or an error).
bool Step(Pair* p, int i) {
  Flow& out = p->flow[i];     // reads fd[i]
  Flow& in = p->flow[1 - i];  // writes fd[i]
  if (!Drain(in)) return false;
  while (!out.ended && out.len == 0) {
    ssize_t n = ::recv(p->fd[i], out.buf, sizeof out.buf, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN) break;
      return false;
    }
    if (n == 0) {
      out.ended = true;
      ::shutdown(out.to, SHUT_WR);
      break;
    }
    out.len = static_cast<size_t>(n);
    if (!Drain(out)) return false;
  }
  return !(out.ended && in.ended && out.len == 0 && in.len == 0);
}

int Listen(uint16_t* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(*port);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 1024) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    Die(std::string("relay: listen: ") + std::strerror(errno));
  }
  *port = ntohs(a.sin_port);
  return fd;
}

// One thread's loop: its own listeners (SO_REUSEPORT spreads the connections) and its own pairs.
void RelayLoop(const uint16_t (&ports)[2], const uint16_t (&targets)[2]) {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  int listeners[2];
  for (int k = 0; k < 2; ++k) {
    uint16_t port = ports[k];
    listeners[k] = Listen(&port);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = static_cast<uint64_t>(k);  // 0 and 1: the listeners (a Pair's address is never that small)
    ::epoll_ctl(ep, EPOLL_CTL_ADD, listeners[k], &ev);
  }
  int one = 1;
  epoll_event events[256];
  std::vector<std::unique_ptr<Pair>> closed;  // freed after the batch: a later event of it may still name one
  for (;;) {
    closed.clear();
    int n = ::epoll_wait(ep, events, 256, -1);
    for (int e = 0; e < n; ++e) {
      uint64_t tag = events[e].data.u64;
      if (tag < 2) {
        int c;
        while ((c = ::accept4(listeners[tag], nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
          int u = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
          sockaddr_in o{};
          o.sin_family = AF_INET;
          o.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
          o.sin_port = htons(targets[tag]);
          if (::connect(u, reinterpret_cast<sockaddr*>(&o), sizeof o) != 0) {
            ::close(c);
            ::close(u);
            continue;
          }
          ::fcntl(u, F_SETFL, O_NONBLOCK);
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          ::setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          auto* p = new Pair{{c, u}, {}};
          p->flow[0].from = c;
          p->flow[0].to = u;
          p->flow[1].from = u;
          p->flow[1].to = c;
          Watch(ep, p, 0, EPOLL_CTL_ADD);
          Watch(ep, p, 1, EPOLL_CTL_ADD);
        }
        continue;
      }
      auto* p = reinterpret_cast<Pair*>(tag & ~uint64_t{1});
      int i = static_cast<int>(tag & 1);
      if (p->fd[0] < 0) continue;  // closed earlier in this batch
      if (!Step(p, i) || !Step(p, 1 - i)) {
        ::close(p->fd[0]);
        ::close(p->fd[1]);
        p->fd[0] = p->fd[1] = -1;
        closed.emplace_back(p);
        continue;
      }
      Watch(ep, p, 0, EPOLL_CTL_MOD);
      Watch(ep, p, 1, EPOLL_CTL_MOD);
    }
  }
}

int RunRelay(const std::string& http_port, const std::string& tls_port) {
  sigset_t stop = BlockStopSignals();
  const uint16_t targets[2] = {static_cast<uint16_t>(std::stoi(http_port)), static_cast<uint16_t>(std::stoi(tls_port))};
  uint16_t ports[2] = {0, 0};
  for (int k = 0; k < 2; ++k) ::close(Listen(&ports[k]));  // pick the ports; each thread then binds its own
  for (int t = 0; t < 2; ++t) std::thread([&ports, &targets] { RelayLoop(ports, targets); }).detach();
  std::printf("http %u tls %u\n", ports[0], ports[1]);
  std::fflush(stdout);
  WaitForStop(stop);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 3 && args[0] == "origin") return RunOrigin(args[1].c_str(), args[2].c_str());
  if (args.size() == 4 && args[0] == "proxy" && args[2] == "--sni-port") return RunProxy(args[1], args[3], {});
  if (args.size() == 10 && args[0] == "proxy" && args[2] == "--sni-port" && args[4] == "--secret" &&
      args[6] == "--origin-ca" && args[8] == "--sandbox-ca")
    return RunProxy(args[1], args[3], InterceptionFor(args[1], args[5], args[7], args[9]));
  if (args.size() == 3 && args[0] == "relay") return RunRelay(args[1], args[2]);
  std::fprintf(
      stderr,
      "usage: egress_bench origin CERT KEY | egress_bench proxy NAME --sni-port PORT [--secret PLACEHOLDER=VALUE "
      "--origin-ca FILE --sandbox-ca FILE] | "
      "egress_bench relay HTTP_PORT TLS_PORT\n");
  return 2;
}
