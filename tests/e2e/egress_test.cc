// Egress from inside real sandboxes, with real clients: a listed name works through isb's DNS and proxy (with the
// proxy variables and without), everything else fails the way it should. The origin is a python HTTP server on the
// host's loopback that the daemon reaches only because the test pins names to it.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <thread>

#include "e2e/origin_fixture.h"
#include "host_address.h"

namespace isb::e2e {
namespace {

class EgressTest : public OriginTest {
 protected:
  // Starts an HTTP origin (python; HTTP/1.1 with keep-alive when `keep_alive`, else 1.0) and restarts the daemon
  // with names pinned to it.
  void StartOriginAndPin(const std::vector<std::string>& names, bool keep_alive = false) {
    PrepareOrigin();
    std::ofstream(origin_dir_ + "/index.html") << "hello from the origin\n";
    std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/";
    std::vector<std::string> argv = {"python3",   "-m",          "http.server", "--bind",
                                     "127.0.0.1", "--directory", origin_dir_,   std::to_string(port_)};
    if (keep_alive) {
      argv = {"python3", "-c",
              "import functools, http.server as h\n"
              "h.SimpleHTTPRequestHandler.protocol_version = 'HTTP/1.1'\n"
              "handler = functools.partial(h.SimpleHTTPRequestHandler, directory='" +
                  origin_dir_ +
                  "')\n"
                  "h.ThreadingHTTPServer(('127.0.0.1', " +
                  std::to_string(port_) + "), handler).serve_forever()\n"};
    }
    ASSERT_TRUE(RunOrigin(argv, [&] {
      return RunProcess({"curl", "-s", "-m", "1", url}).out == "hello from the origin\n";
    })) << "the HTTP origin did not come up";
    RestartPinnedTo(names);
  }

  // An HTTPS origin (openssl s_server, a self-signed certificate for `name`) on a free loopback port; the daemon is
  // restarted with `name` pinned to it. The certificate (its own CA) is returned as PEM.
  std::string StartTlsOriginAndPin(const std::string& name, bool trust_origin = false) {
    PrepareOrigin();
    MakeCertificate(name);
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
    // The daemon verifies intercepted origins: this one's certificate is its own CA.
    std::vector<std::string> args;
    if (trust_origin) args = {"--egress-ca", origin_dir_ + "/cert.pem"};
    RestartPinnedTo({name}, args);
    return ReadFileOrEmpty(origin_dir_ + "/cert.pem");
  }
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
  EXPECT_EQ(Curl(id, {"--cacert", "/tmp/ca.pem", "-o", "/dev/null", "-w", "%{http_code}", "https://secure.test/"}),
            "200");
  // Without it: the ClientHello's SNI names secure.test; the bytes pass through untouched.
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "--cacert", "/tmp/ca.pem", "-o", "/dev/null", "-w", "%{http_code}",
                      "https://secure.test/"}),
            "200");
  // An SNI that is not listed: a TLS alert (curl: SSL connect error), and CONNECT to it a 403.
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "--resolve", "other.test:443:" + host_end, "-o", "/dev/null", "-w",
                      "%{exitcode}", "https://other.test/"}),
            "35");
  EXPECT_EQ(Curl(id, {"-o", "/dev/null", "-w", "%{http_connect}", "https://other.test/"}), "403");
}

