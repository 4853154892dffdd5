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
#include "egress/fake_chat_server.h"
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
    ::signal(SIGPIPE, SIG_IGN);  // a process running the proxy must (proxy.h)
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

  // The origin: python's HTTP server on the host's loopback port 18080, reached through pins (it is not a public
  // address). Call from InHost.
  void StartOrigin() {
    ASSERT_TRUE(net::Netlink::Open()->SetUp(*net::Netlink::Open()->IfIndex("lo")).ok());
    char dir[] = "/tmp/isb-origin-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    origin_dir_ = dir;
    ASSERT_TRUE(WriteFile(origin_dir_ + "/index.html", "hello from the origin\n").ok());
    // HTTP/1.1 with keep-alive: later requests on one connection reach the proxy's per-request checks.
    origin_ = Spawn({"python3", "-c",
                     "import functools, http.server as h\n"
                     "h.SimpleHTTPRequestHandler.protocol_version = 'HTTP/1.1'\n"
                     "handler = functools.partial(h.SimpleHTTPRequestHandler, directory='" + origin_dir_ + "')\n"
                     "h.ThreadingHTTPServer(('127.0.0.1', 18080), handler).serve_forever()\n"});
    ASSERT_GT(origin_, 0);
  }

  // Until the origin answers (on the host's loopback).
  void AwaitOrigin() {
    for (int i = 0; i < 100 && RunIn("/proc/thread-self/ns/net", {"curl", "-s", "-m", "1", "http://127.0.0.1:18080/"}).empty(); ++i)
      ::usleep(50000);
  }

  // The sandbox: a process in a network namespace of its own; returns the path of that namespace.
  std::string StartSandbox() {
    sandbox_ = Spawn({"unshare", "--net", "sleep", "600"});
    EXPECT_GT(sandbox_, 0);
    // Until unshare has made the namespace and become sleep.
    for (int i = 0; i < 100; ++i) {
      Result<std::string> comm = ReadFile("/proc/" + std::to_string(sandbox_) + "/comm");
      if (comm.ok() && *comm == "sleep\n") break;
      ::usleep(10000);
    }
    return "/proc/" + std::to_string(sandbox_) + "/ns/net";
  }

  void StopAll() {
    for (pid_t* pid : {&sandbox_, &origin_}) {
      if (*pid <= 0) continue;
      ::kill(*pid, SIGKILL);
      ::waitpid(*pid, nullptr, 0);
      *pid = -1;
    }
    if (!origin_dir_.empty()) std::filesystem::remove_all(origin_dir_);
    origin_dir_.clear();
  }

  void TearDown() override { StopAll(); }

  Fd host_;
  pid_t origin_ = -1, sandbox_ = -1;
  std::string origin_dir_;
};

TEST_F(EgressServiceTest, AListedSandboxReachesItsNamesThroughTheProxyAndNothingElse) {
  InHost([&] {
    StartOrigin();
    EgressOptions o;
    o.subnet = "10.250.0.0/24";
    o.pins = {*egress::ParsePin("allowed.test=127.0.0.1:18080"), *egress::ParsePin("other.test=127.0.0.1:18080")};
    Result<std::unique_ptr<EgressService>> svc = EgressService::Start(o);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    EgressService& egress = **svc;

    std::string ns = StartSandbox();
    Result<egress::EgressSpec> spec = ParseSandboxEgress(nlohmann::json::array({"allowed.test:80"}));
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    Result<SandboxNet> net = egress.Prepare("sb-1", *spec, "default");
    ASSERT_TRUE(net.ok()) << net.error().message;
    EXPECT_EQ(net->host_address, "10.250.0.1");
    EXPECT_EQ(net->resolv_conf, "nameserver 10.250.0.1\n");
    EXPECT_EQ(net->env[0], "HTTP_PROXY=http://10.250.0.1:3128");
    ASSERT_TRUE(egress.Attach("sb-1", sandbox_).ok());
    AwaitOrigin();

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
    EXPECT_EQ(net::Netlink::Open()->IfIndex("isb-0").error().code, Code::kNotFound);
    StopAll();
    svc->reset();
    // With no sandbox left, the daemon's table is gone too.
    EXPECT_EQ(RunIn("/proc/thread-self/ns/net", {"nft", "list", "tables"}), "");
  });
}

