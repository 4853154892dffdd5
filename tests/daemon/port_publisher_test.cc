// Published ports relay both ways and close a connection that stays idle. The "sandbox" here is this process (its
// network namespace is the test's own), with a listener on loopback standing in for the sandbox's server.
#include "daemon/port_publisher.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "must_work.h"
#include "net/loopback.h"

namespace isb::daemon {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::AcceptWithin;
using testing::ConnectTcp;
using testing::ReadUntil;

constexpr auto kIdle = 300ms;

class PortPublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ISB_REQUIRE_ROOT();  // the relay's thread enters the "sandbox's" network namespace (setns needs CAP_SYS_ADMIN)
    auto inside = testing::ListenTcp();
    ASSERT_TRUE(inside.ok()) << inside.error().message;
    inside_ = std::move(*inside);
    auto port = testing::FreeTcpPort();
    ASSERT_TRUE(port.ok()) << port.error().message;
    host_port_ = *port;
    Status st = publisher_.Publish("sb", ::getpid(), {{inside_.port, host_port_, "127.0.0.1"}});
    ASSERT_TRUE(st.ok()) << st.error().message;
  }

  // A client connection through the published port and the connection the "sandbox" accepted for it.
  std::pair<Fd, Fd> Connect() {
    auto client = ConnectTcp(host_port_);
    EXPECT_TRUE(client.ok()) << client.error().message;
    auto served = AcceptWithin(inside_.fd.get(), 2000);
    EXPECT_TRUE(served.ok()) << served.error().message;
    if (!client.ok() || !served.ok()) return {};
    return {std::move(*client), std::move(*served)};
  }

  static std::string Exchange(int from, int to, const std::string& bytes) {
    if (::send(from, bytes.data(), bytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) return "send failed";
    return ReadUntil(to, [&](const std::string& got) { return got.size() >= bytes.size(); }, 2000);
  }

  testing::Socket inside_;
  uint16_t host_port_ = 0;
  PortPublisher publisher_{std::chrono::duration_cast<std::chrono::milliseconds>(kIdle)};
};

TEST_F(PortPublisherTest, RelaysBothWaysAndClosesAConnectionIdleForTheTimeout) {
  auto [client, served] = Connect();
  ASSERT_TRUE(client.valid() && served.valid());
  EXPECT_EQ(Exchange(client.get(), served.get(), "ping"), "ping");
  EXPECT_EQ(Exchange(served.get(), client.get(), "pong"), "pong");
  const auto quiet_since = Clock::now();
  // Nothing more is sent: both ends see the connection end (EOF) once it has been idle for kIdle.
  EXPECT_EQ(ReadUntil(client.get(), [](const std::string&) { return false; }, 5000), "");
  const auto waited = Clock::now() - quiet_since;
  EXPECT_GE(waited, kIdle - 20ms);
  EXPECT_LT(waited, 4s) << "the idle connection was not closed";
  EXPECT_EQ(ReadUntil(served.get(), [](const std::string&) { return false; }, 2000), "");
}

TEST_F(PortPublisherTest, AConnectionInUseOutlivesTheIdleTimeout) {
  auto [client, served] = Connect();
  ASSERT_TRUE(client.valid() && served.valid());
  const auto start = Clock::now();
  int rounds = 0;
  while (Clock::now() - start < 3 * kIdle) {
    std::string byte(1, static_cast<char>('a' + rounds % 26));
    ASSERT_EQ(Exchange(rounds % 2 ? served.get() : client.get(), rounds % 2 ? client.get() : served.get(), byte), byte)
        << "round " << rounds;
    ++rounds;
    std::this_thread::sleep_for(kIdle / 4);
  }
  EXPECT_EQ(Exchange(client.get(), served.get(), "still here"), "still here");
}

TEST_F(PortPublisherTest, ConnectionsBeyondTheLimitAreClosedAtOnce) {
  std::vector<std::pair<Fd, Fd>> open;
  for (size_t i = 0; i < PortPublisher::kMaxConnections; ++i) {
    open.push_back(Connect());
    ASSERT_TRUE(open.back().first.valid()) << i;
  }
  auto extra = ConnectTcp(host_port_);
  ASSERT_TRUE(extra.ok()) << extra.error().message;  // accepted by the kernel, then closed by the publisher
  const auto start = Clock::now();
  EXPECT_EQ(ReadUntil(extra->get(), [](const std::string&) { return false; }, 5000), "");
  EXPECT_LT(Clock::now() - start, kIdle) << "the connection over the limit was held, not closed at once";
  EXPECT_EQ(Exchange(open.front().first.get(), open.front().second.get(), "ok"), "ok");
}

TEST_F(PortPublisherTest, UnpublishClosesTheListenerAndItsConnections) {
  auto [client, served] = Connect();
  ASSERT_TRUE(client.valid() && served.valid());
  publisher_.Unpublish("sb");
  EXPECT_EQ(ReadUntil(client.get(), [](const std::string&) { return false; }, 2000), "");
  auto refused = ConnectTcp(host_port_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "connect: Connection refused");
}

}  // namespace
}  // namespace isb::daemon
