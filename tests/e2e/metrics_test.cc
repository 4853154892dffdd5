// GET /metrics, GET /api/v1/events, `isb events` and sandbox_usage against a real daemon: promtool's check of the
// real output, every named metric present and moving when its event happens, events as they happen.
#include <fstream>
#include <thread>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

constexpr const char* kPromtool = "/usr/bin/promtool";

// The value of the sample line `series` (name and labels exactly as rendered), or -1 when there is none.
double Sample(const std::string& text, const std::string& series) {
  const std::string at = "\n" + series + " ";
  size_t pos = ("\n" + text).find(at);
  if (pos == std::string::npos) return -1;
  return std::stod(text.substr(pos + at.size() - 1));
}

class MetricsTest : public E2eTest {
 protected:
  std::string Scrape() {
    CurlResult r = CurlTcp("GET", "/metrics", "", {}, "");
    EXPECT_EQ(r.http.status, 200) << r.Describe();
    return r.http.body;
  }
};

TEST_F(MetricsTest, PromtoolFindsNothingToSayAndEveryNamedMetricMovesWithItsEvent) {
  StopDaemon();
  StartDaemon({"--metrics-public", "--reap-interval", "1s"});
  const std::string before = Scrape();

  const std::string file = temp_dir() + "/metrics.txt";
  std::ofstream(file) << before;
  ProcResult check = RunProcess({"/bin/sh", "-c", std::string(kPromtool) + " check metrics < " + file});
  EXPECT_EQ(check.exit_status, 0) << check.Describe();
  EXPECT_EQ(check.out + check.err, "") << "promtool has something to say about the daemon's metrics";

  for (const char* name :
       {"isb_sandboxes", "isb_sandbox_creates_total", "isb_sandbox_create_seconds", "isb_sandbox_execs_total",
        "isb_sandbox_exec_seconds", "isb_reaper_actions_total", "isb_proxy_connections_total",
        "isb_proxy_active_connections", "isb_proxy_bytes_total", "isb_proxy_refusals_total", "isb_dns_answers_total",
        "isb_judge_verdicts_total", "isb_judge_cache_lookups_total", "isb_judge_breakers_open", "isb_audit_rows_total",
        "isb_audit_verify_failures_total", "isb_pool_size", "isb_pool_hits_total", "isb_lifecycle_events_total"})
    EXPECT_NE(before.find(std::string("\n# TYPE ") + name + " "), std::string::npos) << name << " is missing";

  const std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(Exec(id, {"true"})["exit_code"], 0);
  const std::string expiring = CreateSandbox({{"expires", 2}});
  ASSERT_FALSE(expiring.empty());
  for (int i = 0; i < 50 && Tool("sandbox_get", {{"sandbox", expiring}}).status != 404; ++i)
    std::this_thread::sleep_for(200ms);
  const std::string after = Scrape();

  auto moved = [&](const std::string& series) { return Sample(after, series) - Sample(before, series); };
  const double pool_creates = moved("isb_sandbox_creates_total{outcome=\"ok\",path=\"pool\"}");
  const double cold_creates = moved("isb_sandbox_creates_total{outcome=\"ok\",path=\"cold\"}");
  EXPECT_EQ(pool_creates + cold_creates, 2) << after;
  EXPECT_EQ(moved("isb_pool_hits_total{pool=\"plain\"}"), pool_creates) << after;
  EXPECT_EQ(moved("isb_sandbox_create_seconds_count{outcome=\"ok\"}"), 2) << after;
  EXPECT_EQ(moved("isb_sandbox_execs_total{outcome=\"ok\"}"), 1) << after;
  EXPECT_EQ(moved("isb_sandbox_exec_seconds_count{outcome=\"ok\"}"), 1) << after;
  EXPECT_EQ(moved("isb_sandboxes{state=\"running\"}"), 1) << after;
  EXPECT_EQ(moved("isb_reaper_actions_total{action=\"expired\"}"), 1) << after;
  EXPECT_EQ(moved("isb_lifecycle_events_total{type=\"created\"}"), 2) << after;
  EXPECT_EQ(moved("isb_lifecycle_events_total{type=\"reaped\"}"), 1) << after;
  // Two creates and an exec, each a row when admitted and one when done; the sandbox_get that found the reaped one
  // gone (a read that failed).
  EXPECT_EQ(moved("isb_audit_rows_total{chain=\"audit_log\"}"), 7) << after;
  EXPECT_GE(moved("isb_audit_rows_total{chain=\"sandbox_history\"}"), 3) << after;
}

