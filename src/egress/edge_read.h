// A socket read for the proxy's relays that trusts the epoll reactor's edges: after a read that left the socket
// empty, the next read waits for the socket's next readiness event instead of first trying the socket, as asio's
// async_read_some does (on a request/response connection, a recv that finds nothing nearly every time).
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstring>

#include <boost/asio.hpp>
#include <cerrno>
#include <memory>
#include <type_traits>

namespace isb::egress {
namespace edge_read {

namespace asio = boost::asio;
namespace detail = boost::asio::detail;
using tcp = asio::ip::tcp;

// Why this is sound: asio's epoll reactor registers every socket edge-triggered (EPOLLET) and keeps, per
// descriptor and kind of operation, whether the next operation should try the socket before waiting. With TCP_INQ
// on (EnableEdgeReads), each read also says how much the socket still holds: zero means no byte and no end (the
// kernel counts a received FIN or reset as more to read) at the moment of the read, and whatever arrives after it,
// even while the read runs, raises a new edge, which sets the flag again. Only such a read is reported "exhausted",
// which clears the flag; so no byte, end or error can wait unseen, whichever asio read comes next. (A short read
// alone would not do: the FIN that follows the last bytes may have raised its edge before they were read.)
// One case the count misses: a reset that came with the last bytes (TCP_INQ counts no reset). The read after them
// then waits until the socket is written to (which fails) or closed, or a read that tries the socket first comes:
// ReadSome (socket_relay.h) says how the proxy's relays live with that.
static_assert(std::is_same_v<detail::reactor, detail::epoll_reactor>, "edge reads need asio's epoll reactor");

// The socket's descriptor and reactor registration, which asio keeps in a protected member: reached through a
// pointer to that member formed in a derived class (no object of the derived class is ever made).
struct SocketAccess : tcp::socket {
  static auto& Implementation(tcp::socket& s) { return (s.*(&SocketAccess::impl_)).get_implementation(); }
};

template <typename Handler, typename IoExecutor>
class RecvOp : public detail::reactor_op {
 public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(RecvOp);

  RecvOp(int fd, asio::mutable_buffer buffer, Handler& handler, const IoExecutor& io_ex)
      : reactor_op(boost::system::error_code(), &RecvOp::Perform, &RecvOp::Complete),
        fd_(fd),
        buffer_(buffer),
        handler_(std::move(handler)),
        work_(handler_, io_ex) {}

  static status Perform(reactor_op* base) {
    auto* o = static_cast<RecvOp*>(base);
    for (;;) {
      iovec iov{o->buffer_.data(), o->buffer_.size()};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      ssize_t n = ::recvmsg(o->fd_, &msg, MSG_DONTWAIT);
      if (n > 0) {
        o->bytes_transferred_ = static_cast<size_t>(n);
        return LeftEmpty(msg) ? done_and_exhausted : done;
      }
      if (n == 0) {
        o->ec_ = asio::error::eof;  // no edge follows an end: a read after it must try the socket
        return done;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return not_done;
      o->ec_ = boost::system::error_code(errno, asio::error::get_system_category());
      return done;
    }
  }

  // True when the read's TCP_CM_INQ says the socket holds nothing more; false without it (TCP_INQ off).
  static bool LeftEmpty(msghdr& msg) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_TCP || c->cmsg_type != TCP_CM_INQ) continue;
      int inq = 1;
      std::memcpy(&inq, CMSG_DATA(c), sizeof inq);
      return inq == 0;
    }
    return false;
  }

  // As asio's own operations complete: the memory is freed before the handler runs; no upcall when the event loop
  // is being destroyed (owner null).
  static void Complete(void* owner, detail::operation* base, const boost::system::error_code&, std::size_t) {
    auto* o = static_cast<RecvOp*>(base);
    ptr p = {std::addressof(o->handler_), o, o};
    detail::handler_work<Handler, IoExecutor> w(std::move(o->work_));
    detail::binder2<Handler, boost::system::error_code, std::size_t> handler(o->handler_, o->ec_,
                                                                             o->bytes_transferred_);
    p.h = std::addressof(handler.handler_);
    p.reset();
    if (owner) {
      detail::fenced_block b(detail::fenced_block::half);
      w.complete(handler, handler.handler_);
    }
  }

 private:
  int fd_;
  asio::mutable_buffer buffer_;
  Handler handler_;
  detail::handler_work<Handler, IoExecutor> work_;
};

// Cancels the pending read when the awaiting coroutine is cancelled (a parallel group ending, say).
class Cancellation {
 public:
  Cancellation(detail::reactor* reactor, detail::reactor::per_descriptor_data* data, int fd)
      : reactor_(reactor), data_(data), fd_(fd) {}
  void operator()(asio::cancellation_type_t type) {
    constexpr auto kAny =
        asio::cancellation_type::terminal | asio::cancellation_type::partial | asio::cancellation_type::total;
    if (!!(type & kAny)) reactor_->cancel_ops_by_key(fd_, *data_, detail::reactor::read_op, this);
  }

 private:
  detail::reactor* reactor_;
  detail::reactor::per_descriptor_data* data_;
  int fd_;
};

}  // namespace edge_read

// Has every read of `s` report how much the socket still holds (TCP_INQ), which AsyncReadEdge needs to skip the
// read that would find nothing. Without it (an error here, ignored) AsyncReadEdge reads as async_read_some does.
inline void EnableEdgeReads(boost::asio::ip::tcp::socket& s) {
  int on = 1;
  ::setsockopt(s.native_handle(), SOL_TCP, TCP_INQ, &on, sizeof on);
}

// Reads some bytes from `s` into `buffer`, completing as asio's async_read_some does (eof at the end, an error, or
// operation_aborted when the socket is closed or the operation cancelled). Requires a non-empty buffer.
template <typename Token>
auto AsyncReadEdge(boost::asio::ip::tcp::socket& s, boost::asio::mutable_buffer buffer, Token&& token) {
  namespace asio = boost::asio;
  namespace detail = boost::asio::detail;
  auto initiate = [](auto handler, asio::ip::tcp::socket* socket, asio::mutable_buffer into) {
    using Handler = std::decay_t<decltype(handler)>;
    using Op = edge_read::RecvOp<Handler, asio::any_io_executor>;
    auto& impl = edge_read::SocketAccess::Implementation(*socket);
    auto& reactor = asio::use_service<detail::reactor>(asio::query(socket->get_executor(), asio::execution::context));
    const bool is_continuation = boost_asio_handler_cont_helpers::is_continuation(handler);
    auto slot = asio::get_associated_cancellation_slot(handler);
    typename Op::ptr p = {std::addressof(handler), Op::ptr::allocate(handler), nullptr};
    p.p = new (p.v) Op(impl.socket_, into, handler, socket->get_executor());
    if (slot.is_connected()) {
      p.p->cancellation_key_ =
          &slot.template emplace<edge_read::Cancellation>(&reactor, &impl.reactor_data_, impl.socket_);
    }
    reactor.start_op(detail::reactor::read_op, impl.socket_, impl.reactor_data_, p.p, is_continuation, true);
    p.v = p.p = nullptr;
  };
  return asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(initiate, token, &s, buffer);
}

}  // namespace isb::egress