// A create with a name, an egress list, labels and a lower memory limit that the net pool serves gives the sandbox a
// cold create of the same spec gives: hostname, proxy and trust-store variables, resolver, interfaces, trust bundle
// and scratch mounts, the same reach (the listed name through the proxy and by SNI) and the same refusals. A create
// with egress none beside that pool is served without a network: loopback only, as a cold one.
TEST_F(EgressTest, AListedSandboxFromThePoolIsTheColdOneWithTheSameSpec) {
  std::string ca = StartTlsOriginAndPin("secure.test");
  ASSERT_FALSE(ca.empty());
  // Both pools full (two sandboxes each), nothing created yet.
  auto launched = [&] {
    size_t n = 0;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(state_dir() + "/sandboxes", ec);
         !ec && it != std::filesystem::directory_iterator(); ++it)
      ++n;
    return n;
  };
  for (int i = 0; i < 400 && launched() < 4; ++i) ::usleep(50000);
  ASSERT_EQ(launched(), 4u);
  ::usleep(200000);
  auto spec = [](const std::string& name) {
    return json{{"name", name}, {"egress", {"secure.test"}}, {"labels", {{"team", "blue"}}}, {"mem_limit", 256 << 20}};
  };
  json pooled = MustTool("sandbox_create", spec("twin-pool"));
  EXPECT_EQ(pooled["timing"]["path"], "pool") << pooled.dump();
  json pooled_none = MustTool("sandbox_create", json::object());
  EXPECT_EQ(pooled_none["timing"]["path"], "pool") << pooled_none.dump();
  std::vector<std::string> no_pool = daemon_args();
  no_pool.insert(no_pool.end(), {"--pool-size", "0", "--net-pool-size", "0"});
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon(no_pool);
  json cold = MustTool("sandbox_create", spec("twin-cold"));
  EXPECT_EQ(cold["timing"]["path"], "cold") << cold.dump();
  json cold_none = MustTool("sandbox_create", json::object());
  EXPECT_EQ(cold_none["timing"]["path"], "cold") << cold_none.dump();

  // What each sees and reaches, its own name, CA and address (its slot's) written alike.
  auto seen = [&](const json& info) {
    const std::string id = info["id"], name = info["name"];
    json env = MustTool("sandbox_get", {{"sandbox", id}})["spec"]["environment"];
    std::string out;
    if (env.contains("HTTPS_PROXY")) {
      MustTool("sandbox_file_write", {{"sandbox", id}, {"path", "/tmp/ca.pem"}, {"content", ca}});
      std::string proxy = env["HTTPS_PROXY"];
      out += "host_end " + proxy.substr(7, proxy.rfind(':') - 7) + "\n";
      out += Curl(id, {"--cacert", "/tmp/ca.pem", "-o", "/dev/null", "-w", "%{http_code}\n", "https://secure.test/"});
      out += Curl(id, {"--noproxy", "*", "--cacert", "/tmp/ca.pem", "-o", "/dev/null", "-w", "%{http_code}\n",
                       "https://secure.test/"});
      out += Curl(id, {"-o", "/dev/null", "-w", "%{http_connect}\n", "https://other.test/"});
    }
    out +=
        Exec(id, {"sh", "-c",
                  "hostname; env | grep -i -e proxy -e _CA -e SSL_CERT | sort; cat /etc/resolv.conf; "
                  "ls /sys/class/net; grep -c 'BEGIN CERT' /etc/isb/ca-bundle.pem; "
                  "awk '$5 == \"/etc/isb/ca-bundle.pem\" || $5 == \"/tmp\" { $1 = $2 = $3 = \"\"; print }' "
                  "/proc/self/mountinfo | sed 's/uid=[0-9]*,gid=[0-9]*/uid=U,gid=G/; s|/dev/loop[0-9]*|/dev/loopN|'"})
            ["stdout"]
                .get<std::string>();  // (each sandbox's own uid range and layer device)
    for (const std::string& own : {name, std::string(info["id"])})
      for (size_t at; !own.empty() && (at = out.find(own)) != std::string::npos;) out.replace(at, own.size(), "OWN");
    if (size_t at = out.find("host_end "); at != std::string::npos) {
      const std::string host_end = out.substr(at + 9, out.find('\n', at) - at - 9);
      for (size_t h; (h = out.find(host_end)) != std::string::npos;) out.replace(h, host_end.size(), "HOST_END");
    }
    return out;
  };
  const std::string listed = seen(pooled);
  EXPECT_NE(listed.find("200\n200\n403\nOWN\n"), std::string::npos) << listed;
  EXPECT_NE(listed.find("eth0\nlo\n"), std::string::npos) << listed;
  EXPECT_NE(listed.find(" /ca-bundle.pem /etc/isb/ca-bundle.pem ro,"), std::string::npos) << listed;
  EXPECT_NE(listed.find("size=262144k"), std::string::npos) << listed;
  EXPECT_EQ(listed, seen(cold));
  const std::string none = seen(pooled_none);
  EXPECT_EQ(none.substr(0, none.find("lo\n") + 3), "sandbox\nlo\n") << none;
  EXPECT_EQ(none, seen(cold_none));
}

