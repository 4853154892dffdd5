// AsyncReadEdge on loopback TCP: what it reads, that nothing that arrives is left unread (bytes, the end, bytes
// after a read that left the socket empty), and that closing or cancelling ends a pending read.
#include "egress/edge_read.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "base/fd.h"

namespace isb::egress {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);

// g++ 12 miscompiles a co_await inside a condition (proxy.cc), so results are named before gtest's macros see them.
// One loopback connection: `peer` a plain descriptor the test writes with, `socket` the asio end read with edge
// reads, on `ioc`.
class EdgeReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tcp::acceptor acceptor(ioc_, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    peer_ = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(acceptor.local_endpoint().port());
    ASSERT_EQ(::connect(peer_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socket_ = acceptor.accept();
    socket_.non_blocking(true);
    EnableEdgeReads(socket_);
  }

  void Send(const std::string& bytes) {
    ASSERT_EQ(::send(peer_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }

  // Waits until the socket has something to read: bytes sent on loopback arrive before send returns, but a test
  // that depends on them being queued says so.
  void WaitReadable() {
    pollfd p{socket_.native_handle(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1);
  }

  // Runs `body` on the io_context until it finishes, at most 5 s (a read that never completes fails the test).
  void Run(asio::awaitable<void> body) {
    bool finished = false;
    asio::co_spawn(ioc_, std::move(body), [&](std::exception_ptr) { finished = true; });
    ioc_.run_for(std::chrono::seconds(5));
    EXPECT_TRUE(finished) << "a read never completed";
  }

  asio::awaitable<std::string> Read(size_t size = 4096) {
    std::string buf(size, '\0');
    auto [ec, n] = co_await AsyncReadEdge(socket_, asio::buffer(buf), kAwait);
    if (ec) co_return "error: " + ec.message();
    buf.resize(n);
    co_return buf;
  }

  asio::io_context ioc_;
  Fd peer_;
  tcp::socket socket_{ioc_};
};

// The end behind the last bytes: a read that judged the socket empty because it got fewer bytes than it asked for
// would leave the second read waiting forever.
TEST_F(EdgeReadTest, ReadsWhatWasSentThenTheEnd) {
  Send("hello");
  ::shutdown(peer_.get(), SHUT_WR);
  WaitReadable();
  ::usleep(20000);  // the FIN behind the bytes, so that one read takes both
  Run([&]() -> asio::awaitable<void> {
    // The event loop sees the bytes and the end arrive with no read pending: no edge will come after the read.
    asio::steady_timer pause(ioc_, std::chrono::milliseconds(20));
    co_await pause.async_wait(asio::use_awaitable);
    std::string bytes = co_await Read();
    EXPECT_EQ(bytes, "hello");
    std::string end = co_await Read();
    EXPECT_EQ(end, "error: End of file");
  }());
}

TEST_F(EdgeReadTest, AFullBufferLeavesTheRestForTheNextRead) {
  Send("abcdef");
  WaitReadable();
  Run([&]() -> asio::awaitable<void> {
    std::string first = co_await Read(4);
    EXPECT_EQ(first, "abcd");
    std::string rest = co_await Read(4);
    EXPECT_EQ(rest, "ef");
  }());
}

// Request and response: after a read that emptied the socket, the next waits for bytes sent later; bytes that came
// while no read was pending are read too.
TEST_F(EdgeReadTest, BytesThatComeAfterAReadThatEmptiedTheSocketAreRead) {
  Send("one");
  WaitReadable();
  Run([&]() -> asio::awaitable<void> {
    std::string one = co_await Read();
    EXPECT_EQ(one, "one");
    std::thread later([&] {
      ::usleep(50000);
      Send("two");
    });
    std::string two = co_await Read();
    EXPECT_EQ(two, "two");
    later.join();
    Send("three");
    asio::steady_timer pause(ioc_, std::chrono::milliseconds(50));
    co_await pause.async_wait(asio::use_awaitable);  // the event loop sees "three" arrive with no read pending
    std::string three = co_await Read();
    EXPECT_EQ(three, "three");
    ::shutdown(peer_.get(), SHUT_WR);
    std::string end = co_await Read();
    EXPECT_EQ(end, "error: End of file");
  }());
}

TEST_F(EdgeReadTest, ClosingTheSocketEndsAPendingRead) {
  Run([&]() -> asio::awaitable<void> {
    asio::steady_timer pause(ioc_, std::chrono::milliseconds(20));
    pause.async_wait([&](boost::system::error_code) { socket_.close(); });
    std::string read = co_await Read();
    EXPECT_EQ(read, "error: Operation canceled");
  }());
}

TEST_F(EdgeReadTest, ACancelledReadTakesNothingAndTheNextReadsOn) {
  Run([&]() -> asio::awaitable<void> {
    asio::steady_timer deadline(ioc_, std::chrono::milliseconds(20));
    std::string buf(16, '\0');
    auto first = co_await (AsyncReadEdge(socket_, asio::buffer(buf), kAwait) || deadline.async_wait(kAwait));
    EXPECT_EQ(first.index(), 1u) << "the read should have waited, the timer ended it";
    Send("after");
    std::string after = co_await Read();
    EXPECT_EQ(after, "after");
  }());
}

}  // namespace
}  // namespace isb::egress
