// Egress from inside real sandboxes, with real clients: a listed name works through isb's DNS and proxy (with the
// proxy variables and without), everything else fails the way it should. The origin is a python HTTP server on the
// host's loopback that the daemon reaches only because the test pins names to it.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <filesystem>
#include <functional>
#include <fstream>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

// A TCP port on loopback that nothing listens on right now (the kernel's pick, released for the origin to take).
int FreeLoopbackPort() {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(s);
  return port;
}

class EgressTest : public E2eTest {
 protected:
  void TearDown() override {
    if (origin_ > 0) {
      ::kill(origin_, SIGKILL);
      ::waitpid(origin_, nullptr, 0);
    }
    if (!origin_dir_.empty()) std::filesystem::remove_all(origin_dir_);
    E2eTest::TearDown();
  }

  // The origin's files go in a fresh directory; it will listen on a free loopback port.
  void PrepareOrigin() {
    origin_dir_ = "/tmp/isb-origin-" + RandomHex(6);
    std::filesystem::create_directories(origin_dir_);
    port_ = FreeLoopbackPort();
  }

  // Runs `argv` as the origin, its output discarded, until `up` says it answers (at most 5 s).
  bool RunOrigin(const std::vector<std::string>& argv, const std::function<bool()>& up) {
    // Built before fork: the child of a threaded process must not allocate.
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    origin_ = ::fork();
    if (origin_ == 0) {
      int devnull = ::open("/dev/null", O_RDWR);
      for (int fd : {0, 1, 2}) ::dup2(devnull, fd);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    for (int i = 0; i < 100; ++i) {
      if (up()) return true;
      ::usleep(50000);
    }
    return up();
  }

  // The daemon again, with each of `names` pinned to the origin.
  void RestartPinnedTo(const std::vector<std::string>& names) {
    ASSERT_EQ(StopDaemon(), 0);
    std::vector<std::string> args;
    for (const auto& n : names) args.insert(args.end(), {"--egress-pin", n + "=127.0.0.1:" + std::to_string(port_)});
    StartDaemon(args);
  }

  // Starts an HTTP origin (python) and restarts the daemon with names pinned to it.
  void StartOriginAndPin(const std::vector<std::string>& names) {
    PrepareOrigin();
    std::ofstream(origin_dir_ + "/index.html") << "hello from the origin\n";
    std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/";
    ASSERT_TRUE(RunOrigin({"python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", origin_dir_,
                           std::to_string(port_)},
                          [&] { return RunProcess({"curl", "-s", "-m", "1", url}).out == "hello from the origin\n"; }))
        << "the HTTP origin did not come up";
    RestartPinnedTo(names);
  }

  std::string Curl(const std::string& id, std::vector<std::string> args) {
    args.insert(args.begin(), {"curl", "-s", "-m", "5"});
    return Exec(id, args)["stdout"];
  }

  // An HTTPS origin (openssl s_server, a self-signed certificate for `name`) on a free loopback port; the daemon is
  // restarted with `name` pinned to it. The certificate (its own CA) is returned as PEM.
  std::string StartTlsOriginAndPin(const std::string& name) {
    PrepareOrigin();
    ProcResult gen = RunProcess({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                                 "-nodes", "-days", "1", "-subj", "/CN=" + name, "-addext", "subjectAltName=DNS:" + name,
                                 "-keyout", origin_dir_ + "/key.pem", "-out", origin_dir_ + "/cert.pem"});
    EXPECT_EQ(gen.exit_status, 0) << gen.Describe();
    std::string probe = "https://" + name + ":" + std::to_string(port_) + "/";
    std::string resolve = name + ":" + std::to_string(port_) + ":127.0.0.1";
    bool up = RunOrigin({"openssl", "s_server", "-quiet", "-accept", "127.0.0.1:" + std::to_string(port_), "-cert",
                         origin_dir_ + "/cert.pem", "-key", origin_dir_ + "/key.pem", "-www"},
                        [&] {
                          return RunProcess({"curl", "-s", "-m", "1", "-o", "/dev/null", "-w", "%{http_code}",
                                             "--cacert", origin_dir_ + "/cert.pem", "--resolve", resolve, probe})
                                     .out == "200";
                        });
    EXPECT_TRUE(up) << "the TLS origin did not come up";
    RestartPinnedTo({name});
    return ReadFileOrEmpty(origin_dir_ + "/cert.pem");
  }

  pid_t origin_ = 0;
  int port_ = 0;
  std::string origin_dir_;
};

TEST_F(EgressTest, HttpsToAListedNameByConnectAndBySniAndAnUnlistedSniGetsAnAlert) {
  std::string ca = StartTlsOriginAndPin("secure.test");
  ASSERT_FALSE(ca.empty());
  std::string id = CreateSandbox({{"egress", {"secure.test"}}});
  ASSERT_FALSE(id.empty());
  MustTool("sandbox_file_write", {{"sandbox", id}, {"path", "/tmp/ca.pem"}, {"content", ca}});
  std::string proxy = MustTool("sandbox_get", {{"sandbox", id}})["spec"]["environment"]["HTTPS_PROXY"];
  std::string host_end = proxy.substr(7, proxy.rfind(':') - 7);
  // Through HTTPS_PROXY: CONNECT secure.test:443, then TLS end to end (the origin's certificate, verified inside).
  EXPECT_EQ(Curl(id, {"--cacert", "/tmp/ca.pem", "-o", "/dev/null", "-w", "%{http_code}", "https://secure.test/"}), "200");
  // Without it: the ClientHello's SNI names secure.test; the bytes pass through untouched.
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "--cacert", "/tmp/ca.pem", "-o", "/dev/null", "-w", "%{http_code}",
                      "https://secure.test/"}), "200");
  // An SNI that is not listed: a TLS alert (curl: SSL connect error), and CONNECT to it a 403.
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "--resolve", "other.test:443:" + host_end, "-o", "/dev/null", "-w",
                      "%{exitcode}", "https://other.test/"}), "35");
  EXPECT_EQ(Curl(id, {"-o", "/dev/null", "-w", "%{http_connect}", "https://other.test/"}), "403");
}

