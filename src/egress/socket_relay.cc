// The socket relay's reads, writes, splices and ends, as free functions over a connection's two sockets.
#include "egress/socket_relay.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "egress/edge_read.h"

namespace isb::egress {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);

bool MakePipe(Fd& read_end, Fd& write_end) {
  int p[2];
  if (::pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) return false;
  read_end = Fd(p[0]);
  write_end = Fd(p[1]);
  ::fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
  return true;
}

enum class Drained { kEmpty, kEnd, kFailed };

// Splices from `from` to `to` through the (empty) pipe until `from` has nothing to read for now or `budget`
// bytes have moved (kEmpty either way; `budget` is decreased by what moved). Never keep a native_handle() across
// a co_await: the other direction may close the socket meanwhile.
asio::awaitable<Drained> Splice(Socket& from, Socket& to, int pipe_read, int pipe_write, ByteCount count,
                                uint64_t& budget, RelayEnds& ends) {
  constexpr unsigned kFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
  while (budget > 0) {
    ssize_t n =
        ::splice(from.native_handle(), nullptr, pipe_write, nullptr, std::min<uint64_t>(budget, 1 << 20), kFlags);
    if (n == 0) co_return Drained::kEnd;
    if (n < 0) co_return errno == EAGAIN ? Drained::kEmpty : Drained::kFailed;
    count.Add(static_cast<uint64_t>(n));
    budget -= static_cast<uint64_t>(n);
    ends.last_read = std::chrono::steady_clock::now();
    while (n > 0) {
      ssize_t m = ::splice(pipe_read, nullptr, to.native_handle(), nullptr, static_cast<size_t>(n), kFlags);
      if (m > 0) {
        n -= m;
        continue;
      }
      if (m < 0 && errno == EAGAIN) {
        auto [ec] = co_await to.async_wait(tcp::socket::wait_write, kAwait);
        if (ec) co_return Drained::kFailed;
        continue;
      }
      co_return Drained::kFailed;
    }
  }
  co_return Drained::kEmpty;
}

}  // namespace

asio::awaitable<std::tuple<boost::system::error_code, size_t>> ReadSome(Socket& s, asio::mutable_buffer b,
                                                                        RelayEnds& ends) {
  for (;;) {
    if (ends.half_closed) {
      ssize_t n = ::recv(s.native_handle(), b.data(), b.size(), MSG_DONTWAIT);
      if (n > 0) {
        ends.last_read = std::chrono::steady_clock::now();
        co_return std::tuple(boost::system::error_code(), static_cast<size_t>(n));
      }
      if (n == 0) co_return std::tuple(boost::system::error_code(asio::error::eof), size_t{0});
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        co_return std::tuple(boost::system::error_code(errno, asio::error::get_system_category()), size_t{0});
    }
    auto [ec, n] = co_await AsyncReadEdge(s, b, kAwait);
    if (ec == asio::error::operation_aborted && ends.half_closed && s.is_open()) continue;  // cancelled by HalfClose
    if (n > 0) ends.last_read = std::chrono::steady_clock::now();
    co_return std::tuple(ec, n);
  }
}

asio::awaitable<bool> Send(Socket& s, std::string_view bytes) {
  ssize_t n = ::send(s.native_handle(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n == static_cast<ssize_t>(bytes.size())) co_return true;
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) co_return false;
  const size_t sent = n > 0 ? static_cast<size_t>(n) : 0;
  auto [ec, m] = co_await asio::async_write(s, asio::buffer(bytes.substr(sent)), kAwait);
  co_return !ec;
}

asio::awaitable<void> Pump(Socket& from, Socket& to, ByteCount count, RelayEnds& ends) {
  char buf[16384];
  Fd pipe_read, pipe_write;
  for (;;) {
    auto [ec, n] = co_await ReadSome(from, asio::buffer(buf), ends);
    if (ec == asio::error::eof) co_return HalfClose(to, ends);
    if (ec) co_return CloseBoth(from, to);
    count.Add(n);
    bool sent = co_await Send(to, std::string_view(buf, n));
    if (!sent) co_return CloseBoth(from, to);
    if (n < sizeof buf) continue;
    if (!pipe_write.valid()) {
      if (!MakePipe(pipe_read, pipe_write)) co_return CloseBoth(from, to);
    }
    uint64_t unbounded = UINT64_MAX;
    Drained drained = co_await Splice(from, to, pipe_read.get(), pipe_write.get(), count, unbounded, ends);
    if (drained == Drained::kEnd) co_return HalfClose(to, ends);
    if (drained == Drained::kFailed) co_return CloseBoth(from, to);
  }
}

asio::awaitable<void> Watch(Socket& a, Socket& b, RelayEnds& ends, std::chrono::milliseconds idle,
                            std::atomic<uint64_t>& idle_closed) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    timer.expires_at(ends.last_read + idle);
    auto [ec] = co_await timer.async_wait(kAwait);
    if (ec) co_return;
    if (std::chrono::steady_clock::now() - ends.last_read >= idle) {
      ++idle_closed;
      co_return CloseBoth(a, b);
    }
  }
}

void HalfClose(Socket& to, RelayEnds& ends) {
  ends.half_closed = true;
  boost::system::error_code ec;
  to.shutdown(tcp::socket::shutdown_send, ec);
  if (ec) to.cancel(ec);
}

void CloseBoth(Socket& a, Socket& b) {
  boost::system::error_code ec;
  a.close(ec);
  b.close(ec);
}

asio::awaitable<Result<size_t>> SocketStream::ReadInto(std::string& buffer, size_t max) {
  constexpr size_t kSmallRoom = 16 * 1024;
  const size_t capacity = bulk_ ? kRelayPiece : kSmallRoom;
  if (room_size_ != capacity) {
    room_ = std::make_unique_for_overwrite<char[]>(capacity);
    room_size_ = capacity;
  }
  auto [ec, n] = co_await ReadSome(socket_, asio::buffer(room_.get(), std::min(max, room_size_)), ends_);
  buffer.append(room_.get(), n);
  if (n == room_size_)
    bulk_ = true;  // it filled the room: a stream in bulk, read a whole piece at a time
  else if (n < kSmallRoom)
    bulk_ = false;
  if (ec == asio::error::eof) co_return size_t{0};
  if (ec) co_return Error::Of(Code::kUnavailable, "receiving: " + ec.message());
  co_return n;
}

asio::awaitable<Status> SocketStream::Write(std::string_view bytes) {
  bool sent = co_await Send(socket_, bytes);
  if (!sent) co_return Error::Of(Code::kUnavailable, "sending failed");
  written_.Add(bytes.size());
  co_return Status();
}

asio::awaitable<Result<uint64_t>> SocketStream::Forward(MessageStream& to, uint64_t budget) {
  auto* peer = dynamic_cast<SocketStream*>(&to);
  if (peer == nullptr) co_return uint64_t{0};
  if (!pipe_write_.valid() && !MakePipe(pipe_read_, pipe_write_)) co_return Error::Sys("pipe");
  const uint64_t wanted = budget;
  Drained drained =
      co_await Splice(socket_, peer->socket_, pipe_read_.get(), pipe_write_.get(), peer->written_, budget, ends_);
  if (drained == Drained::kEnd) co_return Error::Of(Code::kUnavailable, "the stream ended");
  if (drained == Drained::kFailed) co_return Error::Of(Code::kUnavailable, "splicing failed");
  co_return wanted - budget;
}

}  // namespace isb::egress
