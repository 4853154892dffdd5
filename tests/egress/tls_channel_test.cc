// The TLS channel over a real loopback connection: records that have arrived together come out of one read, in
// order, however small the reads asked for.
#include "egress/tls_channel.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
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

// A server channel that writes `data` once the handshake is done, and a client channel that reads it after the
// bytes had time to arrive, in reads of at most `piece`: the size of each read.
std::vector<size_t> ReadsOf(const std::string& data, size_t piece, std::string& got) {
  Result<std::unique_ptr<SandboxCa>> ca = SandboxCa::Create("tls channel test");
  EXPECT_TRUE(ca.ok());
  Result<TlsIdentity> leaf = (*ca)->Mint("channel.test");
  EXPECT_TRUE(leaf.ok());
  SslCtxPtr server_ctx(SSL_CTX_new(TLS_server_method()));
  SSL_CTX_use_certificate(server_ctx.get(), leaf->cert.get());
  SSL_CTX_use_PrivateKey(server_ctx.get(), leaf->key.get());
  SslCtxPtr client_ctx(SSL_CTX_new(TLS_client_method()));  // the test trusts its own server: nothing is verified

  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  tcp::socket server_socket(io), client_socket(io);
  asio::steady_timer hold(io, std::chrono::seconds(20));  // the server's connection stays until the client is done
  std::vector<size_t> reads;
  Status server_status = Error::Msg("not run"), client_status = Error::Msg("not run");
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await acceptor.async_accept(server_socket, asio::use_awaitable);
        SslPtr ssl(SSL_new(server_ctx.get()));
        SSL_set_accept_state(ssl.get());
        TlsChannel channel(server_socket, std::move(ssl), std::chrono::seconds(10));
        Status status = co_await channel.Handshake();
        if (status.ok()) status = co_await channel.Write(data);
        server_status = status;
        co_await hold.async_wait(asio::as_tuple(asio::use_awaitable));
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await client_socket.async_connect(acceptor.local_endpoint(), asio::use_awaitable);
        SslPtr ssl(SSL_new(client_ctx.get()));
        SSL_set_connect_state(ssl.get());
        TlsChannel channel(client_socket, std::move(ssl), std::chrono::seconds(10));
        Status status = co_await channel.Handshake();
        // All of it on the client's socket before the first read (loopback: well within 300 ms).
        asio::steady_timer wait(io, std::chrono::milliseconds(300));
        co_await wait.async_wait(asio::use_awaitable);
        std::vector<char> buf(piece);
        while (status.ok() && got.size() < data.size()) {
          Result<size_t> n = co_await channel.Read(buf.data(), buf.size());
          if (!n.ok()) status = n.error();
          else if (*n == 0) status = Error::Msg("ended early");
          else {
            reads.push_back(*n);
            got.append(buf.data(), *n);
          }
        }
        client_status = status;
        hold.cancel();
      },
      asio::detached);
  io.run();
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

}  // namespace
}  // namespace isb::egress
