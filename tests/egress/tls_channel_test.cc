// The TLS channel over a real loopback connection: records that have arrived together come out of one read, in
// order, however small the reads asked for.
#include "egress/tls_channel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "egress/sandbox_ca.h"

namespace isb::egress {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

constexpr size_t kRecord = 16 * 1024;  // the most application data one TLS record carries

std::string Pattern(size_t size) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

// A server and a client context; the client trusts its own test server (nothing is verified).
struct Contexts {
  SslCtxPtr server, client;
};

Contexts MakeContexts() {
  Result<std::unique_ptr<SandboxCa>> ca = SandboxCa::Create("tls channel test");
  EXPECT_TRUE(ca.ok());
  Result<TlsIdentity> leaf = (*ca)->Mint("channel.test");
  EXPECT_TRUE(leaf.ok());
  Contexts c{SslCtxPtr(SSL_CTX_new(TLS_server_method())), SslCtxPtr(SSL_CTX_new(TLS_client_method()))};
  SSL_CTX_use_certificate(c.server.get(), leaf->cert.get());
  SSL_CTX_use_PrivateKey(c.server.get(), leaf->key.get());
  return c;
}

// A server and a client channel over one loopback connection, on one event loop: each side's `part` runs once its
// handshake is done; the server's connection stays until the client's part has returned.
using Part = std::function<asio::awaitable<void>(TlsChannel& channel)>;
void OverLoopback(const Part& server_part, const Part& client_part) {
  Contexts ctx = MakeContexts();
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  tcp::socket server_socket(io), client_socket(io);
  asio::steady_timer hold(io, std::chrono::seconds(20));
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await acceptor.async_accept(server_socket, asio::use_awaitable);
        SslPtr ssl(SSL_new(ctx.server.get()));
        SSL_set_accept_state(ssl.get());
        TlsChannel channel(server_socket, std::move(ssl), std::chrono::seconds(10));
        Status handshake = co_await channel.Handshake();
        EXPECT_TRUE(handshake.ok()) << handshake.error().message;
        if (handshake.ok()) co_await server_part(channel);
        co_await hold.async_wait(asio::as_tuple(asio::use_awaitable));
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await client_socket.async_connect(acceptor.local_endpoint(), asio::use_awaitable);
        SslPtr ssl(SSL_new(ctx.client.get()));
        SSL_set_connect_state(ssl.get());
        TlsChannel channel(client_socket, std::move(ssl), std::chrono::seconds(10));
        Status handshake = co_await channel.Handshake();
        EXPECT_TRUE(handshake.ok()) << handshake.error().message;
        if (handshake.ok()) co_await client_part(channel);
        hold.cancel();
      },
      asio::detached);
  io.run();
}

// Waits `wait` on the channel's event loop.
asio::awaitable<void> Pause(TlsChannel& channel, std::chrono::milliseconds wait) {
  asio::steady_timer timer(channel.socket().get_executor(), wait);
  co_await timer.async_wait(asio::use_awaitable);
}

// A server channel that writes `data` once the handshake is done, and a client channel that reads it after the
// bytes had time to arrive, in reads of at most `piece`: the size of each read.
std::vector<size_t> ReadsOf(const std::string& data, size_t piece, std::string& got) {
  std::vector<size_t> reads;
  Status server_status = Error::Msg("not run"), client_status = Error::Msg("not run");
  OverLoopback([&](TlsChannel& channel) -> asio::awaitable<void> { server_status = co_await channel.Write(data); },
               [&](TlsChannel& channel) -> asio::awaitable<void> {
                 // All of it on the client's socket before the first read (loopback: well within 300 ms).
                 co_await Pause(channel, std::chrono::milliseconds(300));
                 Status status;
                 while (status.ok() && got.size() < data.size()) {
                   const size_t had = got.size();
                   Result<size_t> n = co_await channel.Read(got, piece);
                   if (!n.ok())
                     status = n.error();
                   else if (*n == 0)
                     status = Error::Msg("ended early");
                   else if (got.size() != had + *n)
                     status = Error::Msg("the read appended other than it said");
                   else
                     reads.push_back(*n);
                 }
                 client_status = status;
               });
  EXPECT_TRUE(server_status.ok()) << server_status.error().message;
  EXPECT_TRUE(client_status.ok()) << client_status.error().message;
  return reads;
}

TEST(TlsChannel, RecordsThatArrivedTogetherAreOneRead) {
  const std::string data = Pattern(4 * kRecord + 100);  // five records
  std::string got;
  std::vector<size_t> reads = ReadsOf(data, 8 * kRecord, got);
  EXPECT_EQ(reads, std::vector<size_t>{data.size()});
  EXPECT_EQ(got, data);
}

TEST(TlsChannel, AReadSmallerThanARecordTakesWhatItAsksAndTheRestFollowsInOrder) {
  const std::string data = Pattern(3 * kRecord);
  std::string got;
  std::vector<size_t> reads = ReadsOf(data, 10000, got);
  // 49152 bytes in reads of at most 10000: the channel fills each read whole from the records it holds.
  EXPECT_EQ(reads, (std::vector<size_t>{10000, 10000, 10000, 10000, 9152}));
  EXPECT_EQ(got, data);
}

