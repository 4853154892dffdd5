#include "egress/tls_channel.h"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <tuple>

namespace isb::egress {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
namespace {
constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);
}  // namespace

TlsChannel::TlsChannel(Socket& socket, SslPtr ssl, std::chrono::milliseconds idle)
    : socket_(socket),
      ssl_(std::move(ssl)),
      idle_(idle),
      read_timer_(socket.get_executor()),
      write_timer_(socket.get_executor()),
      read_buffer_(kFirstReadBuffer) {
  in_ = BIO_new(BIO_s_mem());
  out_ = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(in_, -1);  // an empty input buffer means "wait for more", not end of stream
  SSL_set_bio(ssl_.get(), in_, out_);
  // Reads and writes are tried at once (Fill, Flush): a socket that cannot go on says so rather than blocking. A
  // socket that cannot be made so is only ever waited on.
  boost::system::error_code ec;
  socket_.non_blocking(true, ec);
  try_at_once_ = !ec;
}

asio::awaitable<void> TlsChannel::DoneAtOnce() {
  if (++done_at_once_ < kDoneAtOnceTurn) co_return;
  done_at_once_ = 0;
  // The loop's other connections get a turn: a stream whose bytes are always there would otherwise keep it.
  co_await asio::post(socket_.get_executor(), asio::use_awaitable);
}

void TlsChannel::Preload(std::string_view bytes) {
  if (!bytes.empty()) BIO_write(in_, bytes.data(), static_cast<int>(bytes.size()));
}

asio::awaitable<Status> TlsChannel::Flush() {
  if (flushing_) co_return Status();
  // Cleared however the flush ends, a cancelled coroutine's exception included.
  struct Flushing {
    bool& flag;
    explicit Flushing(bool& f) : flag(f) { flag = true; }
    ~Flushing() { flag = false; }
  } flushing(flushing_);
  Status status;
  while (BIO_ctrl_pending(out_) > 0) {
    // All that is pending in one send (up to kMaxSend): a record of 16 KiB is a little more than 16 KiB on the wire,
    // and a body's piece is several records, so a fixed 16 KiB buffer cost two sends a record.
    const size_t pending = std::min(BIO_ctrl_pending(out_), kMaxSend);
    if (write_buffer_.size() < pending) write_buffer_.resize(pending);
    int n = BIO_read(out_, write_buffer_.data(), static_cast<int>(pending));
    if (n <= 0) break;
    // What the socket takes now goes without a timer (most sends, when the peer keeps up); the rest waits for room.
    boost::system::error_code ec = asio::error::would_block;
    const size_t now =
        try_at_once_ ? socket_.write_some(asio::buffer(write_buffer_.data(), static_cast<size_t>(n)), ec) : 0;
    if (ec && ec != asio::error::would_block) {
      status = Error::Of(Code::kUnavailable, "sending: " + ec.message());
      break;
    }
    if (now == static_cast<size_t>(n)) {
      co_await DoneAtOnce();
      continue;
    }
    done_at_once_ = 0;
    write_timer_.expires_after(idle_);
    auto result = co_await (
        asio::async_write(socket_, asio::buffer(write_buffer_.data() + now, static_cast<size_t>(n) - now), kAwait) ||
        write_timer_.async_wait(kAwait));
    if (result.index() == 1) {
      status = Error::Of(Code::kTimeout, "the peer did not read for too long");
      break;
    }
    ec = std::get<0>(std::get<0>(result));
    if (ec) {
      status = Error::Of(Code::kUnavailable, "sending: " + ec.message());
      break;
    }
  }
  // A bulk piece's buffer goes with it: a connection keeps no more than a small one between messages.
  if (write_buffer_.size() > kFirstReadBuffer) std::vector<char>().swap(write_buffer_);
  co_return status;
}

asio::awaitable<Result<bool>> TlsChannel::Fill() {
  // Bytes already on the socket are taken without a timer; only a read that has to wait races the idle limit.
  boost::system::error_code ec = asio::error::would_block;
  size_t n = try_at_once_ ? socket_.read_some(asio::buffer(read_buffer_.data(), read_buffer_.size()), ec) : 0;
  if (!ec) co_await DoneAtOnce();
  if (ec == asio::error::would_block) {
    done_at_once_ = 0;
    // A wait is no stream in bulk: the connection waits with a small buffer.
    if (read_buffer_.size() > kFirstReadBuffer) std::vector<char>(kFirstReadBuffer).swap(read_buffer_);
    read_timer_.expires_after(idle_);
    auto result = co_await (socket_.async_read_some(asio::buffer(read_buffer_.data(), read_buffer_.size()), kAwait) ||
                            read_timer_.async_wait(kAwait));
    if (result.index() == 1) co_return Error::Of(Code::kTimeout, "the peer sent nothing for too long");
    std::tie(ec, n) = std::get<0>(result);
  }
  if (ec == asio::error::eof) co_return false;
  if (ec) co_return Error::Of(Code::kUnavailable, "receiving: " + ec.message());
  BIO_write(in_, read_buffer_.data(), static_cast<int>(n));
  // A read that filled the buffer is a stream in bulk: the next ones take several records a system call.
  if (n == read_buffer_.size() && read_buffer_.size() < kMaxReadBuffer) read_buffer_.resize(kMaxReadBuffer);
  co_return true;
}