// An attach that fails (here: the sandbox's process is already gone) is undone, but the sandbox keeps its address:
// it is stopped, a later start attaches it again, and no other sandbox is handed its slot meanwhile.
TEST_F(EgressServiceTest, AFailedAttachKeepsTheSandboxsAddressForItsNextStart) {
  InHost([&] {
    EgressOptions o;
    o.subnet = "10.250.0.0/24";
    Result<std::unique_ptr<EgressService>> svc = EgressService::Start(o);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    EgressService& egress = **svc;
    egress::EgressSpec spec = *ParseSandboxEgress(nlohmann::json::array({"allowed.test:80"}));
    ASSERT_TRUE(egress.Prepare("sb-1", spec, "default").ok());
    pid_t gone = Spawn({"true"});
    ASSERT_GT(gone, 0);
    ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
    Status first = egress.Attach("sb-1", gone);
    EXPECT_FALSE(first.ok());
    // Another sandbox prepared meanwhile gets another address.
    Result<SandboxNet> other = egress.Prepare("sb-2", spec, "default");
    ASSERT_TRUE(other.ok()) << other.error().message;
    EXPECT_EQ(other->host_address, "10.250.0.5");
    egress.Release("sb-2");
    StartSandbox();
    Status again = egress.Attach("sb-1", sandbox_);
    EXPECT_TRUE(again.ok()) << again.error().message;
    EXPECT_TRUE(net::Netlink::Open()->IfIndex("isb-0").ok());
    egress.Release("sb-1");
    EXPECT_EQ(net::Netlink::Open()->IfIndex("isb-0").error().code, Code::kNotFound);
    StopAll();
  });
}

// Names under `judge`: plain HTTP requests are judged with their method and path by a fake chat-completions server
// on the host's loopback (reached through a pin, as any judge is dialled); without a judge they are refused.
TEST_F(EgressServiceTest, JudgedNamesAreDecidedPerRequestByTheJudge) {
  InHost([&] {
    StartOrigin();
    char dir[] = "/tmp/isb-judge-key-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    std::string key_dir = dir;
    ASSERT_TRUE(WriteFile(key_dir + "/key", "sk-egress-service-test\n", 0600).ok());
    testing::FakeChatServer judge_server([](const testing::ChatRequest& r) {
      auto body = nlohmann::json::parse(r.body);
      auto asked = nlohmann::json::parse(body["messages"][1]["content"].get<std::string>());
      // The sandbox's org is in the question (acme's, below): a question without it is denied.
      bool front = asked["org"] == "acme" && asked["host"] == "judged.test" && asked["method"] == "GET" &&
                   asked["path"] == "/";
      return testing::ChatCompletion(nlohmann::json({{"verdict", front ? "allow" : "deny"},
                                                     {"reason", front ? "the front page" : "not the front page"}})
                                         .dump());
    });
    EgressOptions o;
    o.subnet = "10.250.0.0/24";
    o.pins = {*egress::ParsePin("judged.test=127.0.0.1:18080"),
              *egress::ParsePin("judge.test=127.0.0.1:" + std::to_string(judge_server.port()))};
    o.judge.url = "http://judge.test/v1/chat/completions";
    o.judge.model = "m";
    o.judge.key_file = key_dir + "/key";
    Result<std::unique_ptr<EgressService>> svc = EgressService::Start(o);
    ASSERT_TRUE(svc.ok()) << svc.error().message;

    std::string ns = StartSandbox();
    auto spec = ParseSandboxEgress(nlohmann::json({{"allow", nlohmann::json::array()}, {"judge", {"judged.test:80"}}}));
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    ASSERT_TRUE((*svc)->Prepare("sb-1", *spec, "acme").ok());
    ASSERT_TRUE((*svc)->Attach("sb-1", sandbox_).ok());
    AwaitOrigin();
    std::vector<std::string> curl = {"curl", "-s", "-m", "10", "-w", " %{http_code}", "--resolve",
                                     "judged.test:80:10.250.0.1"};
    auto get = [&](const std::string& url) {
      std::vector<std::string> argv = curl;
      argv.push_back(url);
      return RunIn(ns, argv);
    };
    EXPECT_EQ(get("http://judged.test/"), "hello from the origin\n 200");
    EXPECT_EQ(get("http://judged.test/secret"), "isb: judge denied: not the front page\n 403");
    EXPECT_EQ(get("http://judged.test/"), "hello from the origin\n 200");
    // Two requests on one kept-alive connection: the second is judged too, refused, and the connection ends.
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "10", "-w", " %{http_code} %{num_connects}\n", "--resolve",
                         "judged.test:80:10.250.0.1", "http://judged.test/", "http://judged.test/secret"}),
              "hello from the origin\n 200 1\nisb: judge denied: not the front page\n 403 0\n");
    EXPECT_EQ(judge_server.request_count(), 2u) << "the later questions came from the cache";
    (*svc)->Release("sb-1");
    svc->reset();

    // The same sandbox under a daemon without a judge.
    o.judge = {};
    svc = EgressService::Start(o);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    ASSERT_TRUE((*svc)->Prepare("sb-1", *spec, "default").ok());
    ASSERT_TRUE((*svc)->Attach("sb-1", sandbox_).ok());
    EXPECT_EQ(get("http://judged.test/"),
              "isb: judged.test:80 is for the judge to decide (judged.test:80); no judge configured "
              "(isb serve --judge-url)\n 403");
    (*svc)->Release("sb-1");
    StopAll();
    svc->reset();
    std::filesystem::remove_all(key_dir);
  });
}