// A second isb serve on the host, on the running daemon's table or on its subnet, exits 2 at start-up naming the
// holder and the flag to change, and leaves the first's rules and sandbox network as they were.
TEST_F(EgressTest, ASecondDaemonOnTheSameTableOrSubnetIsRefused) {
  // No net pool, whose refills would change the table in the background while it is compared.
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon({"--net-pool-size", "0"});
  std::string id = CreateSandbox({{"egress", {"allowed.test"}}});
  auto table = [] { return RunProcess({"/usr/sbin/nft", "list", "table", "inet", kEgressTable}).out; };
  const std::string rules = table();
  ASSERT_NE(rules.find(kEgressTable), std::string::npos) << rules;
  const std::string other_state = temp_dir() + "/second";
  const std::string holder = "another isb (pid " + std::to_string(daemon_pid()) + ", state dir " + state_dir() + ")";
  auto second = [&](const std::string& table_name, const std::string& subnet) {
    return RunProcess({ISB_BINARY, "serve", "--listen", "127.0.0.1:0", "--state-dir", other_state, "--egress-table",
                       table_name, "--sandbox-subnet", subnet},
                      "", 20s);
  };
  ProcResult r = second(kEgressTable, "198.20.0.0/16");
  EXPECT_EQ(r.exit_status, 2) << r.Describe();
  EXPECT_NE(r.err.find(std::string("egress: the nftables table \"") + kEgressTable + "\" is held by " + holder +
                       " on this host; give this daemon another with --egress-table"),
            std::string::npos)
      << r.err;
  r = second("isbe2ex", "198.19.128.0/17");
  EXPECT_EQ(r.exit_status, 2) << r.Describe();
  EXPECT_NE(r.err.find("egress: the sandbox subnet 198.19.128.0/17 overlaps 198.19.0.0/16, held by " + holder +
                       " on this host; give this daemon another with --sandbox-subnet"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(table(), rules);
  EXPECT_EQ(RunProcess({"/usr/sbin/nft", "list", "table", "inet", "isbe2ex"}).exit_status, 1)
      << "the refused daemon made no table";
  EXPECT_EQ(Exec(id, {"true"})["exit_code"], 0);
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

  // DNS over TCP: the same answers (dig asks the resolv.conf server, isb's responder, on tcp/53).
  EXPECT_EQ(Exec(id, {"dig", "+tcp", "+short", "allowed.test"})["stdout"], host_end + "\n");
  std::string nx = Exec(id, {"dig", "+tcp", "unlisted.test"})["stdout"];
  EXPECT_NE(nx.find("status: NXDOMAIN"), std::string::npos) << nx;
  EXPECT_NE(nx.find("(TCP)"), std::string::npos) << nx;

  // A name not listed: no address, and a 403 from the proxy that says why.
  EXPECT_EQ(Exec(id, {"getent", "hosts", "unlisted.test"})["exit_code"], 2);
  EXPECT_EQ(Curl(id, {"-o", "/dev/null", "-w", "%{http_code}", "http://unlisted.test/"}), "403");
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "-w", " %{http_code}", "--resolve", "unlisted.test:80:" + host_end,
                      "http://unlisted.test/"})
                .substr(0, 5),
            "isb: ");
  // Both refusals are in the audit log, in the sandbox's org, as one row: the first of its window (30 s).
  HttpResponse refused = Tool("audit_list", {{"action", "egress_connect"}});
  ASSERT_EQ(refused.status, 200) << refused.Describe();
  std::vector<std::string> rows;
  for (const json& r : refused.j["result"]["records"]) {
    rows.push_back(r.value("org", "") + " " + r.value("actor", "") + " " + r.value("actor_kind", "") + " " +
                   r.value("surface", "") + " " + r.value("target", "") + " " + r.value("outcome", ""));
  }
  EXPECT_EQ(rows, std::vector<std::string>{"default sandbox:" + id + " sandbox egress unlisted.test:80 forbidden"})
      << refused.Describe();
  if (!rows.empty()) {
    // With the proxy's reason (what the sandbox was told).
    EXPECT_EQ(refused.j["result"]["records"][0]["details"],
              json({{"reason", "unlisted.test:80 is not in the egress list"}}))
        << refused.Describe();
  }
  // Other ports, the host's own services, address literals: refused at once (curl: could not connect).
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "-o", "/dev/null", "-w", "%{exitcode}", "http://allowed.test:8080/"}), "7");
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "-o", "/dev/null", "-w", "%{exitcode}",
                      "http://" + host_end + ":" + std::to_string(port_) + "/"}),
            "7");
  // An address literal beyond the sandbox's network: this host's own (a packet to it never leaves the machine).
  const std::string host_own = isb::testing::HostOwnIpv4();
  ASSERT_FALSE(host_own.empty()) << "the host has no IPv4 address beyond loopback to aim at";
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "-o", "/dev/null", "-w", "%{exitcode}", "http://" + host_own + "/"}), "7");

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