TEST_F(MetricsTest, TheProxyAndDnsCountsMoveWithASandboxsRefusedRequest) {
  StopDaemon();
  StartDaemon({"--metrics-public"});
  const std::string id = CreateSandbox({{"egress", {"allowed.test:80"}}});
  ASSERT_FALSE(id.empty());
  const std::string before = Scrape();
  // The responder answers (NXDOMAIN) for a name not listed, and the proxy refuses a request for it with a 403.
  EXPECT_EQ(Exec(id, {"getent", "hosts", "unlisted.test"})["exit_code"], 2);
  json curl = Exec(id, {"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://unlisted.test/"});
  EXPECT_EQ(curl["stdout"], "403") << curl.dump();
  const std::string after = Scrape();
  auto moved = [&](const std::string& series) { return Sample(after, series) - Sample(before, series); };
  EXPECT_GE(moved("isb_dns_answers_total{outcome=\"answered\"}"), 1) << after;
  EXPECT_EQ(moved("isb_proxy_connections_total{outcome=\"accepted\"}"), 1) << after;
  EXPECT_EQ(moved("isb_proxy_connections_total{outcome=\"denied\"}"), 1) << after;
  EXPECT_EQ(moved("isb_proxy_refusals_total{reason=\"not_listed\"}"), 1) << after;
}

TEST_F(MetricsTest, WithoutMetricsPublicALoopbackCallerWithoutATokenIsRefused) {
  CurlResult r = CurlTcp("GET", "/metrics", "", {}, "");
  EXPECT_EQ(r.http.status, 401) << r.Describe();
  EXPECT_EQ(r.http.j.value("message", ""), "missing bearer token: send \"Authorization: Bearer <token>\"");
}

TEST_F(MetricsTest, AFollowerSeesACreatedSandboxAsItHappens) {
  ProcResult curl, cli;
  std::thread follow_curl([&] {
    curl = RunProcess(
        {"curl", "-sN", "--max-time", "5", "--unix-socket", socket_path(), "http://localhost/api/v1/events"});
  });
  std::thread follow_cli([&] {
    cli = RunProcess({ISB_BINARY, "events", "--json", "--socket", socket_path()}, "", 5s);
  });
  std::this_thread::sleep_for(1500ms);
  const std::string id = CreateSandbox({{"name", "watched"}});
  follow_curl.join();
  follow_cli.join();
  ASSERT_FALSE(id.empty());
  const std::string data_prefix =
      R"("type":"created","org":"default","sandbox":")" + id + R"(","name":"watched","state":"running","at":")";
  EXPECT_NE(curl.out.find("event: sandbox\ndata: {\"id\":"), std::string::npos) << curl.Describe();
  EXPECT_NE(curl.out.find(data_prefix), std::string::npos) << curl.Describe();
  EXPECT_NE(cli.out.find(data_prefix), std::string::npos) << cli.Describe();
  EXPECT_TRUE(cli.killed_at_deadline) << "isb events follows until it is stopped: " << cli.Describe();
}

TEST_F(MetricsTest, SandboxUsageReturnsSamplesOfARunningSandbox) {
  const std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  json usage;
  for (int i = 0; i < 40; ++i) {
    usage = MustTool("sandbox_usage", {{"sandbox", id}});
    if (usage.is_object() && usage["samples"].size() >= 2) break;
    std::this_thread::sleep_for(250ms);
  }
  ASSERT_TRUE(usage.is_object());
  ASSERT_GE(usage["samples"].size(), 2u) << usage.dump();
  EXPECT_EQ(usage["sandbox"], id);
  EXPECT_EQ(usage["interval_s"], 2);
  const json& last = usage["samples"].back();
  EXPECT_GT(last["memory_bytes"].get<uint64_t>(), 0u) << usage.dump();
  EXPECT_GE(last["pids"].get<uint64_t>(), 1u) << usage.dump();
  EXPECT_GE(last["cpu_cores"].get<double>(), 0.0);
  // Egress none: no network, nothing through the proxy.
  EXPECT_EQ(last["net_rx_bytes"], 0) << usage.dump();
  EXPECT_EQ(last["net_tx_bytes"], 0) << usage.dump();
  EXPECT_FALSE(usage.contains("network")) << usage.dump();
  EXPECT_EQ(MustTool("sandbox_usage", {{"sandbox", id}, {"resolution", "1m"}})["interval_s"], 60);
  HttpResponse missing = Tool("sandbox_usage", {{"sandbox", "sb-0000000000000000"}});
  EXPECT_EQ(missing.status, 404) << missing.Describe();
}

}  // namespace
}  // namespace isb::e2e
