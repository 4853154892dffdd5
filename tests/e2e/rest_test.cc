// REST with real curl: the whole sandbox lifecycle over the unix socket and over TCP, the token, OpenAPI, streaming.
#include <regex>
#include <thread>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

using Clock = std::chrono::steady_clock;

class RestTest : public E2eTest {
 protected:
  enum class Via { kUnixSocket, kTcpWithToken };

  CurlResult Call(Via via, const std::string& tool, const json& input) {
    std::string path = "/api/v1/tools/" + tool;
    return via == Via::kUnixSocket ? CurlUnix("POST", path, input.dump()) : CurlTcp("POST", path, input.dump());
  }

  // The result of a call that must succeed with 200.
  json Ok(Via via, const std::string& tool, const json& input) {
    CurlResult r = Call(via, tool, input);
    EXPECT_EQ(r.proc.exit_status, 0) << r.Describe();
    EXPECT_EQ(r.http.status, 200) << tool << " " << input.dump() << ": " << r.Describe();
    EXPECT_EQ(r.http.Header("content-type"), "application/json") << r.Describe();
    if (!r.http.j.is_object() || !r.http.j.contains("result")) {
      ADD_FAILURE() << tool << ": no result in " << r.Describe();
      return json::object();
    }
    EXPECT_EQ(r.http.j.size(), 1u) << "a success carries only \"result\": " << r.Describe();
    return r.http.j["result"];
  }

  // A call that must fail with exactly this status and error code.
  void Fails(Via via, const std::string& tool, const json& input, int status, const std::string& code) {
    CurlResult r = Call(via, tool, input);
    EXPECT_EQ(r.http.status, status) << tool << " " << input.dump() << ": " << r.Describe();
    EXPECT_EQ(r.http.j.value("error", ""), code) << r.Describe();
    EXPECT_TRUE(r.http.j.contains("message") && r.http.j["message"].is_string()) << r.Describe();
  }

  void Lifecycle(Via via, const std::string& name);
};

