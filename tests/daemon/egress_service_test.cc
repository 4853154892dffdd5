// The daemon's egress end to end, short of a sandbox: a network namespace of the test's own plays the host (rules,
// proxy, DNS, an origin server), a process in another plays the sandbox, and real curl and dig run inside it.
#include "daemon/egress_service.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <net/if.h>

#include "base/file.h"
#include "base/program.h"
#include "daemon/process_netns.h"
#include "egress/fake_chat_server.h"
#include "must_work.h"
#include "net/firewall.h"
#include "net/netlink.h"
#include "net/netns.h"

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

// What the file at `path` holds, or why it could not be read.
std::string Contents(const std::string& path) {
  Result<std::string> text = ReadFile(path);
  return text.ok() ? *text : text.error().message;
}

// Gives the calling thread a mount namespace of its own in which /proc/sys is a read-only bind of itself, as
// systemd's ProtectKernelTunables=yes leaves it; both go with the thread. "" or what failed.
std::string MakeSysctlsReadOnly() {
  auto failed = [](const char* what) { return std::string(what) + ": " + std::strerror(errno); };
  if (::unshare(CLONE_NEWNS) != 0) return failed("unshare");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return failed("making / private");
  if (::mount("/proc/sys", "/proc/sys", nullptr, MS_BIND | MS_REC, nullptr) != 0) return failed("bind /proc/sys");
  if (::mount(nullptr, "/proc/sys", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0)
    return failed("remount /proc/sys read-only");
  return "";
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
    char dir[] = "/tmp/isb-egress-state-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    state_dir_ = dir;
    char claims[] = "/tmp/isb-egress-claims-XXXXXX";
    ASSERT_NE(::mkdtemp(claims), nullptr);
    claim_dir_ = claims;
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
                     "handler = functools.partial(h.SimpleHTTPRequestHandler, directory='" +
                         origin_dir_ +
                         "')\n"
                         "h.ThreadingHTTPServer(('127.0.0.1', 18080), handler).serve_forever()\n"});
    ASSERT_GT(origin_, 0);
  }

  // Until the origin answers (on the host's loopback).
  void AwaitOrigin() {
    for (int i = 0;
         i < 100 && RunIn("/proc/thread-self/ns/net", {"curl", "-s", "-m", "1", "http://127.0.0.1:18080/"}).empty();
         ++i)
      ::usleep(50000);
  }

  // The sandbox: a process in a network namespace of its own; returns the path of that namespace.
  // The service on 10.250.0.0/24, recording in `state_dir` when one is given.
  static Result<std::unique_ptr<EgressService>> StartOn(const std::string& state_dir = "",
                                                        int watch_interval_ms = 2000) {
    EgressOptions o;
    o.claim_dir = claim_dir_;
    o.subnet = "10.250.0.0/24";
    o.state_dir = state_dir;
    o.watch_interval_ms = watch_interval_ms;
    return EgressService::Start(o);
  }

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

  // Options of a service that looks at its network every 100 ms and tells `told` (guarded by `mu`) of each event as
  // "id org reason".
  EgressOptions Watched(std::mutex& mu, std::vector<std::string>& told) const {
    EgressOptions o;
    o.claim_dir = claim_dir_;
    o.subnet = "10.250.0.0/24";
    o.watch_interval_ms = 100;
    o.on_network_event = [&mu, &told](const std::string& id, const std::string& org, const std::string& reason) {
      std::lock_guard lock(mu);
      told.push_back(id + " " + org + " " + reason);
    };
    return o;
  }

  // What `told` (guarded by `mu`) holds once something is told, waiting at most 5 s.
  static std::vector<std::string> Told(std::mutex& mu, const std::vector<std::string>& told) {
    for (int i = 0; i < 100; ++i) {
      {
        std::lock_guard lock(mu);
        if (!told.empty()) return told;
      }
      ::usleep(50000);
    }
    std::lock_guard lock(mu);
    return told;
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

  void TearDown() override {
    StopAll();
    if (!claim_dir_.empty()) std::filesystem::remove_all(claim_dir_);
    if (state_dir_.empty()) return;
    std::filesystem::remove_all(state_dir_);
    EXPECT_FALSE(std::filesystem::exists(state_dir_));
  }

  // The host's IPv4 forwarding (net.ipv4.ip_forward), "0\n" or "1\n". Call from InHost.
  static std::string Forwarding() { return Contents("/proc/sys/net/ipv4/ip_forward"); }
  static void SetForwarding(const char* value) {
    ASSERT_TRUE(WriteKernelFile("/proc/sys/net/ipv4/ip_forward", value).ok());
    ASSERT_EQ(Forwarding(), std::string(value) + "\n");
  }
  static std::string BootId() { return Contents("/proc/sys/kernel/random/boot_id"); }
  std::string Marker() const { return state_dir_ + "/" + kForwardingMarker; }

  // Whether the table's forward chain ends in the drop of forward_only_sandboxes. Call from InHost.
  static bool ForwardsOnlySandboxes() {
    std::string chain = RunIn("/proc/thread-self/ns/net", {"nft", "list", "chain", "inet", "isb", "forward"});
    EXPECT_NE(chain.find("chain forward {"), std::string::npos) << chain;
    return chain.find(" drop\n") != std::string::npos;
  }

  // The network namespace of the sandbox StartSandbox started.
  Fd SandboxNetns() const {
    return Fd(::open(("/proc/" + std::to_string(sandbox_) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
  }

  Fd host_;
  pid_t origin_ = -1, sandbox_ = -1;
  std::string origin_dir_;
  std::string state_dir_;                // the daemon's, for the forwarding marker
  static inline std::string claim_dir_;  // where services claim their table, veths and subnet
};

// Connects from `ns` to the public server at 11.0.0.1:80 (testing::Internet) and returns the source address it saw.
std::string PublicServerSees(const Fd& ns, const Fd& server) {
  Fd c;
  int err = testing::ConnectFrom(ns, testing::Ip("11.0.0.1"), 80, &c);
  if (err != 0) return std::strerror(err);
  sockaddr_in peer{};
  socklen_t len = sizeof peer;
  Fd accepted(::accept4(server.get(), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC));
  if (!accepted.valid()) return "not accepted";
  return net::FormatIpv4(ntohl(peer.sin_addr.s_addr));
}

// A block list lets through every port of a name but those blocked: a name blocked on one port resolves (its other
// ports are open), one blocked on every port does not exist, and the ports hold at the proxy.
TEST_F(EgressServiceTest, ABlockListResolvesANameBlockedOnSomePortsOnly) {
  InHost([&] {
    StartOrigin();
    EgressOptions o;
    o.claim_dir = claim_dir_;
    o.subnet = "10.250.0.0/24";
    o.pins = {*egress::ParsePin("partly.test=127.0.0.1:18080")};
    Result<std::unique_ptr<EgressService>> svc = EgressService::Start(o);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    std::string ns = StartSandbox();
    Result<egress::EgressSpec> spec =
        ParseSandboxEgress(nlohmann::json{{"block", {"partly.test:443", "wholly.test", "*.below.test"}}});
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    ASSERT_TRUE((*svc)->Prepare("sb-1", *spec, "default").ok());
    ASSERT_TRUE((*svc)->Attach("sb-1", testing::ProcessNetns(sandbox_)).ok());
    AwaitOrigin();
    EXPECT_EQ(RunIn(ns, {"dig", "@10.250.0.1", "+short", "+time=2", "+tries=1", "partly.test"}), "10.250.0.1\n");
    for (const char* name : {"wholly.test", "a.below.test"}) {
      std::string gone = RunIn(ns, {"dig", "@10.250.0.1", "+time=2", "+tries=1", name});
      EXPECT_NE(gone.find("status: NXDOMAIN"), std::string::npos) << name << ": " << gone;
    }
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "-x", "http://10.250.0.1:3128", "http://partly.test/"}),
              "hello from the origin\n");
    (*svc)->Release("sb-1");
    StopAll();
  });
}