TEST_F(EgressTest, AListedSandboxReachesItsNamesAndNothingElse) {
  StartOriginAndPin({"allowed.test", "unlisted.test"});
  std::string id = CreateSandbox({{"egress", {"allowed.test:80"}}});
  ASSERT_FALSE(id.empty());
  json info = MustTool("sandbox_get", {{"sandbox", id}});
  EXPECT_EQ(info["spec"]["egress"], json::array({"allowed.test:80"}));
  std::string proxy = info["spec"]["environment"]["HTTP_PROXY"];
  ASSERT_EQ(proxy.rfind("http://198.19.", 0), 0u) << proxy;
  std::string host_end = proxy.substr(7, proxy.rfind(':') - 7);

  // Through HTTP_PROXY (curl reads it from the environment isb sets) and without it (DNS answers with the proxy's
  // address, the host-side rules bring port 80 to the proxy).
  EXPECT_EQ(Curl(id, {"http://allowed.test/"}), "hello from the origin\n");
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "http://allowed.test/"}), "hello from the origin\n");
  json dns = Exec(id, {"getent", "hosts", "allowed.test"});
  // getent prints the address in a column of 15.
  EXPECT_EQ(dns["stdout"], host_end + std::string(15 - host_end.size(), ' ') + " allowed.test\n") << dns.dump();

  // A name not listed: no address, and a 403 from the proxy that says why.
  EXPECT_EQ(Exec(id, {"getent", "hosts", "unlisted.test"})["exit_code"], 2);
  EXPECT_EQ(Curl(id, {"-o", "/dev/null", "-w", "%{http_code}", "http://unlisted.test/"}), "403");
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "-w", " %{http_code}", "--resolve", "unlisted.test:80:" + host_end,
                      "http://unlisted.test/"}).substr(0, 5), "isb: ");
  // Other ports, the host's own services, address literals: refused at once (curl: could not connect).
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "-o", "/dev/null", "-w", "%{exitcode}", "http://allowed.test:8080/"}), "7");
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "-o", "/dev/null", "-w", "%{exitcode}",
                      "http://" + host_end + ":" + std::to_string(port_) + "/"}), "7");
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "-o", "/dev/null", "-w", "%{exitcode}", "http://192.0.2.1/"}), "7");

  // A live change: unlisted.test becomes the listed one.
  json changed = MustTool("sandbox_egress_set", {{"sandbox", id}, {"egress", {"unlisted.test:80"}}});
  EXPECT_EQ(changed["spec"]["egress"], json::array({"unlisted.test:80"}));
  EXPECT_EQ(Curl(id, {"http://unlisted.test/"}), "hello from the origin\n");
  EXPECT_EQ(Curl(id, {"-o", "/dev/null", "-w", "%{http_code}", "http://allowed.test/"}), "403");

  // A sandbox with egress none has loopback only.
  std::string none = CreateSandbox();
  EXPECT_EQ(Exec(none, {"getent", "hosts", "allowed.test"})["exit_code"], 2);
  EXPECT_EQ(Curl(none, {"-o", "/dev/null", "-w", "%{exitcode}", "http://" + host_end + "/"}), "7");
}