void RestTest::Lifecycle(Via via, const std::string& name) {
  // create
  json created = Ok(via, "sandbox_create",
                    {{"name", name},
                     {"mem_limit", "64M"},
                     {"pids", 32},
                     {"labels", {{"suite", "e2e"}, {"via", name}}},
                     {"environment", {{"GREETING", "hello from " + name}}}});
  ASSERT_TRUE(created.contains("id")) << created.dump();
  const std::string id = created["id"].get<std::string>();
  EXPECT_TRUE(std::regex_match(id, std::regex("sb-[0-9a-f]{16}"))) << id;
  EXPECT_EQ(created["name"], name);
  EXPECT_EQ(created["state"], "running");
  EXPECT_EQ(created["spec"]["mem_limit"], 64 << 20);
  EXPECT_EQ(created["spec"]["pids"], 32);
  EXPECT_EQ(created["spec"]["expires"], 86400);
  EXPECT_EQ(created["spec"]["idle_timeout"], 7200);
  EXPECT_EQ(created["expires_at"].get<int64_t>() - created["created_at"].get<int64_t>(), 86400);

  // exec: stdout, stderr and the exit code exactly, separately; by id and by name
  json ran =
      Ok(via, "sandbox_exec",
         {{"sandbox", id}, {"argv", {"sh", "-c", "printf '%s' \"$GREETING\"; printf 'to stderr\\n' >&2; exit 42"}}});
  EXPECT_EQ(ran["exit_code"], 42) << ran.dump();
  EXPECT_EQ(ran["stdout"], "hello from " + name) << ran.dump();
  EXPECT_EQ(ran["stderr"], "to stderr\n") << ran.dump();
  EXPECT_EQ(ran["signal"], 0);
  EXPECT_EQ(ran["timed_out"], false);
  EXPECT_EQ(ran["stdout_truncated"], false);
  EXPECT_EQ(ran["stderr_truncated"], false);
  EXPECT_TRUE(ran["duration_ms"].is_number()) << ran.dump();
  ran = Ok(via, "sandbox_exec", {{"sandbox", name}, {"argv", {"cat"}}, {"stdin", "piped in"}});
  EXPECT_EQ(ran["exit_code"], 0) << ran.dump();
  EXPECT_EQ(ran["stdout"], "piped in") << ran.dump();
  ran = Ok(via, "sandbox_exec", {{"sandbox", id}, {"argv", {"/no/such/program"}}});
  EXPECT_EQ(ran["exit_code"], 127) << ran.dump();

  // file write/read, binary-safe: every byte value, a mode, and the sandbox sees the same bytes
  std::string blob;
  for (int i = 0; i < 256; ++i) blob.push_back(static_cast<char>(i));
  blob += std::string("\0\r\n\xff", 4);
  json wrote =
      Ok(via, "sandbox_file_write",
         {{"sandbox", id}, {"path", "/root/e2e/../blob.bin"}, {"content_base64", Base64(blob)}, {"mode", "0750"}});
  EXPECT_EQ(wrote, json({{"path", "/root/blob.bin"}, {"size", blob.size()}, {"mode", "0750"}})) << wrote.dump();
  json read = Ok(via, "sandbox_file_read", {{"sandbox", id}, {"path", "/root/blob.bin"}});
  EXPECT_EQ(
      read,
      json({{"path", "/root/blob.bin"}, {"size", blob.size()}, {"mode", "0750"}, {"content_base64", Base64(blob)}}));
  ran = Ok(via, "sandbox_exec",
           {{"sandbox", id}, {"argv", {"sh", "-c", "wc -c < /root/blob.bin; stat -c %a /root/blob.bin"}}});
  EXPECT_EQ(ran["stdout"], std::to_string(blob.size()) + "\n750\n") << ran.dump();
  Fails(via, "sandbox_file_read", {{"sandbox", id}, {"path", "/no/such/file"}}, 404, "not_found");

  // get: state and usage
  json got = Ok(via, "sandbox_get", {{"sandbox", id}});
  EXPECT_EQ(got["id"], id);
  EXPECT_EQ(got["state"], "running");
  EXPECT_GE(got["usage"]["pids"].get<int>(), 1) << got.dump();
  EXPECT_GT(got["usage"]["memory_bytes"].get<int64_t>(), 0) << got.dump();
  EXPECT_GT(got["usage"]["cpu_usec"].get<int64_t>(), 0) << got.dump();
  // The caller's labels, and isb's own: the org it belongs to and who created it over which surface.
  std::string owner = via == Via::kUnixSocket ? "unix:superadmin" : "rest:token:1";
  EXPECT_EQ(got["spec"]["labels"],
            json({{"suite", "e2e"}, {"via", name}, {"isb.org", "default"}, {"isb.owner", owner}}));

  // stop: no process left in it, exec refused with 409
  pid_t init = SandboxInitPid(id);
  EXPECT_GT(init, 0) << "no isb-init on the host in the cgroup of " << id;
  json stopped = Ok(via, "sandbox_stop", {{"sandbox", id}});
  EXPECT_EQ(stopped["state"], "stopped") << stopped.dump();
  EXPECT_EQ(SandboxInitPid(id), 0) << "the stopped sandbox's init is still alive";
  Fails(via, "sandbox_exec", {{"sandbox", id}, {"argv", {"true"}}}, 409, "conflict");
  EXPECT_EQ(Ok(via, "sandbox_get", {{"sandbox", id}})["state"], "stopped");

  // start: files persisted
  json started = Ok(via, "sandbox_start", {{"sandbox", id}});
  EXPECT_EQ(started["state"], "running") << started.dump();
  EXPECT_EQ(Ok(via, "sandbox_file_read", {{"sandbox", id}, {"path", "/root/blob.bin"}})["content_base64"],
            Base64(blob));
  ran = Ok(via, "sandbox_exec", {{"sandbox", id}, {"argv", {"cat", "/root/blob.bin"}}, {"encoding", "base64"}});
  EXPECT_EQ(ran["stdout_base64"], Base64(blob)) << ran.dump();

  // extend: exactly `by` later
  json extended = Ok(via, "sandbox_extend", {{"sandbox", id}, {"by", 3600}});
  EXPECT_EQ(extended["expires_at"].get<int64_t>(), created["expires_at"].get<int64_t>() + 3600) << extended.dump();

  // list, and its label filter
  json listed = Ok(via, "sandbox_list", json::object());
  bool found = false;
  for (const auto& s : listed["sandboxes"]) found = found || s["id"] == id;
  EXPECT_TRUE(found) << listed.dump();
  listed = Ok(via, "sandbox_list", {{"labels", {{"via", name}}}});
  ASSERT_EQ(listed["sandboxes"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["sandboxes"][0]["id"], id);
  EXPECT_EQ(Ok(via, "sandbox_list", {{"labels", {{"via", "nobody"}}}})["sandboxes"], json::array());

  // remove; afterwards it does not exist
  EXPECT_EQ(Ok(via, "sandbox_remove", {{"sandbox", id}}), json({{"sandbox", id}, {"removed", true}}));
  EXPECT_EQ(SandboxInitPid(id), 0);
  Fails(via, "sandbox_get", {{"sandbox", id}}, 404, "not_found");
  Fails(via, "sandbox_remove", {{"sandbox", id}}, 404, "not_found");
  Fails(via, "sandbox_exec", {{"sandbox", name}, {"argv", {"true"}}}, 404, "not_found");
}

TEST_F(RestTest, LifecycleOverTheUnixSocket) { Lifecycle(Via::kUnixSocket, "e2e-rest-unix"); }

TEST_F(RestTest, LifecycleOverTcpWithTheBearerToken) { Lifecycle(Via::kTcpWithToken, "e2e-rest-tcp"); }

TEST_F(RestTest, TcpNeedsTheBearerToken) {
  const std::string body = json({{"argv", {"true"}}}).dump();
  for (const std::string& bearer : {std::string(), std::string("isb_dev_wrong"), token() + "x"}) {
    CurlResult r = CurlTcp("POST", "/api/v1/tools/sandbox_list", "{}", {}, bearer);
    EXPECT_EQ(r.http.status, 401) << "bearer '" << bearer << "': " << r.Describe();
    EXPECT_EQ(r.http.j.value("error", ""), "unauthenticated") << r.Describe();
    EXPECT_EQ(r.http.Header("www-authenticate"), "Bearer realm=\"isb\"") << r.Describe();
  }
  CurlResult basic = CurlTcp("GET", "/api/v1/tools", "", {"Authorization: Basic " + Base64("a:b")}, "");
  EXPECT_EQ(basic.http.status, 401) << basic.Describe();
  // Not even a sandbox can be created, nor the tools listed, without it; /healthz is open.
  EXPECT_EQ(CurlTcp("POST", "/api/v1/tools/sandbox_create", "{}", {}, "").http.status, 401);
  EXPECT_EQ(CurlTcp("GET", "/api/v1/tools", "", {}, "").http.status, 401);
  EXPECT_EQ(CurlTcp("POST", "/mcp", "{}", {}, "").http.status, 401);
  EXPECT_EQ(CurlTcp("GET", "/healthz", "", {}, "").http.status, 200);
  EXPECT_EQ(Tool("sandbox_list", json::object()).j["result"]["sandboxes"], json::array());
  // With it, the same call works.
  CurlResult ok = CurlTcp("POST", "/api/v1/tools/sandbox_list", "{}");
  EXPECT_EQ(ok.http.status, 200) << ok.Describe();
  EXPECT_EQ(ok.http.j, json({{"result", {{"sandboxes", json::array()}}}})) << ok.Describe();
}

TEST_F(RestTest, OpenApiAndToolListNameEveryTool) {
  CurlResult r = CurlTcp("GET", "/api/v1/openapi.json");
  ASSERT_EQ(r.http.status, 200) << r.Describe();
  EXPECT_EQ(r.http.j["openapi"], "3.1.0");
  for (const auto& tool : kAllTools) {
    const json& paths = r.http.j["paths"];
    std::string path = "/api/v1/tools/" + tool;
    ASSERT_TRUE(paths.contains(path)) << path << " missing from the OpenAPI document";
    EXPECT_EQ(paths[path]["post"]["operationId"], tool);
    EXPECT_TRUE(paths[path]["post"]["requestBody"]["content"]["application/json"]["schema"].is_object());
    EXPECT_TRUE(paths[path]["post"]["responses"].contains("200"));
    EXPECT_TRUE(paths[path]["post"]["responses"].contains("400"));
  }
  size_t tool_paths = 0;
  for (const auto& [p, v] : r.http.j["paths"].items()) tool_paths += p.rfind("/api/v1/tools/", 0) == 0;
  EXPECT_EQ(tool_paths, kAllTools.size()) << "the OpenAPI document lists tools that do not exist";

  CurlResult tools = CurlUnix("GET", "/api/v1/tools");
  ASSERT_EQ(tools.http.status, 200) << tools.Describe();
  std::set<std::string> names;
  for (const auto& t : tools.http.j["tools"]) {
    names.insert(t["name"].get<std::string>());
    EXPECT_TRUE(t["inputSchema"].is_object()) << t.dump();
    EXPECT_TRUE(t["outputSchema"].is_object()) << t.dump();
  }
  EXPECT_EQ(names, std::set<std::string>(kAllTools.begin(), kAllTools.end()));
}

// SSE events (event, data) in order, from a text/event-stream body.
std::vector<std::pair<std::string, json>> SseEvents(const std::string& body) {
  std::vector<std::pair<std::string, json>> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    std::string block = body.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? body.size() : end + 2;
    std::string event = "message", data;
    size_t lp = 0;
    while (lp < block.size()) {
      size_t nl = block.find('\n', lp);
      std::string line = block.substr(lp, nl == std::string::npos ? std::string::npos : nl - lp);
      lp = nl == std::string::npos ? block.size() : nl + 1;
      if (line.rfind("event: ", 0) == 0) event = line.substr(7);
      if (line.rfind("data: ", 0) == 0) data += line.substr(6);
    }
    if (!data.empty()) out.emplace_back(event, json::parse(data, nullptr, false));
  }
  return out;
}