TEST_F(EgressServiceTest, AListedSandboxReachesItsNamesThroughTheProxyAndNothingElse) {
  InHost([&] {
    StartOrigin();
    EgressOptions o;
    o.claim_dir = claim_dir_;
    o.subnet = "10.250.0.0/24";
    o.pins = {*egress::ParsePin("allowed.test=127.0.0.1:18080"), *egress::ParsePin("other.test=127.0.0.1:18080")};
    Result<std::unique_ptr<EgressService>> svc = EgressService::Start(o);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    EgressService& egress = **svc;

    std::string ns = StartSandbox();
    Result<egress::EgressSpec> spec = ParseSandboxEgress(nlohmann::json::array({"allowed.test:80"}));
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    EXPECT_EQ(egress.NetworkBytes("sb-1"), std::nullopt);
    Result<SandboxNet> net = egress.Prepare("sb-1", *spec, "default");
    ASSERT_TRUE(net.ok()) << net.error().message;
    EXPECT_EQ(egress.NetworkBytes("sb-1"), (egress::TrafficTotals{0, 0})) << "counted from its network's making";
    EXPECT_EQ(net->host_address, "10.250.0.1");
    EXPECT_EQ(net->resolv_conf, "nameserver 10.250.0.1\n");
    EXPECT_EQ(net->env[0], "HTTP_PROXY=http://10.250.0.1:3128");
    ASSERT_TRUE(egress.Attach("sb-1", testing::ProcessNetns(sandbox_)).ok());
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
                         "http://other.test/"})
                  .substr(0, 4),
              "isb:");
    std::string refused = RunIn(ns, {"curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", "-x",
                                     "http://10.250.0.1:3128", "http://other.test/"});
    EXPECT_EQ(refused, "403");
    // Not listed ports and the host's own services: refused at once.
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{exitcode}", "http://10.250.0.1:18080/"}),
              "7");
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{exitcode}",
                         "http://10.250.0.1:" + std::to_string(egress.proxy_port()) + "/"}),
              "7");

    // A live change: other.test is listed now, allowed.test no longer.
    ASSERT_TRUE(egress.Update("sb-1", *ParseSandboxEgress(nlohmann::json::array({"other.test:80"}))).ok());
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "--resolve", "other.test:80:10.250.0.1", "http://other.test/"}),
              "hello from the origin\n");
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", "--resolve",
                         "allowed.test:80:10.250.0.1", "http://allowed.test/"}),
              "403");

    // What the proxy relayed for it: the requests that went through, each way.
    std::optional<egress::TrafficTotals> counted = egress.NetworkBytes("sb-1");
    ASSERT_TRUE(counted.has_value());
    EXPECT_GT(counted->up, 0u);
    EXPECT_GT(counted->down, 3 * std::string("hello from the origin\n").size());

    egress.Release("sb-1");
    EXPECT_EQ(egress.NetworkBytes("sb-1"), std::nullopt) << "a released sandbox's counters are forgotten";
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
    Result<std::unique_ptr<EgressService>> svc = StartOn();
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    EgressService& egress = **svc;
    egress::EgressSpec spec = *ParseSandboxEgress(nlohmann::json::array({"allowed.test:80"}));
    ASSERT_TRUE(egress.Prepare("sb-1", spec, "default").ok());
    pid_t gone = Spawn({"true"});
    ASSERT_GT(gone, 0);
    ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
    Status first = egress.Attach("sb-1", testing::ProcessNetns(gone));
    ASSERT_FALSE(first.ok());
    EXPECT_EQ(first.error().code, Code::kConflict);
    EXPECT_EQ(first.error().message, "the sandbox's network namespace: the sandbox is not running");
    Status unset = egress.Attach("sb-1", nullptr);
    ASSERT_FALSE(unset.ok());
    EXPECT_EQ(unset.error().code, Code::kInvalidArgument);
    EXPECT_EQ(unset.error().message, "attaching sb-1: no way to its network namespace");
    // Another sandbox prepared meanwhile gets another address.
    Result<SandboxNet> other = egress.Prepare("sb-2", spec, "default");
    ASSERT_TRUE(other.ok()) << other.error().message;
    EXPECT_EQ(other->host_address, "10.250.0.5");
    egress.Release("sb-2");
    StartSandbox();
    Status again = egress.Attach("sb-1", testing::ProcessNetns(sandbox_));
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
      bool front =
          asked["org"] == "acme" && asked["host"] == "judged.test" && asked["method"] == "GET" && asked["path"] == "/";
      return testing::ChatCompletion(nlohmann::json({{"verdict", front ? "allow" : "deny"},
                                                     {"reason", front ? "the front page" : "not the front page"}})
                                         .dump());
    });
    EgressOptions o;
    o.claim_dir = claim_dir_;
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
    ASSERT_TRUE((*svc)->Attach("sb-1", testing::ProcessNetns(sandbox_)).ok());
    AwaitOrigin();
    std::vector<std::string> curl = {
        "curl", "-s", "-m", "10", "-w", " %{http_code}", "--resolve", "judged.test:80:10.250.0.1"};
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
    ASSERT_TRUE((*svc)->Attach("sb-1", testing::ProcessNetns(sandbox_)).ok());
    EXPECT_EQ(get("http://judged.test/"),
              "isb: judged.test:80 is for the judge to decide (judged.test:80); no judge configured "
              "(isb serve --judge-url)\n 403");
    (*svc)->Release("sb-1");
    StopAll();
    svc->reset();
    std::filesystem::remove_all(key_dir);
  });
}

