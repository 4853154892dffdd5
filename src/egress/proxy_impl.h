// The proxy's inside, shared by the files that define it: the listener, accept loop and per-connection dispatch
// (proxy.cc), the plain HTTP relay (plain_http.cc) and the CONNECT tunnel's check (connect_tunnel.cc). Private to
// src/egress.
#pragma once

#include <boost/asio.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "egress/deny_window.h"
#include "egress/http_head.h"
#include "egress/intercept.h"
#include "egress/message_filter.h"
#include "egress/proxy.h"
#include "egress/sandbox_shares.h"
#include "egress/sandbox_traffic.h"
#include "egress/socket_relay.h"

namespace isb::egress {

class Proxy::Impl {
 public:
  Impl(ProxyOptions o, ProxyHooks h);
  ~Impl();  // stops accepting, closes every connection, joins its threads
  Status Listen();
  uint16_t port() const { return port_; }
  const ProxyStats& stats() const { return stats_; }
  SandboxTraffic& traffic() { return traffic_; }

 private:
  using Awaitable = boost::asio::awaitable<void>;
  // A plain HTTP connection: the sandbox, the host and port it was admitted for, and how.
  struct HttpConnection {
    std::string sandbox, host;
    uint16_t port = 0;
    bool explicit_proxy = false;
    bool per_request = false;  // Admission::per_request of the first request
  };
  // Where a connection's relays count what they move: the proxy's totals, and its sandbox's when it is tracked.
  struct Counts {
    ByteCount up, down;  // up: from the sandbox; down: to it
  };

  // proxy.cc: the accept loop and each connection's sniff, decision and dial.
  Awaitable Accept();
  Awaitable Handle(Socket client);
  Awaitable Intercept(Socket& client, const std::string& hello, const std::string& box, const std::string& host,
                      uint16_t port, Result<Fd>& dialed, bool per_request, SandboxBytes* traffic);
  // Why the judge refuses `head` on `conn` (a judged name), or empty. Here rather than beside the plain HTTP relay
  // that asks it too: g++ 12 warns of a mismatched delete in OffLoopFor's coroutine frame when it is compiled there.
  boost::asio::awaitable<std::string> JudgeRequest(const HttpConnection& conn, const HttpHead& head);
  Awaitable Deny(Socket& client, const Sniff& sniff, const std::string& sandbox, const std::string& target,
                 const std::string& reason);
  // A refusal: counted, and given to on_deny (marked first at most once per sandbox and target every 30 s).
  void Report(const std::string& sandbox, const std::string& target, const std::string& reason);

  // g++ 12 miscompiles some temporaries and captures inside coroutines (a string captured from a coroutine's frame
  // is copied bitwise; a temporary in a co_await inside a condition is destroyed twice). So in coroutines here:
  // closures are made by these plain functions, strings sent are named locals, and no co_await sits in a condition.
  std::function<Admission()> DecideCall(const std::string& sandbox, const std::string& host, uint16_t port,
                                        const std::string& method, const std::string& path);
  std::function<Result<Fd>()> DialCall(const std::string& host, uint16_t port);

  // Runs `f` on the blocking pool; the awaiting coroutine resumes on its own executor with f's result.
  template <typename F, typename R = std::invoke_result_t<F>>
  auto OffLoop(F f) {
    namespace asio = boost::asio;
    return asio::async_initiate<const asio::use_awaitable_t<>&, void(std::optional<R>)>(
        [this](auto handler, F fn) {
          asio::post(pool_, [fn = std::move(fn), handler = std::move(handler)]() mutable {
            std::optional<R> r(fn());
            auto ex = asio::get_associated_executor(handler);
            asio::post(
                ex, [r = std::move(r), handler = std::move(handler)]() mutable { std::move(handler)(std::move(r)); });
          });
        },
        asio::use_awaitable, std::move(f));
  }

  // OffLoop for `sandbox`'s own work: it waits while the sandbox already has blocking_per_sandbox pieces running
  // (looking again every kBlockingRetry), so other sandboxes always find threads free.
  template <typename F, typename R = std::invoke_result_t<F>>
  boost::asio::awaitable<std::optional<R>> OffLoopFor(const std::string& sandbox, F f) {
    namespace asio = boost::asio;
    constexpr auto kBlockingRetry = std::chrono::milliseconds(10);
    if (!shares_.Take(sandbox, SandboxShares::Kind::kBlocking, opts_.blocking_per_sandbox)) {
      asio::steady_timer wait(co_await asio::this_coro::executor);
      do {
        wait.expires_after(kBlockingRetry);
        co_await wait.async_wait(asio::as_tuple(asio::use_awaitable));
      } while (!shares_.Take(sandbox, SandboxShares::Kind::kBlocking, opts_.blocking_per_sandbox));
    }
    SandboxShares::Holding holding(shares_, sandbox, SandboxShares::Kind::kBlocking);
    co_return co_await OffLoop(std::move(f));
  }

  // connect_tunnel.cc
  Awaitable RelayTunnel(Socket& from, Socket& to, std::string buffer, const std::string& box, const std::string& host,
                        uint16_t port, ByteCount up, RelayEnds& ends);

  // plain_http.cc
  Awaitable RelayRequests(Socket& from, Socket& to, std::string& buffer, const HttpConnection& conn, Counts counts,
                          RelayEnds& ends);
  Awaitable RelayResponses(Socket& from, Socket& to, ByteCount down, RelayEnds& ends);

  ProxyOptions opts_;
  ProxyHooks hooks_;
  ProxyStats stats_;
  SandboxTraffic traffic_;
  std::shared_ptr<MessageFilter> filter_;     // never null: an identity filter when the options name none
  std::unique_ptr<Interceptor> interceptor_;  // when hooks_.intercept is set; outlives the connections' frames
  // Declared before the loops: a connection's frame destroyed with its loop gives back what it held.
  SandboxShares shares_;
  std::vector<std::unique_ptr<boost::asio::io_context>> loops_;  // the event loops; the first also accepts
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::thread_pool pool_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  DenyWindow deny_window_;
};

}  // namespace isb::egress