TEST_F(RestTest, StreamingExecDeliversOutputBeforeTheResult) {
  std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  json in = {{"sandbox", id}, {"argv", {"sh", "-c", "echo a; sleep 0.5; echo b >&2; echo c"}}};

  // curl: the events, in order. stdout and stderr are separate pipes, so only the order within each stream and
  // against the result is defined (and "a" comes half a second before anything else).
  CurlResult r = CurlUnix("POST", "/api/v1/tools/sandbox_exec?stream=1", in.dump(), {}, {"-N"});
  ASSERT_EQ(r.http.status, 200) << r.Describe();
  EXPECT_EQ(r.http.Header("content-type"), "text/event-stream");
  auto events = SseEvents(r.http.body);
  ASSERT_EQ(events.size(), 4u) << r.http.body;
  EXPECT_EQ(events[0], std::make_pair(std::string("stdout"), json({{"data", "a\n"}}))) << r.http.body;
  std::vector<json> out, err;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    EXPECT_TRUE(events[i].first == "stdout" || events[i].first == "stderr") << r.http.body;
    (events[i].first == "stdout" ? out : err).push_back(events[i].second);
  }
  EXPECT_EQ(out, std::vector<json>({{{"data", "a\n"}}, {{"data", "c\n"}}})) << r.http.body;
  EXPECT_EQ(err, std::vector<json>({{{"data", "b\n"}}})) << r.http.body;
  EXPECT_EQ(events[3].first, "result");
  EXPECT_EQ(events[3].second["result"]["exit_code"], 0);
  EXPECT_EQ(events[3].second["result"]["stdout"], "a\nc\n");
  EXPECT_EQ(events[3].second["result"]["stderr"], "b\n");

  // Over TCP too, with the Accept header instead of ?stream=1; and the first event arrives while the command is
  // still running, not with the result.
  RawConnection c(tcp_endpoint());
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(c.Send(BuildRequest("POST", "/api/v1/tools/sandbox_exec", in.dump(),
                                  {"Authorization: Bearer " + token(), "Accept: text/event-stream"})));
  Clock::time_point first_a{}, result_at{};
  std::string seen;
  std::string raw = c.ReadAll(30s, [&](std::string_view piece) {
    seen.append(piece);
    if (first_a == Clock::time_point{} && seen.find("event: stdout") != std::string::npos) first_a = Clock::now();
    if (result_at == Clock::time_point{} && seen.find("event: result") != std::string::npos) result_at = Clock::now();
  });
  HttpResponse h = ParseHttpResponse(raw);
  ExpectAudit("the streamed exec over TCP", {ByToken("rest", "sandbox_exec")});
  ASSERT_EQ(h.status, 200) << h.Describe();
  ASSERT_NE(first_a, Clock::time_point{}) << h.body;
  ASSERT_NE(result_at, Clock::time_point{}) << h.body;
  EXPECT_GE(result_at - first_a, 300ms) << "stdout was not streamed: it came with the result";
  EXPECT_EQ(SseEvents(h.body).size(), 4u) << h.body;
}