// sandbox_usage's network bytes are what the proxy relayed for that sandbox: a download of a known size through
// the transparent path (relayed untouched) is in its next sample to the byte, the request it sent too, and another
// sandbox with the same list that sent nothing has 0 both ways.
TEST_F(EgressTest, UsageCountsTheBytesTheProxyRelayedForEachSandbox) {
  StartOriginAndPin({"allowed.test"});
  constexpr size_t kBody = 1 << 20;
  std::string body(kBody, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('a' + i % 26);
  std::ofstream(origin_dir_ + "/blob", std::ios::binary) << body;
  std::string id = CreateSandbox({{"egress", {"allowed.test:80"}}});
  std::string quiet = CreateSandbox({{"egress", {"allowed.test:80"}}});
  ASSERT_FALSE(id.empty());
  ASSERT_FALSE(quiet.empty());
  // curl's own count of what it sent (the request head) and got (the response head, then the body).
  std::string sizes =
      Curl(id, {"--noproxy", "*", "-o", "/dev/null", "-w",
                "%{http_code} %{size_request} %{size_header} %{size_download}", "http://allowed.test/blob"});
  uint64_t request = 0, header = 0, download = 0;
  int code = 0;
  ASSERT_EQ(std::sscanf(sizes.c_str(), "%d %lu %lu %lu", &code, &request, &header, &download), 4) << sizes;
  ASSERT_EQ(code, 200) << sizes;
  ASSERT_EQ(download, kBody) << sizes;

  auto last_sample = [&](const std::string& sandbox, uint64_t want_rx) {
    json last;
    for (int i = 0; i < 40; ++i) {
      json usage = MustTool("sandbox_usage", {{"sandbox", sandbox}});
      if (usage.is_object() && !usage["samples"].empty()) {
        last = usage["samples"].back();
        if (last["net_rx_bytes"].get<uint64_t>() >= want_rx) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return last;
  };
  json mine = last_sample(id, header + download);
  ASSERT_TRUE(mine.is_object()) << "no sample of " << id;
  EXPECT_EQ(mine["net_rx_bytes"].get<uint64_t>(), header + download) << mine.dump() << " " << sizes;
  EXPECT_EQ(mine["net_tx_bytes"].get<uint64_t>(), request) << mine.dump() << " " << sizes;

  // Through HTTP_PROXY: the response is relayed untouched, the request rewritten to origin form (its absolute URL
  // and Proxy-Connection gone), so what went out is a little less than what curl sent the proxy.
  const uint64_t rx_before = mine["net_rx_bytes"], tx_before = mine["net_tx_bytes"];
  sizes = Curl(id, {"-o", "/dev/null", "-w", "%{http_code} %{size_request} %{size_header} %{size_download}",
                    "http://allowed.test/blob"});
  ASSERT_EQ(std::sscanf(sizes.c_str(), "%d %lu %lu %lu", &code, &request, &header, &download), 4) << sizes;
  ASSERT_EQ(code, 200) << sizes;
  mine = last_sample(id, rx_before + header + download);
  EXPECT_EQ(mine["net_rx_bytes"].get<uint64_t>() - rx_before, header + download) << mine.dump() << " " << sizes;
  const uint64_t sent = mine["net_tx_bytes"].get<uint64_t>() - tx_before;
  EXPECT_LE(sent, request) << mine.dump() << " " << sizes;
  EXPECT_GE(sent + 64, request) << mine.dump() << " " << sizes;
  json theirs = last_sample(quiet, 0);
  ASSERT_TRUE(theirs.is_object()) << "no sample of " << quiet;
  EXPECT_EQ(theirs["net_rx_bytes"], 0) << theirs.dump();
  EXPECT_EQ(theirs["net_tx_bytes"], 0) << theirs.dump();
}

// kill -9 of the daemon leaves its sandboxes confined: the host-side rules are the kernel's, not the daemon's, so
// while it is down nothing but the proxy's redirects leaves a sandbox, and those find nothing. A new daemon adopts
// each sandbox's network with its list as last changed: the changed list works, the name it replaced is refused.
TEST_F(EgressTest, ASandboxStaysConfinedWhileTheDaemonIsDownAndKeepsItsLastListAfter) {
  StartOriginAndPin({"allowed.test", "other.test"});
  std::string id = CreateSandbox({{"egress", {"allowed.test:80"}}});
  ASSERT_FALSE(id.empty());
  MustTool("sandbox_egress_set", {{"sandbox", id}, {"egress", {"other.test:80"}}});
  EXPECT_EQ(Curl(id, {"http://other.test/"}), "hello from the origin\n");
  std::string proxy = MustTool("sandbox_get", {{"sandbox", id}})["spec"]["environment"]["HTTP_PROXY"];
  const std::string host_end = proxy.substr(7, proxy.rfind(':') - 7);
  const std::string host_own = isb::testing::HostOwnIpv4();
  ASSERT_FALSE(host_own.empty()) << "the host has no IPv4 address beyond loopback to aim at";

  KillDaemon();
  const pid_t init = SandboxInitPid(id);
  ASSERT_GT(init, 0) << "the sandbox did not outlive its daemon";
  // curl in the sandbox's network (the host's files: no isb resolver, so names are given their address).
  auto curl_inside = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"nsenter", "-t", std::to_string(init), "-n", "curl",        "-s",        "-m",
                                     "3",       "-o", "/dev/null",          "-w", "%{exitcode}", "--noproxy", "*"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv).out;
  };
  // The listed name's redirect reaches no proxy; the origin's port on the host end, the host's own address and
  // an address beyond: refused at once (7), nothing answered.
  EXPECT_EQ(curl_inside({"--resolve", "other.test:80:" + host_end, "http://other.test/"}), "7");
  EXPECT_EQ(curl_inside({"http://" + host_end + ":" + std::to_string(port_) + "/"}), "7");
  EXPECT_EQ(curl_inside({"http://" + host_own + ":" + std::to_string(port_) + "/"}), "7");

  StartDaemon(daemon_args());
  EXPECT_EQ(MustTool("sandbox_get", {{"sandbox", id}})["spec"]["egress"], json::array({"other.test:80"}));
  EXPECT_EQ(Curl(id, {"http://other.test/"}), "hello from the origin\n");
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "http://other.test/"}), "hello from the origin\n");
  EXPECT_EQ(Curl(id, {"-o", "/dev/null", "-w", "%{http_code}", "http://allowed.test/"}), "403");
  EXPECT_EQ(Exec(id, {"getent", "hosts", "allowed.test"})["exit_code"], 2);
}

