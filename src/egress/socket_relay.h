// Bytes between two TCP sockets on one of the proxy's event loops: each direction read as the reactor reports it
// (edge_read.h), small messages through a buffer and bulk by splice (never through user space), a half-close passed
// on, an idle connection ended; and a socket as a MessageStream, for the HTTP message relay.
#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>

#include "base/fd.h"
#include "egress/byte_count.h"
#include "egress/message_relay.h"

namespace isb::egress {

// What the two directions of a relayed connection share.
struct RelayEnds {
  bool half_closed = false;  // one direction has ended with a half-close (HalfClose)
  int first_status = 0;      // a plain HTTP connection's first response status, once read (RelayResponses)
  std::chrono::steady_clock::time_point last_read = std::chrono::steady_clock::now();  // bytes came either way
};

using Socket = boost::asio::ip::tcp::socket;

// A relay's read. While both directions run: when the reactor reports the socket readable, not first on the
// chance (AsyncReadEdge). A reset that came with the last bytes read that way raises no further readiness, and
// then the read waits until the other direction writes to the socket (which fails and closes both) or ends
// (HalfClose, which cancels the read when it finds the socket dead). Once the other direction has ended, neither
// will come: each read tries the socket first, and so sees the reset.
boost::asio::awaitable<std::tuple<boost::system::error_code, size_t>> ReadSome(Socket& s, boost::asio::mutable_buffer b,
                                                                               RelayEnds& ends);

// Writes `bytes` to `s`. A socket with room in its send buffer (the usual case) takes them at once, without a
// trip through the event loop; what it does not take is written when it can. The descriptor number is taken at the
// call (-1 once closed: EBADF), as in Splice.
boost::asio::awaitable<bool> Send(Socket& s, std::string_view bytes);

// Moves bytes from `from` to `to` until `from` ends (then half-closes `to`) or either fails (then closes both,
// which ends the other direction too), adding them to `count`. A message goes through a small buffer: two system
// calls per message, the read when the reactor reports the socket readable (ReadSome) and the write straight away
// (Send). A read that fills the buffer means a bulk transfer: what follows moves through a pipe with splice, never
// through user space, until the socket has nothing more to give.
// Closing both here cannot reach another connection's descriptor: both directions run on the connection's event
// loop, one thread (Proxy's accept loop), so a close happens only while the other direction is suspended in an asio
// operation on these sockets (which the close cancels), and Splice and Send take each descriptor number from the
// socket at the moment of each call (-1 once closed: EBADF, never a reused number). The pipe is this direction's own.
boost::asio::awaitable<void> Pump(Socket& from, Socket& to, ByteCount count, RelayEnds& ends);

// Ends a relayed connection that has moved no byte either way for `idle`: it closes both sockets, which ends both
// directions, and counts it in `idle_closed`. Cancelled (the parallel group ending) once they have ended on their own.
boost::asio::awaitable<void> Watch(Socket& a, Socket& b, RelayEnds& ends, std::chrono::milliseconds idle,
                                   std::atomic<uint64_t>& idle_closed);

// A direction ended: so does what `to` is sent, and the other direction reads on alone, each read trying the
// socket first (ReadSome). When `to` cannot be shut down it is dead (reset); a read of it still waiting is then
// cancelled, to read again that way: what is left goes on, then the reset closes both.
void HalfClose(Socket& to, RelayEnds& ends);
void CloseBoth(Socket& a, Socket& b);

// A socket of a relayed connection as the message relay reads and writes it: reads by ReadSome, writes by Send
// (counted in `written`), and a Content-Length body forwarded to another SocketStream by splice.
class SocketStream : public MessageStream {
 public:
  SocketStream(Socket& socket, RelayEnds& ends, ByteCount written) : socket_(socket), ends_(ends), written_(written) {}
  boost::asio::awaitable<Result<size_t>> ReadInto(std::string& buffer, size_t max) override;
  boost::asio::awaitable<Status> Write(std::string_view bytes) override;
  boost::asio::awaitable<Result<uint64_t>> Forward(MessageStream& to, uint64_t budget) override;

 private:
  Socket& socket_;
  RelayEnds& ends_;
  ByteCount written_;
  Fd pipe_read_, pipe_write_;  // made at the first Forward
  // Where a read lands before it is appended (not zeroed first, as growing the string for each read would be):
  // 16 KiB, and a whole piece (kRelayPiece) from a read that filled it to one that brings less than 16 KiB.
  std::unique_ptr<char[]> room_;
  size_t room_size_ = 0;
  bool bulk_ = false;
};

}  // namespace isb::egress
