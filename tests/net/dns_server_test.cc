// The DNS responder on loopback, asked by the real `dig`.
#include "net/dns_server.h"

#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <thread>
#include <mutex>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include "base/fd.h"

namespace isb::net {
namespace {

std::string Dig(uint16_t port, const std::string& args, const std::string& at = "127.0.0.1") {
  std::string cmd = "dig @" + at + " -p " + std::to_string(port) + " +time=2 +tries=1 " + args + " 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

class DnsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DnsHooks h;
    // 127.0.0.N stands for the host end of sandbox sbN's veth.
    h.sandbox = [](uint32_t addr) -> std::optional<std::string> {
      if ((addr >> 24) == 127 && (addr & 0xffffff) != 0) return "sb" + std::to_string(addr & 0xffffff);
      return std::nullopt;
    };
    h.listed = [](const std::string& sandbox, std::string_view name) {
      return sandbox.starts_with("sb") && (name == "api.example.com" || name.ends_with(".cdn.example.com"));
    };
    Result<std::unique_ptr<DnsServer>> s = DnsServer::Start("0.0.0.0", 0, h);
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
  }
  std::unique_ptr<DnsServer> server_;
};

TEST_F(DnsServerTest, ListedNamesResolveToTheAddressAskedAndNothingElseDoes) {
  // The answer is the address the query arrived at: for a sandbox, the host end of its veth, where the proxy is.
  EXPECT_EQ(Dig(server_->port(), "+short api.example.com A"), "127.0.0.1\n");
  EXPECT_EQ(Dig(server_->port(), "+short x.cdn.example.com A"), "127.0.0.1\n");
  EXPECT_EQ(Dig(server_->port(), "+short API.Example.COM A"), "127.0.0.1\n");
  std::string aaaa = Dig(server_->port(), "api.example.com AAAA");
  EXPECT_NE(aaaa.find("status: NOERROR"), std::string::npos) << aaaa;
  EXPECT_NE(aaaa.find("ANSWER: 0"), std::string::npos) << aaaa;
  for (const char* name : {"cdn.example.com", "example.com", "evil.com", "api.example.com.evil.com"}) {
    std::string out = Dig(server_->port(), std::string(name) + " A");
    EXPECT_NE(out.find("status: NXDOMAIN"), std::string::npos) << name << ": " << out;
  }
  EXPECT_EQ(server_->answered(), 8u);
}

TEST_F(DnsServerTest, OverTcpTheAnswersAreTheSame) {
  EXPECT_EQ(Dig(server_->port(), "+tcp +short api.example.com A"), "127.0.0.1\n");
  EXPECT_EQ(Dig(server_->port(), "+tcp +short x.cdn.example.com A"), "127.0.0.1\n");
  std::string other = Dig(server_->port(), "+tcp evil.com A");
  EXPECT_NE(other.find("status: NXDOMAIN"), std::string::npos) << other;
  EXPECT_NE(other.find("(TCP)"), std::string::npos) << other;
  EXPECT_EQ(server_->answered(), 3u);
}

// A query for `name` type A with `id`, after its 2-byte length.
std::string TcpQuery(uint16_t id, const std::string& name) {
  std::string q = {static_cast<char>(id >> 8), static_cast<char>(id & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  size_t start = 0;
  while (start < name.size()) {
    size_t dot = std::min(name.find('.', start), name.size());
    q += static_cast<char>(dot - start);
    q += name.substr(start, dot - start);
    start = dot + 1;
  }
  q += std::string("\0\0\x01\0\x01", 5);
  return std::string{static_cast<char>(q.size() >> 8), static_cast<char>(q.size() & 0xff)} + q;
}

// A burst: a thousand queries sent at once, as a thousand lookups starting together in one sandbox send them, all
// answered (none dropped for want of room in the responder's receive buffer, which would cost each a resolver's
// 5 s retry).
TEST_F(DnsServerTest, AThousandQueriesAtOnceAreAllAnswered) {
  Fd c(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  int room = 8 << 20;
  ASSERT_EQ(::setsockopt(c.get(), SOL_SOCKET, SO_RCVBUFFORCE, &room, sizeof room), 0);  // the answers wait here
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(server_->port());
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  constexpr int kQueries = 1000;
  for (int i = 0; i < kQueries; ++i) {
    std::string q = TcpQuery(static_cast<uint16_t>(i), "api.example.com").substr(2);
    ASSERT_EQ(::sendto(c.get(), q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(q.size()));
  }
  std::vector<bool> seen(kQueries);
  int answers = 0;
  pollfd p{c.get(), POLLIN, 0};
  while (answers < kQueries && ::poll(&p, 1, 2000) == 1) {
    char buf[512];
    ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
    if (n < 12) continue;
    int id = (static_cast<uint8_t>(buf[0]) << 8) | static_cast<uint8_t>(buf[1]);
    if (id < kQueries && !seen[static_cast<size_t>(id)]) {
      seen[static_cast<size_t>(id)] = true;
      ++answers;
    }
  }
  EXPECT_EQ(answers, kQueries);
}

class DnsTcpTest : public DnsServerTest {
 protected:
  // A connection as from sandbox sb`n` (to 127.0.0.n).
  Fd Connect(uint32_t n = 1) {
    Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK - 1 + n);
    a.sin_port = htons(server_->port());
    EXPECT_EQ(::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return s;
  }
  static void Send(int fd, const std::string& bytes) {
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }
  // What arrives within `ms` milliseconds, until the server closes or `want` bytes came.
  static std::string Receive(int fd, int ms, size_t want = 65536) {
    std::string out;
    char buf[4096];
    while (out.size() < want) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, ms) <= 0) break;
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        out += "<closed>";
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  void WaitForConnections(size_t n) {
    for (int i = 0; i < 200 && server_->tcp_connections() != n; ++i) ::usleep(10000);
    ASSERT_EQ(server_->tcp_connections(), n);
  }
};

// Two queries in one write: two answers, each after its length, in order; A for the listed name, NXDOMAIN else.
TEST_F(DnsTcpTest, SeveralQueriesOnOneConnectionEachGetTheirAnswer) {
  Fd c = Connect();
  Send(c.get(), TcpQuery(0x1234, "api.example.com") + TcpQuery(0x5678, "evil.com"));
  std::string got = Receive(c.get(), 2000, 2 + 49 + 2 + 26);
  // 49 bytes: header, the question (17 + 4), one answer (a pointer, type, class, TTL, length, the address).
  ASSERT_EQ(got.size(), 2u + 49 + 2 + 26) << got.size();
  EXPECT_EQ(got.substr(0, 4), std::string("\0\x31\x12\x34", 4));
  EXPECT_EQ(got.substr(2 + 49 - 4, 4), std::string("\x7f\0\0\x01", 4)) << "the address the query arrived at";
  EXPECT_EQ(got.substr(51, 4), std::string("\0\x1a\x56\x78", 4));
  EXPECT_EQ(got[51 + 5] & 0x0f, 3) << "NXDOMAIN";
}

// What is not a query the responder answers ends the connection: a zero length, a length above the bound, bytes
// too short for a header.
TEST_F(DnsTcpTest, MalformedInputClosesTheConnectionWithoutAnAnswer) {
  for (const std::string& bad :
       {std::string("\0\0", 2), std::string("\x13\x89", 2), std::string("\0\x03", 2) + "abc"}) {
    Fd c = Connect();
    Send(c.get(), bad);
    EXPECT_EQ(Receive(c.get(), 2000), "<closed>");
  }
  EXPECT_EQ(server_->answered(), 0u);
  EXPECT_EQ(server_->dropped(), 3u);
  WaitForConnections(0);
}

// One sandbox gets at most kMaxDnsTcpPerSandbox connections: one more is closed at once, while another sandbox is
// still answered.
TEST_F(DnsTcpTest, OneSandboxCannotTakeEveryConnection) {
  std::vector<Fd> idle;
  for (size_t i = 0; i < kMaxDnsTcpPerSandbox; ++i) idle.push_back(Connect(1));
  WaitForConnections(kMaxDnsTcpPerSandbox);
  Fd extra = Connect(1);
  EXPECT_EQ(Receive(extra.get(), 2000), "<closed>");
  EXPECT_EQ(server_->dropped(), 1u);
  Fd other = Connect(2);
  Send(other.get(), TcpQuery(9, "api.example.com"));
  std::string got = Receive(other.get(), 2000, 51);
  ASSERT_EQ(got.size(), 51u);
  EXPECT_EQ(got.substr(47, 4), std::string("\x7f\0\0\x02", 4)) << "the address sb2's query arrived at";
}

// A connection whose query does not arrive in time is closed; at the bound, a new connection waits for a slot.
TEST_F(DnsTcpTest, SlowConnectionsAreClosedAndTheirNumberIsBounded) {
  std::vector<Fd> idle;
  const uint32_t sandboxes = kMaxDnsTcpConnections / kMaxDnsTcpPerSandbox;
  for (uint32_t n = 1; n <= sandboxes; ++n) {
    for (size_t i = 0; i < kMaxDnsTcpPerSandbox; ++i) idle.push_back(Connect(n));
  }
  WaitForConnections(kMaxDnsTcpConnections);
  Fd waiting = Connect(sandboxes + 1);
  Send(waiting.get(), TcpQuery(7, "api.example.com"));
  EXPECT_EQ(Receive(waiting.get(), 300), "") << "no slot: not served yet";
  Send(idle[0].get(), "\0");  // half a length: still counts as slow
  // All the idle ones are closed once the timeout passes; then the waiting one is answered.
  EXPECT_EQ(Receive(idle[0].get(), static_cast<int>(kDnsTcpTimeout.count()) + 2000), "<closed>");
  EXPECT_EQ(Receive(waiting.get(), 2000, 51).size(), 51u);
  // Each of the others by its own deadline (it was accepted a little later than the first).
  for (Fd& f : idle) EXPECT_EQ(Receive(f.get(), static_cast<int>(kDnsTcpTimeout.count()) + 2000), "<closed>");
}

// An upstream resolver on loopback for the forwarding tests: answers each A query with 192.0.2.7, after two forged
// answers under the same id: 6.6.6.6 from another port of the same address, and 5.5.5.5 from its own port but to
// another question. It records the ids and source ports it was asked from.
class FakeUpstream {
 public:
  explicit FakeUpstream(int delay_ms = 0) : delay_ms_(delay_ms) {
    sock_.Reset(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    forger_.Reset(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(sock_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(sock_.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeUpstream() {
    stop_ = true;
    thread_.join();
  }
  uint16_t port() const { return port_; }
  std::vector<uint16_t> ids() {
    std::lock_guard lock(mu_);
    return ids_;
  }
  std::vector<uint16_t> ports() {
    std::lock_guard lock(mu_);
    return ports_;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{sock_.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;
      uint8_t q[512];
      sockaddr_in from{};
      socklen_t len = sizeof from;
      ssize_t n = ::recvfrom(sock_.get(), q, sizeof q, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 12) continue;
      {
        std::lock_guard lock(mu_);
        ids_.push_back(static_cast<uint16_t>(q[0] << 8 | q[1]));
        ports_.push_back(ntohs(from.sin_port));
      }
      if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
      for (const uint8_t octet : {uint8_t{6}, uint8_t{5}, uint8_t{7}}) {
        std::vector<uint8_t> a(q, q + n);
        a[2] |= 0x80;                   // QR
        a[7] = 1;                       // one answer
        if (octet == 5) a[13] ^= 0x01;  // the question's first letter changed
        const uint8_t rr[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4};
        a.insert(a.end(), rr, rr + sizeof rr);
        if (octet == 7)
          a.insert(a.end(), {192, 0, 2, 7});
        else
          a.insert(a.end(), {octet, octet, octet, octet});
        const Fd& s = octet == 6 ? forger_ : sock_;
        ::sendto(s.get(), a.data(), a.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
      }
    }
  }
  int delay_ms_;
  Fd sock_, forger_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<uint16_t> ids_, ports_;
  std::thread thread_;
};

// An open sandbox's queries go to the upstream under an id of the responder's own and come back under the sandbox's;
// an answer from any other address or port is not taken; nothing of a list sandbox's goes upstream.
TEST(DnsForwardTest, AnOpenSandboxsQueriesAreRelayedToTheUpstreamAndBack) {
  FakeUpstream upstream;
  DnsHooks h;
  // 127.0.0.1 is the host end of open sandbox "open1", 127.0.0.2 of list sandbox "list2".
  h.sandbox = [](uint32_t addr) -> std::optional<std::string> {
    if (addr == 0x7f000001) return "open1";
    if (addr == 0x7f000002) return "list2";
    return std::nullopt;
  };
  h.listed = [](const std::string&, std::string_view) { return false; };
  h.forwarded = [](const std::string& sandbox) { return sandbox == "open1"; };
  // The first upstream answers nothing (nothing listens there): the second is asked a second later.
  auto dead = ParseDnsUpstream("127.0.0.1:9");
  auto live = ParseDnsUpstream("127.0.0.1:" + std::to_string(upstream.port()));
  ASSERT_TRUE(dead.ok() && live.ok());
  auto s = DnsServer::Start("0.0.0.0", 0, h, {*dead, *live});
  ASSERT_TRUE(s.ok()) << s.error().message;
  std::unique_ptr<DnsServer> server = std::move(*s);

  Fd c(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(server->port());
  to.sin_addr.s_addr = htonl(0x7f000001);
  std::string q = TcpQuery(0x1234, "example.test").substr(2);
  ASSERT_EQ(::sendto(c.get(), q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
            static_cast<ssize_t>(q.size()));
  pollfd p{c.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 3000), 1) << "no answer";
  uint8_t a[512];
  ssize_t n = ::recv(c.get(), a, sizeof a, 0);
  ASSERT_EQ(n, static_cast<ssize_t>(q.size() + 16));
  EXPECT_EQ(a[0] << 8 | a[1], 0x1234);
  EXPECT_EQ(std::vector<uint8_t>(a + n - 4, a + n), (std::vector<uint8_t>{192, 0, 2, 7}));
  EXPECT_EQ(::poll(&p, 1, 300), 0) << "a second answer came";
  ASSERT_EQ(upstream.ids().size(), 1u);
  EXPECT_NE(upstream.ids()[0], 0x1234);
  EXPECT_EQ(server->forwarded(), 1u);
  // Each query from a port of its own.
  for (uint16_t i = 0; i < 2; ++i) {
    ASSERT_EQ(::sendto(c.get(), q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(q.size()));
    ASSERT_EQ(::poll(&p, 1, 3000), 1) << "no answer";
    ASSERT_GT(::recv(c.get(), a, sizeof a, 0), 0);
  }
  std::vector<uint16_t> ports = upstream.ports();
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_TRUE(ports[0] != ports[1] && ports[1] != ports[2] && ports[0] != ports[2]) << ports[0] << " " << ports[1];

  // A list sandbox's query is answered by the responder itself: NXDOMAIN, and the upstream never hears of it.
  EXPECT_NE(Dig(server->port(), "example.test A", "127.0.0.2").find("status: NXDOMAIN"), std::string::npos);
  EXPECT_EQ(upstream.ids().size(), 3u);
  // Over TCP an open sandbox is not served.
  EXPECT_EQ(Dig(server->port(), "+tcp +short example.test A").find("192.0.2.7"), std::string::npos);
  EXPECT_EQ(upstream.ids().size(), 3u);
}

// A resolver on loopback that reads every query and answers none.
struct SilentResolver {
  SilentResolver() {
    fd.Reset(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    int room = 4 << 20;  // a flood waits here whole
    EXPECT_EQ(::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &room, sizeof room), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
    upstream = *ParseDnsUpstream("127.0.0.1:" + std::to_string(ntohs(a.sin_port)));
  }
  Fd fd;
  DnsUpstream upstream;
};

// Every address is the host end of an open sandbox, sb<last octet>.
DnsHooks EveryoneForwarded() {
  DnsHooks h;
  h.sandbox = [](uint32_t addr) -> std::optional<std::string> { return "sb" + std::to_string(addr & 0xff); };
  h.listed = [](const std::string&, std::string_view) { return false; };
  h.forwarded = [](const std::string&) { return true; };
  return h;
}

size_t OpenDescriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// One open sandbox's flood holds at most kMaxDnsPendingPerSandbox queries awaiting an upstream that does not answer,
// and another's query still goes up.
TEST(DnsForwardTest, OneSandboxsFloodLeavesRoomForTheOthers) {
  SilentResolver silent;
  auto s = DnsServer::Start("0.0.0.0", 0, EveryoneForwarded(), {silent.upstream});
  ASSERT_TRUE(s.ok()) << s.error().message;
  const size_t descriptors = OpenDescriptors();
  auto send = [&](uint32_t to_host_end, int queries) {
    Fd c(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons((*s)->port());
    to.sin_addr.s_addr = htonl(to_host_end);
    for (int i = 0; i < queries; ++i) {
      std::string q = TcpQuery(static_cast<uint16_t>(i), "flood.test").substr(2);
      ASSERT_EQ(::sendto(c.get(), q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
                static_cast<ssize_t>(q.size()));
    }
  };
  auto received = [&] {
    int n = 0;
    pollfd p{silent.fd.get(), POLLIN, 0};
    char buf[512];
    while (::poll(&p, 1, 500) == 1 && ::recv(silent.fd.get(), buf, sizeof buf, 0) > 0) ++n;
    return n;
  };
  send(0x7f000001, 300);
  EXPECT_EQ(received(), kMaxDnsPendingPerSandbox);
  send(0x7f000002, 1);
  EXPECT_EQ(received(), 1);
  // Each waiting query holds a socket of its own, given back when the query is given up on.
  EXPECT_EQ(OpenDescriptors(), descriptors + kMaxDnsPendingPerSandbox + 1);
  for (int i = 0; i < 60 && OpenDescriptors() != descriptors; ++i) ::usleep(100000);
  EXPECT_EQ(OpenDescriptors(), descriptors);
}

// A resolver slower than the retry still counts: its answer, after the next resolver was asked, is relayed.
TEST(DnsForwardTest, ASlowResolversLateAnswerIsRelayed) {
  FakeUpstream slow(1500);
  SilentResolver silent;
  auto s = DnsServer::Start("0.0.0.0", 0, EveryoneForwarded(),
                            {*ParseDnsUpstream("127.0.0.1:" + std::to_string(slow.port())), silent.upstream});
  ASSERT_TRUE(s.ok()) << s.error().message;
  std::string out = Dig((*s)->port(), "+short +noedns +time=3 example.test A");  // the answer follows the question
  EXPECT_EQ(out, "192.0.2.7\n");
  char buf[512];
  EXPECT_GT(::recv(silent.fd.get(), buf, sizeof buf, MSG_DONTWAIT), 0) << "the second resolver was not asked";
}

TEST(DnsForwardTest, WithNoUpstreamAnOpenSandboxIsAnsweredServfail) {
  auto s = DnsServer::Start("0.0.0.0", 0, EveryoneForwarded());
  ASSERT_TRUE(s.ok()) << s.error().message;
  std::string out = Dig((*s)->port(), "example.test A");
  EXPECT_NE(out.find("status: SERVFAIL"), std::string::npos) << out;
}

TEST(DnsUpstreamTest, ParsesAddressesAndResolvConf) {
  auto text = [](const DnsUpstream& u) {
    char host[64] = {};
    uint16_t port = 0;
    if (u.address.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&u.address);
      ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
      port = ntohs(a->sin_port);
    } else {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&u.address);
      ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
      port = ntohs(a->sin6_port);
    }
    return std::string(host) + " " + std::to_string(port);
  };
  EXPECT_EQ(text(*ParseDnsUpstream("192.0.2.1")), "192.0.2.1 53");
  EXPECT_EQ(text(*ParseDnsUpstream("192.0.2.1:5353")), "192.0.2.1 5353");
  EXPECT_EQ(text(*ParseDnsUpstream("[2001:db8::1]:54")), "2001:db8::1 54");
  EXPECT_EQ(text(*ParseDnsUpstream("[2001:db8::1]")), "2001:db8::1 53");
  EXPECT_EQ(text(*ParseDnsUpstream("2001:db8::1")), "2001:db8::1 53");
  for (const char* bad : {"", "resolver", "192.0.2.1:0", "192.0.2.1:65536", "[2001:db8::1", "[::1]x", "1.2.3.4:x"}) {
    auto r = ParseDnsUpstream(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message, "DNS upstream '" + std::string(bad) + "' is not IP, IP:PORT or [IPv6]:PORT");
  }
  std::vector<DnsUpstream> conf = UpstreamsFromResolvConf(
      "# comment\nsearch example.org\nnameserver 127.0.0.53\n  nameserver\t192.0.2.9  # trailing\n"
      "nameserver 2001:db8::2\nnameserver fe80::1%eth0\nnameserver bogus\noptions edns0\n");
  ASSERT_EQ(conf.size(), 3u);
  EXPECT_EQ(text(conf[0]), "127.0.0.53 53");
  EXPECT_EQ(text(conf[1]), "192.0.2.9 53");
  EXPECT_EQ(text(conf[2]), "2001:db8::2 53");
}

}  // namespace
}  // namespace isb::net
