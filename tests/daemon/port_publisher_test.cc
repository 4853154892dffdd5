// Published ports relay both ways and close a connection that stays idle or that a reset ended. The "sandbox" here is
// this process (its network namespace is the test's own), with a listener on loopback standing in for the sandbox's
// server.
#include "daemon/port_publisher.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>

#include "base/file.h"
#include "daemon/process_netns.h"
#include "engine/spawner.h"
#include "must_work.h"
#include "net/loopback.h"

namespace isb::daemon {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// This process, standing in for a sandbox's init (its network namespace is the test's).
NetnsOpener Self() { return testing::ProcessNetns(::getpid()); }
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
    Status st = publisher_.Publish("sb", Self(), {{inside_.port, host_port_, "127.0.0.1"}});
    ASSERT_TRUE(st.ok()) << st.error().message;
  }

  // A client connection through the published port (`port`, else the fixture's) and the connection the "sandbox"
  // accepted for it.
  std::pair<Fd, Fd> Connect(uint16_t port = 0) {
    auto client = ConnectTcp(port != 0 ? port : host_port_);
    EXPECT_TRUE(client.ok()) << client.error().message;
    auto served = AcceptWithin(inside_.fd.get(), 2000);
    EXPECT_TRUE(served.ok()) << served.error().message;
    if (!client.ok() || !served.ok()) return {};
    return {std::move(*client), std::move(*served)};
  }

  static std::string Exchange(int from, int to, const std::string& bytes) {
    if (::send(from, bytes.data(), bytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size()))
      return "send failed";
    return ReadUntil(
        to, [&](const std::string& got) { return got.size() >= bytes.size(); }, 2000);
  }

  // Closes `fd` with a reset (SO_LINGER {1, 0}) instead of a FIN.
  static void CloseWithReset(Fd fd) {
    linger abort{1, 0};
    ASSERT_EQ(::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &abort, sizeof abort), 0);
  }

  // The file descriptors this process holds, the publisher's sockets among them.
  static size_t OpenFds() {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
  }

  // CPU time (user and system, in ms) used so far by this process's threads other than the calling one: the
  // publisher's listener threads.
  static int64_t PublisherCpuMs() {
    const std::string self = std::to_string(::gettid());
    int64_t ticks = 0;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      if (task.path().filename() == self) continue;
      auto stat = isb::ReadFile(task.path().string() + "/stat");
      if (!stat.ok()) continue;  // a thread that ended meanwhile
      // After the command's ")": the state (field 3) ... utime (field 14) and stime (field 15).
      std::istringstream fields(stat->substr(stat->rfind(')') + 2));
      std::string skip;
      for (int i = 3; i < 14; ++i) fields >> skip;
      int64_t utime = 0, stime = 0;
      fields >> utime >> stime;
      ticks += utime + stime;
    }
    return ticks * 1000 / ::sysconf(_SC_CLK_TCK);
  }

  // What the end `fd` learns of the publisher's socket at the other side when it sends a byte now: a closed socket
  // answers it with a reset, which a socket that had the other side's FIN before reports as "Broken pipe" (EPIPE);
  // an open one takes it ("nothing").
  static std::string AfterSendingAByte(int fd) {
    if (::send(fd, "x", 1, MSG_NOSIGNAL) != 1) return std::string("send: ") + std::strerror(errno);
    pollfd p{fd, 0, 0};  // POLLERR and POLLHUP are reported unasked
    if (::poll(&p, 1, 1000) != 1) return "nothing";
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
      return std::string("SO_ERROR: ") + std::strerror(errno);
    return std::strerror(err);
  }

  // `reset` (one end of a relayed connection, its other end `other` holding on, or -1 where there is none) is closed
  // with a reset: the publisher closes both its sockets of the connection at once, well before the idle timeout, its
  // thread stays idle meanwhile, and `other` then finds the publisher's socket gone.
  void ExpectClosedAtOnceAfterAReset(Fd reset, int other) {
    const size_t open = OpenFds();
    const int64_t cpu = PublisherCpuMs();
    const auto start = Clock::now();
    CloseWithReset(std::move(reset));
    while (OpenFds() != open - 3 && Clock::now() - start < kIdle / 3) std::this_thread::sleep_for(1ms);
    EXPECT_EQ(OpenFds(), open - 3) << "the publisher still holds the connection's sockets";
    std::this_thread::sleep_until(start + 1s);
    EXPECT_LT(PublisherCpuMs() - cpu, 50) << "the publisher's thread was busy for a connection with nothing to move";
    if (other >= 0) {
      EXPECT_EQ(AfterSendingAByte(other), "Broken pipe");
    }
  }

  testing::Socket inside_;
  uint16_t host_port_ = 0;
  PortPublisher publisher_{std::chrono::duration_cast<std::chrono::milliseconds>(kIdle)};
};