// The server sends "hello", then (after `apart` or at once) either a forged application-data record or close_notify;
// the client reads twice once both are on its socket: what each read said.
std::pair<std::string, std::string> DataThen(bool forged, std::chrono::milliseconds apart) {
  std::pair<std::string, std::string> said;
  OverLoopback(
      [&](TlsChannel& channel) -> asio::awaitable<void> {
        (void)co_await channel.Write("hello");
        co_await Pause(channel, apart);
        if (forged) {
          const std::string record = std::string("\x17\x03\x03\x00\x20", 5) + std::string(32, 'A');
          co_await asio::async_write(channel.socket(), asio::buffer(record), asio::use_awaitable);
        } else {
          SSL_shutdown(channel.ssl());
          (void)co_await channel.Write("");
        }
      },
      [&](TlsChannel& channel) -> asio::awaitable<void> {
        co_await Pause(channel, apart + std::chrono::milliseconds(200));
        for (std::string* one : {&said.first, &said.second}) {
          std::string got;
          Result<size_t> n = co_await channel.Read(got, 65536);
          *one = !n.ok()   ? "error: " + n.error().message
                 : *n == 0 ? std::string(channel.ended_with_close_notify() ? "end: close_notify" : "end: bare")
                           : got;
        }
      });
  return said;
}

// A record that fails behind data returned in the same read: the data comes out, and the next read fails with the
// record's reason, as it does when the bad record comes on its own later.
TEST(TlsChannel, ABadRecordBehindDataFailsTheNextReadWithItsReason) {
  const auto reason =
      std::make_pair(std::string("hello"), std::string("error: TLS read: decryption failed or bad record mac"));
  EXPECT_EQ(DataThen(true, std::chrono::milliseconds(0)), reason);
  EXPECT_EQ(DataThen(true, std::chrono::milliseconds(0)), DataThen(true, std::chrono::milliseconds(300)));
}

TEST(TlsChannel, ACloseNotifyBehindDataEndsTheNextRead) {
  EXPECT_EQ(DataThen(false, std::chrono::milliseconds(0)),
            std::make_pair(std::string("hello"), std::string("end: close_notify")));
}

// A stream whose bytes are always there when it reads (a writer on a thread of its own, 32 MiB) still lets the other
// work on its event loop run: a coroutine that only yields gets a turn at least every few reads.
TEST(TlsChannel, AReaderThatAlwaysFindsBytesLetsTheLoopsOtherWorkRun) {
  constexpr size_t kTotal = 32 << 20;
  Contexts ctx = MakeContexts();
  asio::io_context server_io;
  tcp::acceptor acceptor(server_io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  const tcp::endpoint at = acceptor.local_endpoint();
  tcp::socket server_socket(server_io);
  asio::co_spawn(
      server_io,
      [&]() -> asio::awaitable<void> {
        co_await acceptor.async_accept(server_socket, asio::use_awaitable);
        SslPtr ssl(SSL_new(ctx.server.get()));
        SSL_set_accept_state(ssl.get());
        TlsChannel channel(server_socket, std::move(ssl), std::chrono::seconds(10));
        if (!(co_await channel.Handshake()).ok()) co_return;
        const std::string piece(64 * 1024, 'x');
        for (size_t sent = 0; sent < kTotal; sent += piece.size())
          if (!(co_await channel.Write(piece)).ok()) co_return;
      },
      asio::detached);
  std::thread server([&] { server_io.run(); });

  asio::io_context io(1);
  tcp::socket client_socket(io);
  bool done = false;
  size_t got = 0, reads = 0, reads_since_turn = 0, most_reads_between_turns = 0, turns = 0;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await client_socket.async_connect(at, asio::use_awaitable);
        SslPtr ssl(SSL_new(ctx.client.get()));
        SSL_set_connect_state(ssl.get());
        TlsChannel channel(client_socket, std::move(ssl), std::chrono::seconds(10));
        if (!(co_await channel.Handshake()).ok()) co_return;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
              while (!done) {
                co_await asio::post(io, asio::use_awaitable);
                most_reads_between_turns = std::max(most_reads_between_turns, reads_since_turn);
                reads_since_turn = 0;
                ++turns;
              }
            },
            asio::detached);
        std::string in;
        while (got < kTotal) {
          in.clear();
          Result<size_t> n = co_await channel.Read(in, 64 * 1024);
          if (!n.ok() || *n == 0) break;
          got += *n;
          ++reads;
          ++reads_since_turn;
        }
        done = true;
      },
      asio::detached);
  io.run();
  server.join();
  EXPECT_EQ(got, kTotal);
  EXPECT_GT(turns, reads / 16) << reads << " reads";
  // A turn every 8 reads or sends done at once; a read may take two (a record cut by the end of a read).
  EXPECT_LE(most_reads_between_turns, 8u) << reads << " reads, " << turns << " turns";
}

}  // namespace
}  // namespace isb::egress