// Keep-alive: every request on a plain HTTP connection is checked. Two requests for the listed name share one
// connection; a second request for another name on it gets the proxy's 403 and the connection ends.
// A sandbox the host makes from an image (a directory of the host's root's, as an unpacked root filesystem is) with
// a list: it starts, its root owns the image's files and changes them in its own layer, and its resolver is isb's
// (the image's resolv.conf, a symlink into an empty /run, is replaced), and it reaches its listed name.
TEST_F(EgressTest, ASandboxFromARootOwnedImageStartsWithIsbsResolverAndReachesItsName) {
  StartOriginAndPin({"allowed.test"});
  ASSERT_TRUE(std::filesystem::exists("/bin/busybox")) << "the busybox-static package provides /bin/busybox";
  const std::string image = temp_dir() + "/image";
  std::filesystem::create_directories(image + "/bin");
  std::filesystem::create_directories(image + "/etc");
  std::filesystem::copy_file("/bin/busybox", image + "/bin/busybox");
  for (const char* applet : {"sh", "cat", "stat", "touch", "wget"})
    std::filesystem::create_symlink("busybox", image + "/bin/" + applet);
  std::filesystem::create_symlink("../run/resolv.conf", image + "/etc/resolv.conf");
  for (const char* d : {"", "/bin", "/etc"}) ASSERT_EQ(::chmod((image + d).c_str(), 0755), 0);
  std::string id = CreateSandbox({{"image", image}, {"egress", {"allowed.test:80"}}});
  ASSERT_FALSE(id.empty());
  std::string proxy = MustTool("sandbox_get", {{"sandbox", id}})["spec"]["environment"]["HTTP_PROXY"];
  std::string host_end = proxy.substr(7, proxy.rfind(':') - 7);
  json out = Exec(id, {"sh", "-c",
                       "stat -c %u:%g /etc; touch /etc/made && echo made; cat /etc/resolv.conf; "
                       "wget -q -O - http://allowed.test/"});
  EXPECT_EQ(out["stdout"], "0:0\nmade\nnameserver " + host_end + "\nhello from the origin\n") << out.dump();
  EXPECT_EQ(out["exit_code"], 0) << out.dump();
  EXPECT_FALSE(std::filesystem::exists(image + "/etc/made"));
  EXPECT_TRUE(std::filesystem::is_symlink(image + "/etc/resolv.conf"));
}

