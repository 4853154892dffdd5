// WebSocketSession against a peer that goes quiet or stops reading: the bytes on the wire, and when it gives up.
#include "api/websocket_session.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "base/fd.h"

namespace isb::api {
namespace {

using std::chrono::milliseconds;
namespace op = net::ws_opcode;

// Whatever `fd` has now, without waiting past `wait` for the first byte.
std::string Drain(int fd, milliseconds wait) {
  std::string got;
  char buf[64 << 10];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, static_cast<int>(got.empty() ? wait.count() : 50)) > 0) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

class WebSocketSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
    server_ = Fd(fds[0]);
    peer_ = Fd(fds[1]);
  }
  WebSocketSession::Options Quick() {
    return {.ping_after = milliseconds(300), .pong_wait = milliseconds(300), .write_wait = milliseconds(300)};
  }
  Fd server_, peer_;
};

TEST_F(WebSocketSessionTest, APeerThatAnswersNoPingIsGivenUpAfterPingAfterAndPongWait) {
  WebSocketSession ws(server_.get(), "", nullptr, Quick());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(ws.Read().has_value());
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, milliseconds(600));
  EXPECT_LT(took, milliseconds(2000));
  EXPECT_TRUE(ws.broken());
  // On the wire: one empty ping (FIN, opcode 9, unmasked, length 0), nothing else.
  EXPECT_EQ(Drain(peer_.get(), milliseconds(100)), std::string("\x89\x00", 2));
}

TEST_F(WebSocketSessionTest, APeerThatAnswersPingsStaysAndItsMessageArrives) {
  WebSocketSession ws(server_.get(), "", nullptr, Quick());
  auto read = std::async(std::launch::async, [&] { return ws.Read(); });
  // Three pings answered with pongs (masked, as a client sends): past ping_after + pong_wait three times over.
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Drain(peer_.get(), milliseconds(2000)), std::string("\x89\x00", 2)) << i;
    const std::string pong("\x8a\x80\x00\x00\x00\x00", 6);
    ASSERT_EQ(::send(peer_.get(), pong.data(), pong.size(), MSG_NOSIGNAL), 6);
  }
  ASSERT_EQ(read.wait_for(milliseconds(0)), std::future_status::timeout) << "the session ended while pongs came";
  const std::string hi("\x81\x82\x00\x00\x00\x00hi", 8);
  ASSERT_EQ(::send(peer_.get(), hi.data(), hi.size(), MSG_NOSIGNAL), 8);
  ASSERT_EQ(read.wait_for(milliseconds(2000)), std::future_status::ready);
  std::optional<WebSocketSession::Message> got = read.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->opcode, op::kText);
  EXPECT_EQ(got->data, "hi");
  EXPECT_FALSE(ws.broken());
}

TEST_F(WebSocketSessionTest, AFrameCutShortByTheWriteTimeoutEndsTheConnection) {
  int small = 4096;
  ASSERT_EQ(::setsockopt(server_.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  WebSocketSession ws(server_.get(), "", nullptr, Quick());
  // The peer reads nothing: the frame does not fit in the socket's buffers.
  const std::string big(4 << 20, 'x');
  EXPECT_FALSE(ws.Send(op::kBinary, big));
  EXPECT_TRUE(ws.broken());
  const std::string partial = Drain(peer_.get(), milliseconds(500));
  ASSERT_GT(partial.size(), 10u);
  EXPECT_LT(partial.size(), big.size());
  EXPECT_EQ(partial.substr(0, 2), "\x82\x7f");  // FIN binary, 64-bit length: the head of the cut frame
  // Nothing more goes out after a cut frame: a peer would read it as the rest of the cut one.
  EXPECT_FALSE(ws.Send(op::kText, "after"));
  EXPECT_EQ(Drain(peer_.get(), milliseconds(300)), "");
  EXPECT_FALSE(ws.Read().has_value());
}

}  // namespace
}  // namespace isb::api
