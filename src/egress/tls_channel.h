// TLS over a connected socket on the proxy's event loop, one side of an intercepted connection: OpenSSL works on
// memory buffers and the coroutine moves their bytes to and from the socket, so nothing blocks and bytes already read
// from the socket (the ClientHello the proxy sniffed) can be handed to OpenSSL first. One coroutine may read while
// another writes (a WebSocket relays both ways at once): reading and writing have buffers and timers of their own,
// and one flush at a time sends what OpenSSL wrote.
#pragma once

#include <boost/asio.hpp>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "egress/openssl_ptr.h"

namespace isb::egress {

class TlsChannel {
 public:
  using Socket = boost::asio::ip::tcp::socket;
  // `ssl` is set up for its role (accept or connect state) and gets the channel's memory buffers. A read or write
  // that waits longer than `idle` fails with kTimeout.
  TlsChannel(Socket& socket, SslPtr ssl, std::chrono::milliseconds idle);

  // Bytes that arrived on the socket before the channel took over, read by OpenSSL before anything else.
  void Preload(std::string_view bytes);
  boost::asio::awaitable<Status> Handshake();
  // Appends up to `max` bytes of application data to `out`: the records that have arrived, or the next one to come;
  // 0 when the peer has finished (close_notify, or the connection ended).
  boost::asio::awaitable<Result<size_t>> Read(std::string& out, size_t max);
  // After Read returned 0: whether the peer finished with close_notify, the end that no one on the path can forge
  // (a bare end of the connection can be anyone's).
  bool ended_with_close_notify() const { return close_notify_; }
  boost::asio::awaitable<Status> Write(std::string_view bytes);
  // Sends close_notify (best effort; none when `notify` is false, so that the peer can tell an end the channel
  // cannot vouch for), half-closes the socket and waits up to a second for the peer to close.
  boost::asio::awaitable<void> Close(bool notify = true);

  SSL* ssl() const { return ssl_.get(); }
  Socket& socket() const { return socket_; }

 private:
  // OpenSSL's output to the socket. While one flush runs, another returns at once: the running one sends all that
  // is pending, its own and the other's.
  boost::asio::awaitable<Status> Flush();
  boost::asio::awaitable<Result<bool>> Fill();  // the socket's next bytes to OpenSSL; false at end of stream
  // After a read or send done at once: every kDoneAtOnceTurn of them in a row, the event loop gets a turn.
  boost::asio::awaitable<void> DoneAtOnce();

  Socket& socket_;
  SslPtr ssl_;
  BIO* in_ = nullptr;   // owned by ssl_
  BIO* out_ = nullptr;  // owned by ssl_
  std::chrono::milliseconds idle_;
  boost::asio::steady_timer read_timer_;
  boost::asio::steady_timer write_timer_;
  // On the heap: coroutine frames stay small. The read buffer grows from 16 to 64 KiB once a read fills it and is
  // small again before any wait; the write buffer is as large as a flush's sends, and let go after a large one.
  static constexpr size_t kFirstReadBuffer = 16 * 1024;
  static constexpr size_t kMaxReadBuffer = 64 * 1024;
  static constexpr size_t kMaxSend = 256 * 1024;
  static constexpr unsigned kDoneAtOnceTurn = 8;
  static constexpr size_t kMaxRecord = 16 * 1024;  // the most application data one TLS record carries
  std::vector<char> read_buffer_;
  std::vector<char> write_buffer_;
  bool flushing_ = false;
  bool close_notify_ = false;
  bool try_at_once_ = false;    // the socket is non-blocking: reads and sends are tried before waiting
  unsigned done_at_once_ = 0;   // reads and sends done at once since the last wait or turn
  std::string read_failure_{};  // a failure found behind data already returned: the next read's
};

}  // namespace isb::egress
