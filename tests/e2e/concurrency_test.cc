// Many clients at once: 50 concurrent creates, 200 concurrent execs, and clients that hang up mid-create.
#include <set>
#include <thread>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

using Clock = std::chrono::steady_clock;

class ConcurrencyTest : public E2eTest {
 protected:
  // Runs fn(0..n-1) on n threads at once; each makes its own connection.
  template <class Fn>
  static void OnThreads(int n, Fn fn) {
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) threads.emplace_back(fn, i);
    for (auto& t : threads) t.join();
  }

  HttpResponse Post(const std::string& tool, const json& input) { return Tool(tool, input, {}, 120s); }
};

TEST_F(ConcurrencyTest, FiftyCreatesThenTwoHundredExecsThenRemoves) {
  constexpr int kSandboxes = 50, kExecs = 200;
  std::vector<HttpResponse> created(kSandboxes);
  OnThreads(kSandboxes, [&](int i) {
    created[i] = Post("sandbox_create", {{"mem_limit", "64M"}, {"labels", {{"n", std::to_string(i)}}}});
  });
  std::vector<std::string> ids;
  for (int i = 0; i < kSandboxes; ++i) {
    ASSERT_EQ(created[i].status, 200) << "create #" << i << ": " << created[i].Describe();
    ASSERT_EQ(created[i].j["result"]["state"], "running") << created[i].Describe();
    EXPECT_EQ(created[i].j["result"]["spec"]["labels"]["n"], std::to_string(i));
    ids.push_back(created[i].j["result"]["id"].get<std::string>());
  }
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size()) << "ids are not unique";
  EXPECT_EQ(MustTool("sandbox_list", json::object())["sandboxes"].size(), static_cast<size_t>(kSandboxes));

  std::vector<HttpResponse> ran(kExecs);
  OnThreads(kExecs, [&](int i) {
    ran[i] = Post(
        "sandbox_exec",
        {{"sandbox", ids[i % kSandboxes]},
         {"argv", {"sh", "-c", "printf '%s:%s' \"$1\" \"$(hostname)\"; exit $(($1 % 5))", "sh", std::to_string(i)}}});
  });
  for (int i = 0; i < kExecs; ++i) {
    ASSERT_EQ(ran[i].status, 200) << "exec #" << i << ": " << ran[i].Describe();
    EXPECT_EQ(ran[i].j["result"]["stdout"], std::to_string(i) + ":sandbox") << ran[i].Describe();
    EXPECT_EQ(ran[i].j["result"]["exit_code"], i % 5) << ran[i].Describe();
  }

  std::vector<HttpResponse> removed(kSandboxes);
  OnThreads(kSandboxes, [&](int i) { removed[i] = Post("sandbox_remove", {{"sandbox", ids[i]}}); });
  for (int i = 0; i < kSandboxes; ++i) EXPECT_EQ(removed[i].status, 200) << removed[i].Describe();
  EXPECT_EQ(MustTool("sandbox_list", json::object())["sandboxes"], json::array());
  for (const auto& id : ids) EXPECT_EQ(SandboxInitPid(id), 0) << id;
}

TEST_F(ConcurrencyTest, ClientsThatHangUpMidCreateLeaveOnlyHealthySandboxes) {
  // Eight clients send a whole create and hang up before the answer; one sends half a body and hangs up.
  const std::string body = json({{"mem_limit", "64M"}, {"labels", {{"hung-up", "yes"}}}}).dump();
  OnThreads(8, [&](int i) {
    Endpoint ep = i % 2 == 0 ? unix_endpoint() : tcp_endpoint();
    std::vector<std::string> auth;
    if (i % 2 == 1) auth.push_back("Authorization: Bearer " + token());
    RawConnection c(ep);
    c.Send(BuildRequest("POST", "/api/v1/tools/sandbox_create", body, auth));
    c.Close();
  });
  // Each whole create may have been carried out (and recorded) or not; the half-sent one calls nothing.
  std::vector<ExpectedRow> hung_up;
  for (int i = 0; i < 8; ++i) {
    hung_up.push_back(i % 2 == 0 ? Unix("sandbox_create") : ByToken("rest", "sandbox_create"));
    hung_up.back().rows = ExpectedRow::Rows::kMaybe;
  }
  ExpectAudit("a create whose client hung up", hung_up);
  {
    RawConnection c(unix_endpoint());
    std::string whole = BuildRequest("POST", "/api/v1/tools/sandbox_create", body);
    c.Send(whole.substr(0, whole.size() - body.size() / 2));
    c.Close();
  }

  // Let the daemon finish what it started: the list stops changing.
  size_t count = 0;
  auto stable_since = Clock::now();
  for (auto until = Clock::now() + 30s; Clock::now() < until; std::this_thread::sleep_for(100ms)) {
    json list = MustTool("sandbox_list", json::object());
    size_t n = list.is_object() ? list["sandboxes"].size() : 0;
    if (n != count) {
      count = n;
      stable_since = Clock::now();
    } else if (Clock::now() - stable_since > 1500ms) {
      break;
    }
  }
  EXPECT_LE(count, 8u) << "a half-sent create must not make a sandbox";

  // Whatever exists is whole: running, and exec works in it.
  json list = MustTool("sandbox_list", json::object());
  for (const auto& sb : list["sandboxes"]) {
    std::string id = sb["id"].get<std::string>();
    EXPECT_EQ(sb["state"], "running") << sb.dump();
    EXPECT_EQ(sb["spec"]["labels"]["hung-up"], "yes") << sb.dump();
    json ran = Exec(id, {"echo", "whole"});
    EXPECT_EQ(ran["stdout"], "whole\n") << id << ": " << ran.dump();
    EXPECT_GT(SandboxInitPid(id), 0) << id;
  }
  for (const auto& sb : list["sandboxes"]) MustTool("sandbox_remove", {{"sandbox", sb["id"]}});
  EXPECT_EQ(MustTool("sandbox_list", json::object())["sandboxes"], json::array());
  // The daemon is unharmed.
  EXPECT_EQ(Http(tcp_endpoint(), "GET", "/healthz").status, 200);
}

}  // namespace
}  // namespace isb::e2e