TEST(PortPublisherPidTest, APidWhoseStartTimeDiffersIsNotEntered) {
  PortPublisher publisher;
  const NetnsOpener reused = testing::ProcessNetns(::getpid(), engine::ProcessStartTime(::getpid()) + 1);
  Status st = publisher.Publish("sb", reused, {{80, 0, "127.0.0.1"}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Code::kConflict);
  EXPECT_EQ(st.error().message, "ports[0]: the sandbox's network namespace: the sandbox is not running");
}

TEST_F(PortPublisherTest, RelaysBothWaysAndClosesAConnectionIdleForTheTimeout) {
  auto [client, served] = Connect();
  ASSERT_TRUE(client.valid() && served.valid());
  EXPECT_EQ(Exchange(client.get(), served.get(), "ping"), "ping");
  EXPECT_EQ(Exchange(served.get(), client.get(), "pong"), "pong");
  const auto quiet_since = Clock::now();
  // Nothing more is sent: both ends see the connection end (EOF) once it has been idle for kIdle.
  EXPECT_EQ(ReadUntil(
                client.get(), [](const std::string&) { return false; }, 5000),
            "");
  const auto waited = Clock::now() - quiet_since;
  EXPECT_GE(waited, kIdle - 20ms);
  EXPECT_LT(waited, 4s) << "the idle connection was not closed";
  EXPECT_EQ(ReadUntil(
                served.get(), [](const std::string&) { return false; }, 2000),
            "");
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
  EXPECT_EQ(ReadUntil(
                extra->get(), [](const std::string&) { return false; }, 5000),
            "");
  EXPECT_LT(Clock::now() - start, kIdle) << "the connection over the limit was held, not closed at once";
  EXPECT_EQ(Exchange(open.front().first.get(), open.front().second.get(), "ok"), "ok");
}

// Across every published port, the publisher holds at most its max_open connections (two descriptors each): more
// are closed at once, whichever port they came to, and a connection that ends gives its place back.
TEST_F(PortPublisherTest, ConnectionsBeyondTheDaemonsLimitAreClosedAtOnceOnEveryPort) {
  // Its connections' idle limit is long (the two held ones must outlive the checks below however loaded the machine),
  // so a connection over the limit that is closed well before it was refused, not left to idle out.
  constexpr auto kLongIdle = 5s;
  PortPublisher small(std::chrono::duration_cast<std::chrono::milliseconds>(kLongIdle), 2);
  auto ports = std::vector<uint16_t>{};
  for (int i = 0; i < 2; ++i) {
    auto port = testing::FreeTcpPort();
    ASSERT_TRUE(port.ok()) << port.error().message;
    ports.push_back(*port);
  }
  ASSERT_TRUE(small.Publish("a", Self(), {{inside_.port, ports[0], "127.0.0.1"}}).ok());
  ASSERT_TRUE(small.Publish("b", Self(), {{inside_.port, ports[1], "127.0.0.1"}}).ok());
  auto first = Connect(ports[0]);
  auto second = Connect(ports[1]);
  ASSERT_TRUE(first.first.valid() && second.first.valid());
  for (uint16_t port : ports) {
    auto extra = ConnectTcp(port);
    ASSERT_TRUE(extra.ok()) << extra.error().message;
    const auto start = Clock::now();
    EXPECT_EQ(ReadUntil(
                  extra->get(), [](const std::string&) { return false; }, 5000),
              "");
    EXPECT_LT(Clock::now() - start, kLongIdle / 2) << "a connection over the daemon's limit was held on port " << port;
  }
  EXPECT_EQ(Exchange(second.first.get(), second.second.get(), "ok"), "ok");
  first = {};  // both ends close: the publisher closes its two, and the place is free again
  std::this_thread::sleep_for(100ms);
  auto again = Connect(ports[0]);
  ASSERT_TRUE(again.first.valid());
  EXPECT_EQ(Exchange(again.first.get(), again.second.get(), "back"), "back");
}

TEST_F(PortPublisherTest, UnpublishClosesTheListenerAndItsConnections) {
  auto [client, served] = Connect();
  ASSERT_TRUE(client.valid() && served.valid());
  publisher_.Unpublish("sb");
  EXPECT_EQ(ReadUntil(
                client.get(), [](const std::string&) { return false; }, 2000),
            "");
  auto refused = ConnectTcp(host_port_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "connect: Connection refused");
}

// poll reports a reset socket (POLLHUP, POLLERR) whatever it was asked, at every call: a connection whose client
// ended its direction and then reset is over (nothing is left to deliver either way), and is closed at once.
TEST_F(PortPublisherTest, AClientsResetAfterItsEofClosesTheConnectionAtOnce) {
  auto [client, served] = Connect();
  ASSERT_TRUE(client.valid() && served.valid());
  ASSERT_EQ(::shutdown(client.get(), SHUT_WR), 0);
  ASSERT_EQ(ReadUntil(
                served.get(), [](const std::string&) { return false; }, 2000),
            "");  // the EOF got there
  ExpectClosedAtOnceAfterAReset(std::move(client), served.get());
}

// The same from the sandbox's side: its server ends its direction and then resets while the client holds on.
TEST_F(PortPublisherTest, TheSandboxsResetAfterItsEofClosesTheConnectionAtOnce) {
  auto [client, served] = Connect();
  ASSERT_TRUE(client.valid() && served.valid());
  ASSERT_EQ(::shutdown(served.get(), SHUT_WR), 0);
  ASSERT_EQ(ReadUntil(
                client.get(), [](const std::string&) { return false; }, 2000),
            "");  // the EOF got there
  ExpectClosedAtOnceAfterAReset(std::move(served), client.get());
}

// A client that resets while the publisher's connect in the sandbox is still unanswered (its server's backlog is full,
// so its SYN is dropped) is closed at once too.
TEST_F(PortPublisherTest, AClientsResetWhileTheSandboxHasYetToAnswerClosesTheConnectionAtOnce) {
  auto full = testing::ListenTcp();
  ASSERT_TRUE(full.ok()) << full.error().message;
  ASSERT_EQ(::listen(full->fd.get(), 0), 0);  // room for one connection waiting to be accepted
  auto waiting = ConnectTcp(full->port);
  ASSERT_TRUE(waiting.ok()) << waiting.error().message;
  auto host_port = testing::FreeTcpPort();
  ASSERT_TRUE(host_port.ok()) << host_port.error().message;
  Status st = publisher_.Publish("full", Self(), {{full->port, *host_port, "127.0.0.1"}});
  ASSERT_TRUE(st.ok()) << st.error().message;
  const size_t open = OpenFds();
  auto client = ConnectTcp(*host_port);
  ASSERT_TRUE(client.ok()) << client.error().message;
  // The client's socket and, once the publisher has accepted it, its two.
  for (int i = 0; i < 1000 && OpenFds() != open + 3; ++i) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(OpenFds(), open + 3);
  ExpectClosedAtOnceAfterAReset(std::move(*client), -1);
}

}  // namespace
}  // namespace isb::daemon
