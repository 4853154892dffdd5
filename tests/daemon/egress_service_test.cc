// The daemon's egress end to end, short of a sandbox: a network namespace of the test's own plays the host (rules,
// proxy, DNS, an origin server), a process in another plays the sandbox, and real curl and dig run inside it.
#include "daemon/egress_service.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "base/file.h"
#include "must_work.h"
#include "net/netlink.h"

extern char** environ;

namespace isb::daemon {
namespace {

// Spawns argv from the calling thread (so in its network namespace); returns the pid.
pid_t Spawn(const std::vector<std::string>& argv, int out_fd = -1) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (out_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
  } else {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  }
  std::vector<char*> args;
  std::vector<std::string> copy = argv;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

// Runs argv in the network namespace at `netns_path`, returns its output.
std::string RunIn(const std::string& netns_path, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"nsenter", "--net=" + netns_path});
  Pipe p = std::move(MakePipe().value());
  pid_t pid = Spawn(argv, p.write.get());
  p.write.Reset();
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(p.read.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
}

class EgressServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ISB_REQUIRE_ROOT();
    // The host: a namespace of our own, entered by a thread that runs the whole test body.
    std::thread([&] {
      if (::unshare(CLONE_NEWNET) == 0) host_ = Fd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    }).join();
    ASSERT_TRUE(host_.valid());
  }

  void InHost(const std::function<void()>& body) {
    Status s = net::InNetns(host_.get(), [&]() -> Status {
      body();
      return {};
    });
    ASSERT_TRUE(s.ok()) << s.error().message;
  }

  Fd host_;
};

TEST_F(EgressServiceTest, AListedSandboxReachesItsNamesThroughTheProxyAndNothingElse) {
  InHost([&] {
    ASSERT_TRUE(net::Netlink::Open()->SetUp(*net::Netlink::Open()->IfIndex("lo")).ok());
    // The origin: python's HTTP server on the host's loopback, reached through a pin (it is not a public address).
    char dir[] = "/tmp/isb-origin-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    ASSERT_TRUE(WriteFile(std::string(dir) + "/index.html", "hello from the origin\n").ok());
    pid_t origin = Spawn({"python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", dir, "18080"});
    ASSERT_GT(origin, 0);
    EgressOptions o;
    o.subnet = "10.250.0.0/24";
    o.pins = {*egress::ParsePin("allowed.test=127.0.0.1:18080"), *egress::ParsePin("other.test=127.0.0.1:18080")};
    Result<std::unique_ptr<EgressService>> svc = EgressService::Start(o);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    EgressService& egress = **svc;

    // The sandbox: a process in a namespace of its own.
    pid_t sandbox = Spawn({"unshare", "--net", "sleep", "600"});
    ASSERT_GT(sandbox, 0);
    std::string ns = "/proc/" + std::to_string(sandbox) + "/ns/net";
    // Until unshare has made the namespace and become sleep.
    for (int i = 0; i < 100; ++i) {
      Result<std::string> comm = ReadFile("/proc/" + std::to_string(sandbox) + "/comm");
      if (comm.ok() && *comm == "sleep\n") break;
      ::usleep(10000);
    }
    Result<egress::EgressSpec> spec = ParseSandboxEgress(nlohmann::json::array({"allowed.test:80"}));
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    Result<SandboxNet> net = egress.Prepare("sb-1", *spec);
    ASSERT_TRUE(net.ok()) << net.error().message;
    EXPECT_EQ(net->host_address, "10.250.0.1");
    EXPECT_EQ(net->resolv_conf, "nameserver 10.250.0.1\n");
    EXPECT_EQ(net->env[0], "HTTP_PROXY=http://10.250.0.1:3128");
    ASSERT_TRUE(egress.Attach("sb-1", sandbox).ok());
    // Until the origin answers (on the host's loopback).
    for (int i = 0; i < 100 && RunIn("/proc/thread-self/ns/net", {"curl", "-s", "-m", "1", "http://127.0.0.1:18080/"}).empty(); ++i)
      ::usleep(50000);

    // DNS: listed names resolve to the proxy, others do not exist.
    EXPECT_EQ(RunIn(ns, {"dig", "@10.250.0.1", "+short", "+time=2", "+tries=1", "allowed.test"}), "10.250.0.1\n");
    std::string other = RunIn(ns, {"dig", "@10.250.0.1", "+time=2", "+tries=1", "other.test"});
    EXPECT_NE(other.find("status: NXDOMAIN"), std::string::npos) << other;
    // HTTP to the listed name, as a client that resolved it through the responder would send it.
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "--resolve", "allowed.test:80:10.250.0.1", "http://allowed.test/"}),
              "hello from the origin\n");
    // The same through the explicit proxy (HTTP_PROXY), absolute-form.
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "-x", "http://10.250.0.1:3128", "http://allowed.test/"}),
              "hello from the origin\n");
    // An unlisted name that the proxy could reach (it is pinned) is refused with the reason.
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "-w", " %{http_code}", "--resolve", "other.test:80:10.250.0.1",
                         "http://other.test/"}).substr(0, 4), "isb:");
    std::string refused = RunIn(ns, {"curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", "-x",
                                     "http://10.250.0.1:3128", "http://other.test/"});
    EXPECT_EQ(refused, "403");
    // Not listed ports and the host's own services: refused at once.
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{exitcode}", "http://10.250.0.1:18080/"}), "7");
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{exitcode}",
                         "http://10.250.0.1:" + std::to_string(egress.proxy_port()) + "/"}), "7");

    // A live change: other.test is listed now, allowed.test no longer.
    ASSERT_TRUE(egress.Update("sb-1", *ParseSandboxEgress(nlohmann::json::array({"other.test:80"}))).ok());
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "--resolve", "other.test:80:10.250.0.1", "http://other.test/"}),
              "hello from the origin\n");
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", "--resolve",
                         "allowed.test:80:10.250.0.1", "http://allowed.test/"}), "403");

    egress.Release("sb-1");
    EXPECT_EQ(net::Netlink::Open()->IfIndex("isb0").error().code, Code::kNotFound);
    ::kill(sandbox, SIGKILL);
    ::waitpid(sandbox, nullptr, 0);
    ::kill(origin, SIGKILL);
    ::waitpid(origin, nullptr, 0);
    std::filesystem::remove_all(dir);
    svc->reset();
    // With no sandbox left, the daemon's table is gone too.
    EXPECT_EQ(RunIn("/proc/thread-self/ns/net", {"nft", "list", "tables"}), "");
  });
}

}  // namespace
}  // namespace isb::daemon