TEST_F(EgressTest, BadEgressIsRefusedNamingTheEntry) {
  HttpResponse ip = Tool("sandbox_create", {{"egress", {"10.0.0.1"}}});
  EXPECT_EQ(ip.status, 400) << ip.Describe();
  EXPECT_EQ(ip.j["error"], "invalid_argument") << ip.Describe();
  HttpResponse wide = Tool("sandbox_create", {{"egress", {"*.com"}}});
  EXPECT_EQ(wide.status, 400) << wide.Describe();
  std::string id = CreateSandbox();
  HttpResponse from_none = Tool("sandbox_egress_set", {{"sandbox", id}, {"egress", {"allowed.test"}}});
  EXPECT_EQ(from_none.status, 400) << from_none.Describe();
  EXPECT_EQ(from_none.j["message"], "egress: the sandbox was created with egress none; it has no network to change");
}

// What a listed sandbox cannot do, tried with python from inside: UDP anywhere but DNS, IPv6, another sandbox.
TEST_F(EgressTest, NoUdpNoIpv6AndNoOtherSandbox) {
  StartOriginAndPin({"allowed.test"});
  std::string a = CreateSandbox({{"egress", {"allowed.test:80"}}});
  std::string b = CreateSandbox({{"egress", {"allowed.test:80"}}});
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  auto host_end = [&](const std::string& id) {
    std::string proxy = MustTool("sandbox_get", {{"sandbox", id}})["spec"]["environment"]["HTTP_PROXY"];
    return proxy.substr(7, proxy.rfind(':') - 7);
  };
  const std::string a_host = host_end(a), b_host = host_end(b);
  // b's own address is its host end + 1.
  const std::string b_addr = b_host.substr(0, b_host.rfind('.') + 1) + std::to_string(std::stoi(b_host.substr(b_host.rfind('.') + 1)) + 1);

  // UDP to the host end on a port other than 53 never arrives: a test socket on the host listens for it.
  int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(udp, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_port = 0;
  ASSERT_EQ(::bind(udp, reinterpret_cast<sockaddr*>(&any), sizeof any), 0);
  socklen_t len = sizeof any;
  ::getsockname(udp, reinterpret_cast<sockaddr*>(&any), &len);
  const std::string udp_port = std::to_string(ntohs(any.sin_port));
  json sent = Exec(a, {"python3", "-c",
                       "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                       "print(s.sendto(b'leak', ('" + a_host + "', " + udp_port + ")))"});
  EXPECT_EQ(sent["stdout"], "4\n") << sent.dump();  // sent from inside, then dropped on the host side
  pollfd p{udp, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 500), 0) << "a UDP datagram from a listed sandbox reached the host";
  ::close(udp);

  // IPv6 is off inside.
  EXPECT_EQ(Exec(a, {"cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6"})["stdout"], "1\n");
  json v6 = Exec(a, {"python3", "-c",
                     "import socket, errno\ns = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)\n"
                     "try:\n s.connect(('2001:4860:4860::8888', 443))\nexcept OSError as e:\n print(errno.errorcode[e.errno])"});
  // With IPv6 disabled the sandbox has no address to send from.
  EXPECT_EQ(v6["stdout"], "EADDRNOTAVAIL\n") << v6.dump();

  // Another sandbox, its address or its host end: unreachable or refused at once.
  std::string probe = "import socket, errno\ns = socket.socket()\ns.settimeout(5)\n"
                      "try:\n s.connect(('%s', 80))\n print('connected')\nexcept OSError as e:\n print(errno.errorcode[e.errno])";
  auto connect_from_a = [&](const std::string& addr) {
    std::string code = probe;
    code.replace(code.find("%s"), 2, addr);
    return Exec(a, {"python3", "-c", code})["stdout"].get<std::string>();
  };
  EXPECT_EQ(connect_from_a(b_addr), "ENETUNREACH\n");
  EXPECT_EQ(connect_from_a(b_host), "ENETUNREACH\n");
  // Its own host end on the listed port is the proxy: that one connects.
  EXPECT_EQ(connect_from_a(a_host), "connected\n");
}

}  // namespace
}  // namespace isb::e2e