TEST_F(EgressTest, EveryRequestOnAKeptAliveConnectionIsChecked) {
  StartOriginAndPin({"allowed.test", "unlisted.test"}, /*keep_alive=*/true);
  std::string id = CreateSandbox({{"egress", {"allowed.test:80"}}});
  ASSERT_FALSE(id.empty());
  // curl: the second URL reuses the first one's connection (no new connect).
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "-w", "%{num_connects}\n", "http://allowed.test/", "http://allowed.test/"}),
            "hello from the origin\n1\nhello from the origin\n0\n");
  const std::string client =
      "import socket\n"
      "s = socket.create_connection(('allowed.test', 80), timeout=5)\n"
      "s.sendall(b'GET / HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n')\n"
      "got = b''\n"
      "while not got.endswith(b'hello from the origin\\n'):\n"
      "    got += s.recv(65536)\n"
      "print(got.split(b'\\r\\n')[0].decode())\n"
      "s.sendall(b'GET / HTTP/1.1\\r\\nHost: unlisted.test\\r\\n\\r\\n')\n"
      "rest = b''\n"
      "while True:\n"
      "    d = s.recv(65536)\n"
      "    if not d: break\n"
      "    rest += d\n"
      "print(rest.decode(), end='')\n";
  json out = Exec(id, {"python3", "-c", client});
  const std::string reason =
      "egress to unlisted.test:80 on a connection to allowed.test:80 is refused: one host per connection";
  EXPECT_EQ(out["stdout"], "HTTP/1.1 200 OK\nHTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: " +
                               std::to_string(reason.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + reason + "\n")
      << out.dump();
}

// A thousand connections open at once from one sandbox, through the daemon's proxy to a listed name: every one is
// answered, and once they are closed the daemon holds no more descriptors than before. The name is resolved once:
// a thousand lookups at once are the DNS responder's test, not the proxy's.
TEST_F(EgressTest, AThousandConcurrentConnectionsFromASandboxAllGetThroughAndNoneIsLeft) {
  PrepareOrigin();
  const std::string origin =
      "import asyncio\n"
      "async def serve(r, w):\n"
      "    await r.readuntil(b'\\r\\n\\r\\n')\n"
      "    w.write(b'HTTP/1.0 200 OK\\r\\nContent-Length: 3\\r\\n\\r\\nok\\n'); await w.drain(); w.close()\n"
      "async def main():\n"
      "    s = await asyncio.start_server(serve, '127.0.0.1', " +
      std::to_string(port_) +
      ", backlog=4096)\n"
      "    await s.serve_forever()\n"
      "asyncio.run(main())\n";
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/";
  ASSERT_TRUE(RunOrigin({"python3", "-c", origin}, [&] {
    return RunProcess({"curl", "-s", "-m", "1", url}).out == "ok\n";
  })) << "the origin did not come up";
  RestartPinnedTo({"allowed.test"});
  std::string id = CreateSandbox({{"egress", {"allowed.test:80"}}});
  ASSERT_FALSE(id.empty());
  auto descriptors = [&] {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e :
         std::filesystem::directory_iterator("/proc/" + std::to_string(daemon_pid()) + "/fd"))
      ++n;
    return n;
  };
  // The count once the daemon is quiet: the create's pool refill (a new sandbox's control socket) may still be under
  // way on a loaded machine, and its descriptor is not the connections'.
  size_t before = descriptors();
  for (int i = 0, same = 0; i < 150 && same < 5; ++i) {
    ::usleep(100000);
    const size_t now = descriptors();
    same = now == before ? same + 1 : 0;
    before = now;
  }
  // All 1000 connect first, then each sends its request and reads its answer.
  const std::string client =
      "import asyncio, resource, socket\n"
      "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
      "resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))\n"
      "async def main():\n"
      "    proxy = socket.gethostbyname('allowed.test')\n"
      "    conns = await asyncio.gather(*[asyncio.open_connection(proxy, 80) for _ in range(1000)],\n"
      "                                 return_exceptions=True)\n"
      "    opened = [c for c in conns if not isinstance(c, Exception)]\n"
      "    async def ask(c):\n"
      "        r, w = c\n"
      "        w.write(b'GET / HTTP/1.0\\r\\nHost: allowed.test\\r\\n\\r\\n'); await w.drain()\n"
      "        got = await r.read(); w.close()\n"
      "        return got.endswith(b'\\r\\n\\r\\nok\\n')\n"
      "    answers = await asyncio.gather(*[ask(c) for c in opened], return_exceptions=True)\n"
      "    print('opened', len(opened), 'answered', sum(1 for a in answers if a is True))\n"
      "asyncio.run(main())\n";
  json out = MustTool("sandbox_exec", {{"sandbox", id}, {"argv", {"python3", "-c", client}}, {"timeout", 120}});
  EXPECT_EQ(out["stdout"], "opened 1000 answered 1000\n") << out.dump();
  size_t after = descriptors();
  for (int i = 0; i < 50 && after > before; ++i) {
    ::usleep(100000);
    after = descriptors();
  }
  EXPECT_LE(after, before) << "the daemon holds descriptors the connections left";
}