// A streaming caller that hangs up ends its command: the daemon notices within about a second (it writes SSE
// comments while the command is silent) and init kills the command's process group. The sandbox lives on.
TEST_F(RestTest, StreamingCallerThatHangsUpEndsItsCommand) {
  std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  json in = {{"sandbox", id}, {"argv", {"sh", "-c", "echo started; exec sleep 30"}}};
  {
    RawConnection c(tcp_endpoint());
    ASSERT_TRUE(c.ok()) << c.error();
    ASSERT_TRUE(c.Send(
        BuildRequest("POST", "/api/v1/tools/sandbox_exec?stream=1", in.dump(), {"Authorization: Bearer " + token()})));
    std::string seen;
    c.ReadAll(1500ms, [&](std::string_view piece) { seen.append(piece); });
    c.Close();
    // Its outcome is the daemon's to say (the command was cut short), but the call is recorded.
    ExpectAudit("the streamed exec whose caller hung up", {ByToken("rest", "sandbox_exec", "")});
    ASSERT_NE(seen.find("started"), std::string::npos) << seen;
  }
  std::string procs;
  for (int i = 0; i < 40; ++i) {
    json r = Exec(id, {"sh", "-c", "for p in /proc/[0-9]*; do cat $p/comm; done"});
    procs = r.value("stdout", "");
    if (procs.find("sleep") == std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(procs.find("sleep"), std::string::npos) << "the command outlived its caller:\n" << procs;
  EXPECT_EQ(Exec(id, {"true"}).value("exit_code", -1), 0);
}

}  // namespace
}  // namespace isb::e2e