// A change of list the rules could not follow is refused, and the old list stays in full force: neither the DNS
// responder nor the proxy takes the new one. Here another program committed to the ruleset, so the change's set
// elements are not made on top of it, and writing the whole table needs nft, looked up in PATH, which is not there.
// (No watch: it would write the table again on its own, in the middle of the test.)
TEST_F(EgressServiceTest, AChangeTheRulesCouldNotFollowLeavesTheOldListInForce) {
  InHost([&] {
    Result<std::unique_ptr<EgressService>> svc = StartOn("", /*watch_interval_ms=*/0);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    EgressService& egress = **svc;
    std::string ns = StartSandbox();
    egress::EgressSpec a = *ParseSandboxEgress(nlohmann::json::array({"a.example.com:80"}));
    ASSERT_TRUE(egress.Prepare("sb-1", a, "default").ok());
    ASSERT_TRUE(egress.Attach("sb-1", testing::ProcessNetns(sandbox_)).ok());

    Result<ProgramExit> other = RunProgram({"nft", "-f", "-"}, "table inet isbtest-other\n");
    ASSERT_TRUE(other.ok() && other->ok());
    char dir[] = "/tmp/isb-no-nft-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    const std::string path = ::getenv("PATH");
    ASSERT_EQ(::setenv("PATH", dir, 1), 0);
    Status changed =
        egress.Update("sb-1", *ParseSandboxEgress(nlohmann::json::array({"a.example.com:80", "b.example.com:8080"})));
    ASSERT_EQ(::setenv("PATH", path.c_str(), 1), 0);
    ::rmdir(dir);
    ASSERT_FALSE(changed.ok());
    EXPECT_EQ(changed.error().message, "starting nft (install the nftables package): No such file or directory");

    EXPECT_EQ(RunIn(ns, {"dig", "@10.250.0.1", "+short", "+time=2", "+tries=1", "a.example.com"}), "10.250.0.1\n");
    std::string b = RunIn(ns, {"dig", "@10.250.0.1", "+time=2", "+tries=1", "b.example.com"});
    EXPECT_NE(b.find("status: NXDOMAIN"), std::string::npos) << b;
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", "--resolve",
                         "b.example.com:80:10.250.0.1", "http://b.example.com/"}),
              "403");
    // Port 8080, the refused change's, was never let through.
    EXPECT_EQ(RunIn(ns, {"curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", "--resolve",
                         "b.example.com:8080:10.250.0.1", "http://b.example.com:8080/"}),
              "000");
    egress.Release("sb-1");
    StopAll();
    EXPECT_TRUE(net::DeleteTable("isbtest-other").ok());
  });
}