// A name marked for interception (a host of one of the sandbox's secrets): the proxy ends its TLS with a certificate
// from the sandbox's own CA, which the sandbox trusts without any flag (SSL_CERT_FILE and friends name a bundle of
// the system's roots and that CA), by CONNECT and by SNI, with curl, python and node.
TEST_F(EgressTest, AnInterceptedNameIsTrustedInsideWithoutFlags) {
  std::string origin_ca = StartTlsOriginAndPin("secure.test", /*trust_origin=*/true);
  ASSERT_FALSE(origin_ca.empty());
  MustTool("secret_create", {{"name", "TOKEN"}, {"value", "t0ken-value"}, {"hosts", {"secure.test"}}});
  json egress = {{"allow", {"secure.test"}}, {"secrets", {{{"name", "TOKEN"}, {"hosts", {"secure.test"}}}}}};
  std::string id = CreateSandbox({{"egress", egress}});
  ASSERT_FALSE(id.empty());
  json env = MustTool("sandbox_get", {{"sandbox", id}})["spec"]["environment"];
  for (const char* k : {"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"})
    EXPECT_EQ(env[k], "/etc/isb/ca-bundle.pem") << k;
  // The bundle: the host's roots, then the sandbox's CA.
  json subject = Exec(id, {"sh", "-c",
                           "awk '/BEGIN CERT/{c=\"\"} {c=c $0 \"\\n\"} END{printf \"%s\", c}' "
                           "/etc/isb/ca-bundle.pem | openssl x509 -noout -subject"});
  EXPECT_EQ(subject["stdout"], "subject=CN = isb sandbox CA " + id + "\n") << subject.dump();
  EXPECT_EQ(
      Exec(id, {"grep", "-c", "BEGIN CERTIFICATE", "/etc/isb/ca-bundle.pem"})["stdout"],
      std::to_string(
          std::stoi(RunProcess({"grep", "-c", "BEGIN CERTIFICATE", "/etc/ssl/certs/ca-certificates.crt"}).out) + 1) +
          "\n");
  // Bound from the copy on the sandbox's own layer: its mountinfo line names no host path of isb's.
  const std::string mounts = Exec(id, {"cat", "/proc/self/mountinfo"})["stdout"];
  EXPECT_NE(mounts.find(" /ca-bundle.pem /etc/isb/ca-bundle.pem ro,"), std::string::npos) << mounts;
  EXPECT_EQ(mounts.find(state_dir()), std::string::npos) << mounts;
  EXPECT_EQ(mounts.find(temp_dir()), std::string::npos) << mounts;
  // A new daemon has a new CA for the running sandbox: the bundle it reads follows, in place.
  const std::string before = Exec(id, {"tail", "-c", "200", "/etc/isb/ca-bundle.pem"})["stdout"];
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon(daemon_args());
  const std::string after = Exec(id, {"tail", "-c", "200", "/etc/isb/ca-bundle.pem"})["stdout"];
  EXPECT_FALSE(after.empty());
  EXPECT_NE(after, before) << "the running sandbox still trusts the old daemon's CA";

  EXPECT_EQ(Curl(id, {"-o", "/dev/null", "-w", "%{http_code}", "https://secure.test/"}), "200");
  EXPECT_EQ(Curl(id, {"--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}", "https://secure.test/"}), "200");
  // Intercepted: the origin's own certificate is not what the sandbox sees (curl: peer certificate not trusted).
  MustTool("sandbox_file_write", {{"sandbox", id}, {"path", "/tmp/origin.pem"}, {"content", origin_ca}});
  EXPECT_EQ(Curl(id, {"--cacert", "/tmp/origin.pem", "-o", "/dev/null", "-w", "%{exitcode}", "https://secure.test/"}),
            "60");
  json py = Exec(
      id, {"python3", "-c", "import urllib.request; print(urllib.request.urlopen('https://secure.test/').status)"});
  EXPECT_EQ(py["stdout"], "200\n") << py.dump();
  // Node's fetch ignores the proxy variables: the SNI path, with NODE_EXTRA_CA_CERTS.
  json node =
      Exec(id, {"node", "-e",
                "fetch('https://secure.test/').then(r => console.log(r.status), e => console.log(String(e.cause)))"});
  EXPECT_EQ(node["stdout"], "200\n") << node.dump();
}