// A change of list the rules could not follow (here nft, looked up in PATH, is not there) is refused, and the old
// list stays in full force: neither the DNS responder nor the proxy takes the new one.
TEST_F(EgressServiceTest, AChangeTheRulesCouldNotFollowLeavesTheOldListInForce) {
  InHost([&] {
    EgressOptions o;
    o.subnet = "10.250.0.0/24";
    Result<std::unique_ptr<EgressService>> svc = EgressService::Start(o);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    EgressService& egress = **svc;
    std::string ns = StartSandbox();
    egress::EgressSpec a = *ParseSandboxEgress(nlohmann::json::array({"a.example.com:80"}));
    ASSERT_TRUE(egress.Prepare("sb-1", a, "default").ok());
    ASSERT_TRUE(egress.Attach("sb-1", sandbox_).ok());

    char dir[] = "/tmp/isb-no-nft-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    const std::string path = ::getenv("PATH");
    ASSERT_EQ(::setenv("PATH", dir, 1), 0);
    Status changed =
        egress.Update("sb-1", *ParseSandboxEgress(nlohmann::json::array({"a.example.com:80", "b.example.com:80"})));
    ASSERT_EQ(::setenv("PATH", path.c_str(), 1), 0);
    ::rmdir(dir);
    ASSERT_FALSE(changed.ok());
    EXPECT_EQ(changed.error().message, "starting nft (install the nftables package): No such file or directory");

    EXPECT_EQ(RunIn(ns, {"dig", "@10.250.0.1", "+short", "+time=2", "+tries=1", "a.example.com"}), "10.250.0.1\n");
    std::string b = RunIn(ns, {"dig", "@10.250.0.1", "+time=2", "+tries=1", "b.example.com"});
    EXPECT_NE(b.find("status: NXDOMAIN"), std::string::npos) << b;
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", "--resolve",
                         "b.example.com:80:10.250.0.1", "http://b.example.com/"}), "403");
    egress.Release("sb-1");
    StopAll();
  });
}

// A sandbox adopted from an isb that named veths <prefix><slot>: no rule matches that name, so the veth goes (the
// sandbox is cut off rather than left unconfined) and the adoption says why.
TEST_F(EgressServiceTest, AnAdoptedVethOfTheOlderNamingIsRemovedNotLeftUnconfined) {
  InHost([&] {
    EgressOptions o;
    o.subnet = "10.250.0.0/24";
    Result<std::unique_ptr<EgressService>> svc = EgressService::Start(o);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    EgressService& egress = **svc;
    std::string ns_path = StartSandbox();
    Fd ns(::open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(ns.valid());
    ASSERT_TRUE(net::Netlink::Open()->CreateVeth("isb2", "eth0", ns.get()).ok());
    Status adopted = egress.Adopt("sb-1", 2, *ParseSandboxEgress(nlohmann::json::array({"a.example.com"})), "default");
    ASSERT_FALSE(adopted.ok());
    EXPECT_EQ(adopted.error().message,
              "its veth isb2 was named by an older isb and matched no rule: removed, the sandbox has no network until "
              "it is restarted");
    EXPECT_EQ(net::Netlink::Open()->IfIndex("isb2").error().code, Code::kNotFound);
    egress.Release("sb-1");
    StopAll();
  });
}

}  // namespace
}  // namespace isb::daemon