// A sandbox adopted from an isb that named veths <prefix><slot>: no rule matches that name, so the veth goes (the
// sandbox is cut off rather than left unconfined) and the adoption says why.
TEST_F(EgressServiceTest, AnAdoptedVethOfTheOlderNamingIsRemovedNotLeftUnconfined) {
  InHost([&] {
    Result<std::unique_ptr<EgressService>> svc = StartOn();
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

// An adopted sandbox is counted from 0 by this daemon (sandbox_usage's network bytes of a sandbox the daemon
// adopted), and its counters go when it is released.
TEST_F(EgressServiceTest, AnAdoptedSandboxsNetworkBytesAreCountedFromZero) {
  InHost([&] {
    Result<std::unique_ptr<EgressService>> svc = StartOn();
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    EgressService& egress = **svc;
    EXPECT_EQ(egress.NetworkBytes("sb-1"), std::nullopt);
    Status adopted = egress.Adopt("sb-1", 2, *ParseSandboxEgress(nlohmann::json::array({"a.example.com"})), "default");
    ASSERT_TRUE(adopted.ok()) << adopted.error().message;
    EXPECT_EQ(egress.NetworkBytes("sb-1"), (egress::TrafficTotals{0, 0}));
    egress.Release("sb-1");
    EXPECT_EQ(egress.NetworkBytes("sb-1"), std::nullopt);
  });
}

// A default Debian does not forward IPv4, so an open sandbox would reach nothing: attaching one turns forwarding on,
// having recorded first that isb did, and the host then routes sandboxes only (the forward chain ends in a drop), so
// a machine on its LAN that it did not route before is not routed now either. It stays so after the sandbox goes.
TEST_F(EgressServiceTest, AnOpenSandboxTurnsForwardingOnForSandboxesOnlyWhereItWasOff) {
  Fd internet = testing::Internet(host_);
  Fd lan = testing::LanMachine(host_);
  Fd server = testing::ListenIn(internet, INADDR_ANY, 80);
  InHost([&] {
    SetForwarding("0");
    Result<std::unique_ptr<EgressService>> svc = StartOn(state_dir_);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    EXPECT_FALSE(ForwardsOnlySandboxes());
    StartSandbox();
    ASSERT_TRUE((*svc)->Prepare("sb-1", *ParseSandboxEgress("open"), "default").ok());
    Status attached = (*svc)->Attach("sb-1", testing::ProcessNetns(sandbox_));
    ASSERT_TRUE(attached.ok()) << attached.error().message;

    EXPECT_EQ(Forwarding(), "1\n");
    EXPECT_EQ(Contents(Marker()), BootId());
    EXPECT_TRUE(ForwardsOnlySandboxes());
    EXPECT_EQ(PublicServerSees(SandboxNetns(), server), "11.0.0.254") << "masqueraded to the host's address";
    EXPECT_EQ(testing::ConnectFrom(lan, testing::Ip("11.0.0.1"), 80), ETIMEDOUT);

    (*svc)->Release("sb-1");
    StopAll();
    svc->reset();
    // Forwarding stays on, and the table with its drop.
    EXPECT_EQ(Forwarding(), "1\n");
    EXPECT_TRUE(ForwardsOnlySandboxes());
    EXPECT_EQ(testing::ConnectFrom(lan, testing::Ip("11.0.0.1"), 80), ETIMEDOUT);
  });
}

// An open sandbox resolves names through the responder at its host end, which relays each query to the host's
// resolver (here one on the host's loopback, which the sandbox itself may not reach) and the answer back.
TEST_F(EgressServiceTest, AnOpenSandboxResolvesNamesThroughTheHostsResolver) {
  InHost([&] {
    ASSERT_TRUE(net::Netlink::Open()->SetUp(*net::Netlink::Open()->IfIndex("lo")).ok());
    // The host's resolver: every A query answered 192.0.2.7 (its answer follows the question: queries without EDNS).
    // As the origin: StopAll ends it, whatever the test's outcome.
    origin_ = Spawn({"python3", "-c",
                     "import socket\n"
                     "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                     "s.bind(('127.0.0.1', 5300))\n"
                     "while True:\n"
                     "    q, a = s.recvfrom(512)\n"
                     "    r = bytearray(q); r[2] |= 0x80; r[7] = 1\n"
                     "    r += bytes([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 7])\n"
                     "    s.sendto(bytes(r), a)\n"});
    ASSERT_GT(origin_, 0);
    EgressOptions o;
    o.claim_dir = claim_dir_;
    o.subnet = "10.250.0.0/24";
    o.state_dir = state_dir_;
    o.dns_upstreams = {*net::ParseDnsUpstream("127.0.0.1:5300")};
    Result<std::unique_ptr<EgressService>> svc = EgressService::Start(o);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    std::string ns = StartSandbox();
    auto net = (*svc)->Prepare("sb-1", *ParseSandboxEgress("open"), "default");
    ASSERT_TRUE(net.ok()) << net.error().message;
    EXPECT_EQ(net->resolv_conf, "nameserver 10.250.0.1\n");
    Status attached = (*svc)->Attach("sb-1", testing::ProcessNetns(sandbox_));
    ASSERT_TRUE(attached.ok()) << attached.error().message;
    std::string answer;
    for (int i = 0; i < 50 && answer.empty(); ++i) {  // until the python resolver listens
      answer = RunIn(ns, {"dig", "@10.250.0.1", "+short", "+noedns", "+time=1", "+tries=1", "example.test", "A"});
      if (answer.find("192.0.2.7") == std::string::npos) answer.clear(), ::usleep(100000);
    }
    EXPECT_EQ(answer, "192.0.2.7\n");
    // The resolver itself is not the sandbox's to reach.
    EXPECT_EQ(RunIn(ns, {"dig", "@127.0.0.1", "-p", "5300", "+short", "+noedns", "+time=1", "+tries=1", "example.test"})
                  .find("192.0.2.7"),
              std::string::npos);
    (*svc)->Release("sb-1");
    StopAll();
  });
}

// Forwarding that was on before isb touched it (a router, a container host) is someone else's: an open sandbox uses
// it, and the host goes on routing what it routed. A marker of an earlier boot, which turned forwarding off again, no
// longer says it is isb's and goes.
TEST_F(EgressServiceTest, ForwardingThatWasOnIsLeftRoutingEverythingItRouted) {
  Fd internet = testing::Internet(host_);
  Fd lan = testing::LanMachine(host_);
  Fd server = testing::ListenIn(internet, INADDR_ANY, 80);
  InHost([&] {
    SetForwarding("1");
    ASSERT_TRUE(WriteFile(Marker(), "00000000-0000-0000-0000-000000000000\n", 0600).ok());
    Result<std::unique_ptr<EgressService>> svc = StartOn(state_dir_);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    EXPECT_FALSE(std::filesystem::exists(Marker())) << "the marker of an earlier boot is still there";
    StartSandbox();
    ASSERT_TRUE((*svc)->Prepare("sb-1", *ParseSandboxEgress("open"), "default").ok());
    Status attached = (*svc)->Attach("sb-1", testing::ProcessNetns(sandbox_));
    ASSERT_TRUE(attached.ok()) << attached.error().message;

    EXPECT_EQ(Forwarding(), "1\n");
    EXPECT_FALSE(std::filesystem::exists(Marker()));
    EXPECT_FALSE(ForwardsOnlySandboxes());
    EXPECT_EQ(PublicServerSees(SandboxNetns(), server), "11.0.0.254");
    EXPECT_EQ(PublicServerSees(lan, server), "10.30.0.1") << "the host no longer routes its LAN";

    (*svc)->Release("sb-1");
    StopAll();
    svc->reset();
    EXPECT_EQ(RunIn("/proc/thread-self/ns/net", {"nft", "list", "tables"}), "");
  });
}

// Two daemons on one host: the second may not take the table (and veth prefix) or a subnet overlapping the one a
// live first one holds, whatever else differs; the refusal names the holder and the flag. Once the first is gone,
// its claims are free (a crash frees them likewise: they are locks of its process).
TEST_F(EgressServiceTest, ASecondServiceOnATableOrSubnetALiveOneHoldsIsRefused) {
  InHost([&] {
    EgressOptions o;
    o.claim_dir = claim_dir_;
    o.subnet = "10.250.0.0/24";
    o.holder = "pid 1, state dir /var/lib/first";
    Result<std::unique_ptr<EgressService>> first = EgressService::Start(o);
    ASSERT_TRUE(first.ok()) << first.error().message;
    const std::string rules = RunIn("/proc/thread-self/ns/net", {"nft", "list", "table", "inet", "isb"});

    EgressOptions same_table = o;
    same_table.subnet = "10.251.0.0/24";
    same_table.holder = "pid 2";
    Result<std::unique_ptr<EgressService>> second = EgressService::Start(same_table);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().code, Code::kConflict);
    EXPECT_EQ(second.error().message,
              "the nftables table \"isb\" is held by another isb (pid 1, state dir "
              "/var/lib/first) on this host; give this daemon another with --egress-table");

    EgressOptions same_subnet = o;
    same_subnet.table = same_subnet.ifname_prefix = "other";
    same_subnet.subnet = "10.250.0.0/16";  // contains the first's
    second = EgressService::Start(same_subnet);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().code, Code::kConflict);
    EXPECT_EQ(second.error().message,
              "the sandbox subnet 10.250.0.0/16 overlaps 10.250.0.0/24, held by another isb "
              "(pid 1, state dir /var/lib/first) on this host; give this daemon another with "
              "--sandbox-subnet");
    same_subnet.subnet = "10.250.0.0/24";
    EXPECT_EQ(EgressService::Start(same_subnet).error().message,
              "the sandbox subnet 10.250.0.0/24 is held by another isb (pid 1, state dir /var/lib/first) on this "
              "host; give this daemon another with --sandbox-subnet");
    EXPECT_EQ(RunIn("/proc/thread-self/ns/net", {"nft", "list", "table", "inet", "isb"}), rules)
        << "the refused ones changed nothing of the first's";
    EXPECT_EQ(RunIn("/proc/thread-self/ns/net", {"nft", "list", "tables"}), "table inet isb\n");

    // Apart in both, a second runs beside the first; and once the first is gone, its table and subnet are free.
    same_subnet.subnet = "10.251.0.0/24";
    second = EgressService::Start(same_subnet);
    ASSERT_TRUE(second.ok()) << second.error().message;
    first->reset();
    second->reset();
    first = EgressService::Start(o);
    ASSERT_TRUE(first.ok()) << first.error().message;
    first->reset();
    StopAll();
  });
}

// A table deleted or changed under a live service by another program is noticed within seconds, restored, and told
// for each sandbox with a network (the daemon records it in their history).
TEST_F(EgressServiceTest, RulesChangedUnderALiveServiceAreRestoredAndReported) {
  InHost([&] {
    std::mutex mu;
    std::vector<std::string> told;
    Result<std::unique_ptr<EgressService>> svc = EgressService::Start(Watched(mu, told));
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    std::string ns = StartSandbox();
    ASSERT_TRUE((*svc)->Prepare("sb-1", *ParseSandboxEgress(nlohmann::json{"a.test"}), "acme").ok());
    ASSERT_TRUE((*svc)->Attach("sb-1", testing::ProcessNetns(sandbox_)).ok());
    const std::string here = "/proc/thread-self/ns/net";
    auto listing = [&] { return RunIn(here, {"nft", "-s", "list", "table", "inet", "isb"}); };
    const std::string rules = listing();
    ASSERT_NE(rules.find("isb-0"), std::string::npos) << rules;
    auto await_told = [&](size_t n) {
      for (int i = 0; i < 100; ++i) {
        {
          std::lock_guard lock(mu);
          if (told.size() >= n) return;
        }
        ::usleep(50000);
      }
    };
    ::usleep(300000);  // a look of the watch since the attach: the edit below is the only commit the next one finds
    RunIn(here, {"nft", "delete", "table", "inet", "isb"});
    await_told(1);
    EXPECT_EQ(listing(), rules) << "restored";
    RunIn(here, {"nft", "flush", "chain", "inet", "isb", "forward"});
    await_told(2);
    EXPECT_EQ(listing(), rules) << "restored";
    ::usleep(300000);  // told once each
    {
      std::lock_guard lock(mu);
      EXPECT_EQ(told, (std::vector<std::string>{"sb-1 acme rules_deleted", "sb-1 acme rules_changed"}));
    }
    (*svc)->Release("sb-1");
    StopAll();
  });
}

// A sandbox's veth deleted under a live service is put back within seconds (the sandbox's end too, with its
// address), logged and reported for that sandbox; one whose sandbox has died is not (its namespace took it along).
// A pooled sandbox (prepared with no org) is nobody's: its veth deleted under the service is put back, and nothing
// is reported until a create assigns it to an org.
TEST_F(EgressServiceTest, APooledSandboxsNetworkEventsAreNobodysUntilItIsAssigned) {
  InHost([&] {
    std::mutex mu;
    std::vector<std::string> told;
    Result<std::unique_ptr<EgressService>> svc = EgressService::Start(Watched(mu, told));
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    StartSandbox();
    ASSERT_TRUE((*svc)->Prepare("sb-1", *ParseSandboxEgress(nlohmann::json{"pooled.test"}), "").ok());
    ASSERT_TRUE((*svc)->Attach("sb-1", testing::ProcessNetns(sandbox_)).ok());
    ::usleep(300000);  // a look of the watch since the attach: the edit below is the only commit the next one finds
    const std::string here = "/proc/thread-self/ns/net";
    RunIn(here, {"ip", "link", "del", "isb-0"});
    for (int i = 0; i < 100 && ::if_nametoindex("isb-0") == 0; ++i) ::usleep(50000);
    EXPECT_NE(::if_nametoindex("isb-0"), 0u) << "the pooled sandbox's veth was not put back";
    ::usleep(300000);
    {
      std::lock_guard lock(mu);
      EXPECT_EQ(told, std::vector<std::string>{});
    }
    ASSERT_TRUE((*svc)->Assign("sb-1", *ParseSandboxEgress(nlohmann::json{"a.test"}), "acme").ok());
    RunIn(here, {"ip", "link", "del", "isb-0"});
    EXPECT_EQ(Told(mu, told), std::vector<std::string>{"sb-1 acme veth_deleted"});
    ::kill(sandbox_, SIGKILL);
    ::waitpid(sandbox_, nullptr, 0);
    sandbox_ = 0;
    for (int i = 0; i < 100 && ::if_nametoindex("isb-0") != 0; ++i) ::usleep(20000);
    (*svc)->Release("sb-1");
    StopAll();
  });
}

TEST_F(EgressServiceTest, AVethDeletedUnderALiveServiceIsPutBackAndReported) {
  InHost([&] {
    std::mutex mu;
    std::vector<std::string> told;
    Result<std::unique_ptr<EgressService>> svc = EgressService::Start(Watched(mu, told));
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    const std::string ns = StartSandbox();
    ASSERT_TRUE((*svc)->Prepare("sb-1", *ParseSandboxEgress(nlohmann::json{"a.test"}), "acme").ok());
    ASSERT_TRUE((*svc)->Attach("sb-1", testing::ProcessNetns(sandbox_)).ok());
    const std::string here = "/proc/thread-self/ns/net";
    // The sandbox's address (its link's index left out: a new link has a new one).
    auto address = [&] {
      const std::string out = RunIn(ns, {"ip", "-o", "-4", "addr", "show", "scope", "global"});
      return out.substr(std::min(out.find(':'), out.size()));
    };
    const std::string inside = address();
    ASSERT_NE(inside.find("10.250.0."), std::string::npos) << inside;
    ::usleep(300000);  // a look of the watch since the attach: the edit below is the only commit the next one finds
    RunIn(here, {"ip", "link", "del", "isb-0"});
    bool back = false;
    for (int i = 0; i < 100 && !back; ++i) {
      ::usleep(50000);
      std::lock_guard lock(mu);
      back = !told.empty();
    }
    ASSERT_TRUE(back) << "the deletion was not noticed";
    EXPECT_NE(::if_nametoindex("isb-0"), 0u);
    EXPECT_EQ(address(), inside);
    ::usleep(300000);
    {
      std::lock_guard lock(mu);
      EXPECT_EQ(told, std::vector<std::string>{"sb-1 acme veth_deleted"});
    }
    // The sandbox dies (a stop): its veth goes with its namespace, and nothing is put back or reported.
    ::kill(sandbox_, SIGKILL);
    ::waitpid(sandbox_, nullptr, 0);
    sandbox_ = 0;
    for (int i = 0; i < 100 && ::if_nametoindex("isb-0") != 0; ++i) ::usleep(20000);
    ::usleep(500000);
    EXPECT_EQ(::if_nametoindex("isb-0"), 0u);
    {
      std::lock_guard lock(mu);
      EXPECT_EQ(told.size(), 1u);
    }
    (*svc)->Release("sb-1");
    StopAll();
  });
}

// A daemon restarted while an open sandbox runs finds forwarding on: the marker says an earlier isb turned it on, so
// from its very first ruleset the host routes sandboxes only, and the adopted sandbox still reaches the public server.
TEST_F(EgressServiceTest, ARestartedServiceKeepsTheForwardingAnEarlierOneTurnedOnForSandboxesOnly) {
  Fd internet = testing::Internet(host_);
  Fd lan = testing::LanMachine(host_);
  Fd server = testing::ListenIn(internet, INADDR_ANY, 80);
  InHost([&] {
    SetForwarding("0");
    EgressOptions o;
    o.claim_dir = claim_dir_;
    o.subnet = "10.250.0.0/24";
    o.state_dir = state_dir_;
    egress::EgressSpec open = *ParseSandboxEgress("open");
    Result<std::unique_ptr<EgressService>> first = EgressService::Start(o);
    ASSERT_TRUE(first.ok()) << first.error().message;
    StartSandbox();
    Result<SandboxNet> net = (*first)->Prepare("sb-1", open, "default");
    ASSERT_TRUE(net.ok()) << net.error().message;
    ASSERT_TRUE((*first)->Attach("sb-1", testing::ProcessNetns(sandbox_)).ok());
    ASSERT_EQ(Forwarding(), "1\n");
    first->reset();  // the daemon stops; its sandbox runs on

    Result<std::unique_ptr<EgressService>> second = EgressService::Start(o);
    ASSERT_TRUE(second.ok()) << second.error().message;
    EXPECT_TRUE(ForwardsOnlySandboxes()) << "before adopting anything";
    EXPECT_EQ(Contents(Marker()), BootId());
    Status adopted = (*second)->Adopt("sb-1", net->slot, open, "default");
    ASSERT_TRUE(adopted.ok()) << adopted.error().message;
    EXPECT_TRUE(ForwardsOnlySandboxes());
    EXPECT_EQ(PublicServerSees(SandboxNetns(), server), "11.0.0.254");
    EXPECT_EQ(testing::ConnectFrom(lan, testing::Ip("11.0.0.1"), 80), ETIMEDOUT);
    (*second)->Release("sb-1");
    StopAll();
  });
}

// Where /proc/sys cannot be written (here read-only, as systemd's ProtectKernelTunables=yes leaves it), an open
// sandbox is not attached: the error names the sysctl, and neither the marker nor the rules claim forwarding for isb.
// Its address is kept, and an attach where forwarding can be turned on works.
TEST_F(EgressServiceTest, AnOpenSandboxIsNotAttachedWhereForwardingCannotBeTurnedOn) {
  InHost([&] {
    SetForwarding("0");
    Result<std::unique_ptr<EgressService>> svc = StartOn(state_dir_);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    StartSandbox();
    ASSERT_TRUE((*svc)->Prepare("sb-1", *ParseSandboxEgress("open"), "default").ok());

    // The attach, on a thread of its own in the host's network namespace, sees a read-only /proc/sys.
    std::string setup_error;
    Status attached;
    std::thread([&] {
      setup_error = MakeSysctlsReadOnly();
      if (setup_error.empty() && ::setns(host_.get(), CLONE_NEWNET) != 0)
        setup_error = std::string("setns: ") + std::strerror(errno);
      if (setup_error.empty()) attached = (*svc)->Attach("sb-1", testing::ProcessNetns(sandbox_));
    }).join();
    ASSERT_EQ(setup_error, "");
    ASSERT_FALSE(attached.ok());
    EXPECT_EQ(attached.error().message,
              "open egress needs IPv4 forwarding: turning on IPv4 forwarding (net.ipv4.ip_forward): open "
              "/proc/sys/net/ipv4/ip_forward: Read-only file system (let isb serve write /proc/sys, or turn it on "
              "before isb serve starts, which leaves the host forwarding for others too)");
    EXPECT_EQ(Forwarding(), "0\n");
    EXPECT_FALSE(std::filesystem::exists(Marker()));
    EXPECT_FALSE(ForwardsOnlySandboxes());
    EXPECT_EQ(net::Netlink::Open()->IfIndex("isb-0").error().code, Code::kNotFound);

    Status again = (*svc)->Attach("sb-1", testing::ProcessNetns(sandbox_));
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(Forwarding(), "1\n");
    EXPECT_TRUE(ForwardsOnlySandboxes());
    (*svc)->Release("sb-1");
    StopAll();
  });
}

// A pooled sandbox's network taken by a create: the create's list replaces the placeholder (names resolve by the new
// list, its other port gets rules of its own), and what Assign cannot take is refused with nothing changed.
TEST_F(EgressServiceTest, AssignGivesAPreparedNetworkTheCreatesListAndRefusesWhatItCannotTake) {
  InHost([&] {
    EgressOptions o;
    o.claim_dir = claim_dir_;
    o.subnet = "10.250.0.0/24";
    Result<std::unique_ptr<EgressService>> svc = EgressService::Start(o);
    ASSERT_TRUE(svc.ok()) << svc.error().message;
    EgressService& egress = **svc;
    Status unknown = egress.Assign("sb-9", *ParseSandboxEgress(nlohmann::json{"a.test"}), "acme");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().code, Code::kNotFound);
    EXPECT_EQ(unknown.error().message, "no network prepared for sb-9");

    std::string ns = StartSandbox();
    ASSERT_TRUE(egress.Prepare("sb-1", *ParseSandboxEgress(nlohmann::json{"pooled.test"}), "").ok());
    ASSERT_TRUE(egress.Attach("sb-1", testing::ProcessNetns(sandbox_)).ok());
    const std::string here = "/proc/thread-self/ns/net";
    EXPECT_EQ(RunIn(ns, {"dig", "@10.250.0.1", "+short", "+time=2", "+tries=1", "pooled.test"}), "10.250.0.1\n");
    EXPECT_EQ(RunIn(here, {"nft", "list", "table", "inet", "isb"}).find("8443"), std::string::npos);

    Status open = egress.Assign("sb-1", *ParseSandboxEgress("open"), "acme");
    ASSERT_FALSE(open.ok());
    EXPECT_EQ(open.error().code, Code::kInvalidArgument);
    EXPECT_EQ(open.error().message, "only a list is assigned to a prepared network");
    EXPECT_EQ(RunIn(ns, {"dig", "@10.250.0.1", "+short", "+time=2", "+tries=1", "pooled.test"}), "10.250.0.1\n");

    ASSERT_TRUE(egress.Assign("sb-1", *ParseSandboxEgress(nlohmann::json{"a.test:8443"}), "acme").ok());
    EXPECT_EQ(RunIn(ns, {"dig", "@10.250.0.1", "+short", "+time=2", "+tries=1", "a.test"}), "10.250.0.1\n");
    std::string gone = RunIn(ns, {"dig", "@10.250.0.1", "+time=2", "+tries=1", "pooled.test"});
    EXPECT_NE(gone.find("status: NXDOMAIN"), std::string::npos) << gone;
    EXPECT_NE(RunIn(here, {"nft", "list", "table", "inet", "isb"}).find("8443"), std::string::npos);

    StopAll();
    egress.Release("sb-1");
    svc->reset();
  });
}

}  // namespace
}  // namespace isb::daemon