// A raw socket cannot be made inside (no CAP_NET_RAW), nor a ping socket, and a listed name that resolves to a private
// address on the host (localhost, with no pin) is refused by the proxy's dialer with its reason.
TEST_F(EgressTest, NoRawSocketsAndAListedNameResolvingToAPrivateAddressIsRefused) {
  std::string id = CreateSandbox({{"egress", {"localhost:80"}}});
  ASSERT_FALSE(id.empty());
  json raw = Exec(id, {"python3", "-c",
                       "import socket, errno\n"
                       "try:\n socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)\n print('made')\n"
                       "except OSError as e:\n print(errno.errorcode[e.errno])"});
  EXPECT_EQ(raw["stdout"], "EPERM\n") << raw.dump();
  // Nor an ICMP datagram (ping) socket: no group may make one in the sandbox's network namespace, and the sysctl
  // that would allow it is read-only there. So no ICMP leaves (and the host's rules take TCP only).
  json ping =
      Exec(id, {"python3", "-c",
                "import socket, errno\n"
                "try:\n socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)\n print('made')\n"
                "except OSError as e:\n print(errno.errorcode[e.errno])\n"
                "try:\n open('/proc/sys/net/ipv4/ping_group_range', 'w').write('0 2147483647')\n print('wrote')\n"
                "except OSError as e:\n print(errno.errorcode[e.errno])"});
  EXPECT_EQ(ping["stdout"], "EACCES\nEROFS\n") << ping.dump();
  std::string proxy = MustTool("sandbox_get", {{"sandbox", id}})["spec"]["environment"]["HTTP_PROXY"];
  std::string host_end = proxy.substr(7, proxy.rfind(':') - 7);
  // Straight to the host end's port 80 with Host: localhost (the sandbox's own /etc/hosts names its loopback).
  json out = Exec(id, {"python3", "-c",
                       "import socket\n"
                       "s = socket.create_connection(('" +
                           host_end +
                           "', 80), timeout=5)\n"
                           "s.sendall(b'GET / HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n')\n"
                           "got = b''\n"
                           "while True:\n"
                           "    d = s.recv(65536)\n"
                           "    if not d: break\n"
                           "    got += d\n"
                           "print(got.decode(), end='')\n"});
  const std::string reason =
      "cannot reach localhost:80: egress refused 'localhost': it resolves to loopback "
      "(127.0.0.0/8); a non-public address is reachable only through a pin (isb serve "
      "--egress-pin NAME=IP[:PORT])";
  EXPECT_EQ(out["stdout"], "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: " +
                               std::to_string(reason.size() + 6) + "\r\nConnection: close\r\n\r\nisb: " + reason + "\n")
      << out.dump();
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
  const std::string b_addr =
      b_host.substr(0, b_host.rfind('.') + 1) + std::to_string(std::stoi(b_host.substr(b_host.rfind('.') + 1)) + 1);

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
                       "print(s.sendto(b'leak', ('" +
                           a_host + "', " + udp_port + ")))"});
  EXPECT_EQ(sent["stdout"], "4\n") << sent.dump();  // sent from inside, then dropped on the host side
  pollfd p{udp, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 500), 0) << "a UDP datagram from a listed sandbox reached the host";
  ::close(udp);

  // IPv6 is off inside.
  EXPECT_EQ(Exec(a, {"cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6"})["stdout"], "1\n");
  json v6 = Exec(a, {"python3", "-c",
                     "import socket, errno\ns = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)\n"
                     "try:\n s.connect(('::1', 443))\nexcept OSError as e:\n print(errno.errorcode[e.errno])"});
  // With IPv6 disabled the sandbox has no IPv6 address at all, not even its loopback's ::1 (with IPv6 on, that
  // connect would be refused instead: nothing listens).
  EXPECT_EQ(v6["stdout"], "EADDRNOTAVAIL\n") << v6.dump();

  // Another sandbox, its address or its host end: unreachable or refused at once.
  std::string probe =
      "import socket, errno\ns = socket.socket()\ns.settimeout(5)\n"
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