asio::awaitable<Status> TlsChannel::Handshake() {
  for (;;) {
    ERR_clear_error();
    int r = SSL_do_handshake(ssl_.get());
    int error = r == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl_.get(), r);
    std::string failure = error == SSL_ERROR_NONE || error == SSL_ERROR_WANT_READ ? "" : OpenSslError("TLS handshake");
    // Our flight, or the alert that ends a failed handshake.
    Status flushed = co_await Flush();
    if (!failure.empty()) co_return Error::Of(Code::kUnavailable, failure);
    if (!flushed.ok()) co_return flushed;
    if (error == SSL_ERROR_NONE) co_return Status();
    Result<bool> filled = co_await Fill();
    if (!filled.ok()) co_return Error::Of(filled.error().code, "TLS handshake: " + filled.error().message);
    if (!*filled) co_return Error::Of(Code::kUnavailable, "TLS handshake: the connection ended");
  }
}

asio::awaitable<Result<size_t>> TlsChannel::Read(std::string& out, size_t max) {
  if (!read_failure_.empty()) co_return Error::Of(Code::kUnavailable, read_failure_);
  for (;;) {
    ERR_clear_error();
    // What can come out now is at most the records received (ciphertext is never shorter than its plaintext) and
    // what OpenSSL holds, a record at most: `out` grows by that, not by `max` (growing a string zeroes what it adds).
    // At least one byte, to learn why nothing comes.
    const size_t held = SSL_has_pending(ssl_.get()) ? kMaxRecord : 0;
    const size_t ready = std::clamp<size_t>(held + BIO_ctrl_pending(in_), 1, max);
    const size_t had = out.size();
    out.resize(had + ready);
    size_t got = 0;
    int r = SSL_read_ex(ssl_.get(), out.data() + had, ready, &got);
    if (r == 1) {
      // A read returns one record; the records already received follow it into the same read, with no wait.
      while (got < ready) {
        size_t more = 0;
        const int next = SSL_read_ex(ssl_.get(), out.data() + had + got, ready - got, &more);
        if (next == 1) {
          got += more;
          continue;
        }
        // An end (close_notify) is found again by the next read; a failure is kept for it with its reason.
        const int why = SSL_get_error(ssl_.get(), next);
        if (why != SSL_ERROR_WANT_READ && why != SSL_ERROR_ZERO_RETURN) read_failure_ = OpenSslError("TLS read");
        break;
      }
      out.resize(had + got);
      ERR_clear_error();
      co_return got;
    }
    out.resize(had);
    int error = SSL_get_error(ssl_.get(), r);
    if (error == SSL_ERROR_ZERO_RETURN) {
      close_notify_ = true;
      co_return size_t{0};
    }
    if (error != SSL_ERROR_WANT_READ) co_return Error::Of(Code::kUnavailable, OpenSslError("TLS read"));
    Status flushed = co_await Flush();  // a TLS 1.3 key update's answer, for one
    if (!flushed.ok()) co_return flushed.error();
    Result<bool> filled = co_await Fill();
    if (!filled.ok()) co_return filled.error();
    // A peer that closes without close_notify has still finished: many servers end a close-delimited body so.
    if (!*filled) co_return size_t{0};
  }
}

asio::awaitable<Status> TlsChannel::Write(std::string_view bytes) {
  if (!bytes.empty()) {
    ERR_clear_error();
    size_t written = 0;
    // Memory buffers never make a write wait: OpenSSL takes it all, and Flush sends it.
    if (SSL_write_ex(ssl_.get(), bytes.data(), bytes.size(), &written) != 1 || written != bytes.size())
      co_return Error::Of(Code::kUnavailable, OpenSslError("TLS write"));
  }
  co_return co_await Flush();
}

asio::awaitable<void> TlsChannel::Close(bool notify) {
  ERR_clear_error();
  if (notify) SSL_shutdown(ssl_.get());
  ERR_clear_error();
  (void)co_await Flush();  // a close notify the peer cannot take changes nothing: the socket is shut down next
  boost::system::error_code ec;
  socket_.shutdown(Socket::shutdown_send, ec);
  // Closing with unread bytes would reset the connection, and a reset can destroy our last answer before the peer
  // reads it; so wait (briefly) for the peer to close, discarding what it still sends.
  read_timer_.expires_after(std::chrono::seconds(1));
  for (;;) {
    auto result = co_await (socket_.async_read_some(asio::buffer(read_buffer_.data(), read_buffer_.size()), kAwait) ||
                            read_timer_.async_wait(kAwait));
    if (result.index() == 1 || std::get<0>(std::get<0>(result))) break;
  }
}

}  // namespace isb::egress
