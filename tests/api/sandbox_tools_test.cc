// The sandbox tools over a fake: defaults, limits, encodings, streaming, and outputs that match their schemas.
#include "api/sandbox_tools.h"
#include "api/principals.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <filesystem>
#include <future>
#include <thread>
#include <algorithm>

#include "api/fake_sandboxes.h"
#include "api/json_schema.h"
#include "api/json_util.h"
#include "api/spec_policy.h"

namespace isb::api {
namespace {

class SandboxToolsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(AddSandboxTools(registry, fake).ok()); }

  // Calls a tool, expects success and checks the result against the tool's output schema.
  json Ok(const std::string& tool, const json& input, const CallContext& ctx = HostContext()) {
    auto r = registry.Call(tool, input, ctx);
    EXPECT_TRUE(r.ok()) << tool << ": " << (r.ok() ? "" : r.error().message);
    if (!r.ok()) return nullptr;
    Status s = Validate(registry.Find(tool)->output_schema, *r);
    EXPECT_TRUE(s.ok()) << tool << " output: " << (s.ok() ? "" : s.error().message);
    return *r;
  }
  Error Fail(const std::string& tool, const json& input, const CallContext& ctx = HostContext()) {
    auto r = registry.Call(tool, input, ctx);
    EXPECT_FALSE(r.ok()) << tool << " unexpectedly succeeded";
    return r.ok() ? Error{} : r.error();
  }
  std::string Create(const json& spec = json::object()) { return Ok("sandbox_create", spec)["id"]; }

  FakeSandboxes fake;
  Registry registry;
};

TEST_F(SandboxToolsTest, RegistersAllTools) {
  for (const char* name : {"sandbox_create", "sandbox_exec", "sandbox_file_read", "sandbox_file_write", "sandbox_list",
                           "sandbox_get", "sandbox_stop", "sandbox_start", "sandbox_extend", "sandbox_remove"}) {
    const Tool* t = registry.Find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_FALSE(t->description.empty());
  }
  EXPECT_TRUE(registry.Find("sandbox_get")->annotations.read_only);
  EXPECT_TRUE(registry.Find("sandbox_remove")->annotations.destructive);
  EXPECT_TRUE(registry.Find("sandbox_exec")->streams);
}

// A caller sends at most 64 labels and 256 variables; what the daemon returns also holds what it adds (isb.org and
// isb.owner, the proxy and trust-store variables), and still matches the tool's published output schema.
TEST_F(SandboxToolsTest, AResultWithTheDaemonsOwnLabelsAndVariablesMatchesItsSchema) {
  json labels = json::object(), env = json::object();
  for (int i = 0; i < 64; ++i) labels["l" + std::to_string(i)] = "v";
  for (int i = 0; i < 256; ++i) env["V" + std::to_string(i)] = "v";
  json info = Ok("sandbox_create", {{"labels", labels}, {"environment", env}});
  info["spec"]["labels"]["isb.org"] = "acme";
  info["spec"]["labels"]["isb.owner"] = "user:alice";
  for (const char* k : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "SSL_CERT_FILE"})
    info["spec"]["environment"][k] = "x";
  for (const char* tool : {"sandbox_create", "sandbox_get"}) {
    Status st = Validate(registry.Find(tool)->output_schema, info);
    EXPECT_TRUE(st.ok()) << tool << ": " << st.error().message;
  }
  labels["one-more"] = "v";
  EXPECT_EQ(Fail("sandbox_create", {{"labels", labels}}).code, Code::kInvalidArgument);
}

TEST_F(SandboxToolsTest, CreateAppliesDefaultsAndParsesFields) {
  json info = Ok("sandbox_create", json::object());
  EXPECT_EQ(info["state"], "running");
  EXPECT_EQ(info["spec"]["expires"], 86400);
  EXPECT_EQ(info["spec"]["idle_timeout"], 7200);
  EXPECT_EQ(info["spec"]["mem_limit"], 512 << 20);
  EXPECT_EQ(info["spec"]["disk"], 2ull << 30);

  json full = Ok("sandbox_create", json::parse(R"({"name":"web-1","cpus":0.5,"mem_limit":"1G","disk":"64M","pids":10,
      "environment":{"A":"b"},"working_dir":"/srv/../work","user":"1000:1000","labels":{"team":"x"},
      "egress":"none","expires":3600,"idle_timeout":600})"));
  EXPECT_EQ(full["name"], "web-1");
  EXPECT_EQ(full["spec"]["mem_limit"], 1ull << 30);
  EXPECT_EQ(full["spec"]["disk"], 64u << 20);
  EXPECT_EQ(full["spec"]["working_dir"], "/work");
  EXPECT_EQ(full["spec"]["environment"]["A"], "b");
  EXPECT_EQ(fake.sandboxes.begin()->second.spec.expires.count(), 86400);
}

TEST_F(SandboxToolsTest, CreateRejectsBadSpecsNamingTheField) {
  EXPECT_EQ(Fail("sandbox_create", {{"cpus", 0}}).message, "cpus: must be >= 0.001");
  EXPECT_EQ(Fail("sandbox_create", {{"expires", 31 * 86400}}).message, "expires: must be <= 2592000");
  EXPECT_EQ(Fail("sandbox_create", {{"egress", 443}}).message,
            "egress: expected string or array or object, got integer");
  EXPECT_EQ(Fail("sandbox_create", {{"foo", 1}}).message, "unknown field 'foo'");
  EXPECT_NE(Fail("sandbox_create", {{"name", "sb-1"}}).message.find("name:"), std::string::npos);
  EXPECT_NE(Fail("sandbox_create", {{"name", "a b"}}).message.find("name:"), std::string::npos);
  EXPECT_NE(Fail("sandbox_create", {{"user", "root"}}).message.find("user:"), std::string::npos);
  EXPECT_NE(Fail("sandbox_create", {{"mem_limit", "lots"}}).message.find("mem_limit:"), std::string::npos);
  EXPECT_NE(Fail("sandbox_create", {{"mem_limit", 100}}).message.find("mem_limit:"), std::string::npos);
  EXPECT_EQ(Fail("sandbox_create", {{"disk", "1M"}}).message, "disk: must be at least 16 MiB (16777216 bytes)");
  EXPECT_EQ(Fail("sandbox_create", {{"mem_limit", -1.0}}).message, "mem_limit: must be at least 4 MiB (4194304 bytes)");
  EXPECT_EQ(Fail("sandbox_create", {{"disk", "2T"}}).message, "disk: must be at most 1 TiB");
  EXPECT_EQ(Fail("sandbox_create", {{"disk", "lots"}}).message.rfind("disk: ", 0), 0u);
  EXPECT_NE(Fail("sandbox_create", {{"environment", {{"A=B", "x"}}}}).message.find("environment:"), std::string::npos);
  Create({{"name", "dup"}});
  EXPECT_EQ(Fail("sandbox_create", {{"name", "dup"}}).code, Code::kConflict);
}

TEST_F(SandboxToolsTest, CreateParsesMountsNamingTheBadOne) {
  json info = Ok("sandbox_create", json::parse(R"({"mounts":[{"source":"/srv/data","target":"/mnt/./data/"},
      {"source":"/srv/cache","target":"/cache","read_only":false}]})"));
  EXPECT_EQ(info["spec"]["mounts"], json::parse(R"([{"source":"/srv/data","target":"/mnt/data","read_only":true},
      {"source":"/srv/cache","target":"/cache","read_only":false}])"));
  EXPECT_EQ(fake.sandboxes.begin()->second.spec.mounts[1], (SpecMount{"/srv/cache", "/cache", false}));
  EXPECT_EQ(Fail("sandbox_create",
                 json::parse(R"({"mounts":[{"source":"/a","target":"/b"},{"source":"/a","target":"/.."}]})"))
                .message,
            "mounts[1].target: must not be /");
  EXPECT_EQ(Fail("sandbox_create", json::parse(R"({"mounts":[{"source":"/a","target":"/proc/x"}]})")).message,
            "mounts[0].target: paths under /proc are refused");
  EXPECT_EQ(Fail("sandbox_create", json::parse(R"({"mounts":[{"source":"a","target":"/b"}]})")).message,
            "mounts[0].source: must be an absolute path");
  EXPECT_EQ(Fail("sandbox_create", json::parse(R"({"mounts":[{"source":"/a"}]})")).message,
            "mounts[0]: missing required field 'target'");
}

TEST_F(SandboxToolsTest, CreateParsesPublishedPorts) {
  json info = Ok("sandbox_create", json::parse(R"({"ports":[{"sandbox_port":8080,"host_port":18080},
      {"sandbox_port":22,"host_port":2222,"host_address":"100.64.1.2"}]})"));
  EXPECT_EQ(info["spec"]["ports"], json::parse(R"([{"sandbox_port":8080,"host_port":18080,"host_address":"127.0.0.2"},
      {"sandbox_port":22,"host_port":2222,"host_address":"100.64.1.2"}])"));
  EXPECT_EQ(Fail("sandbox_create",
                 json::parse(R"({"ports":[{"sandbox_port":1,"host_port":5},{"sandbox_port":2,"host_port":5}]})"))
                .message,
            "ports[1]: 127.0.0.2:5 is published twice");
  EXPECT_EQ(Fail("sandbox_create", json::parse(R"({"ports":[{"sandbox_port":0,"host_port":5}]})")).message,
            "ports[0].sandbox_port: must be >= 1");
  EXPECT_EQ(Fail("sandbox_create", json::parse(R"({"ports":[{"sandbox_port":80}]})")).message,
            "ports[0]: missing required field 'host_port'");
}

TEST_F(SandboxToolsTest, ExecPassesTheRequestAndLimits) {
  std::string id = Create();
  json r = Ok("sandbox_exec",
              {{"sandbox", id}, {"argv", {"echo", "hi"}}, {"stdin", "in"}, {"env", {{"K", "v"}}}, {"workdir", "/tmp"}});
  EXPECT_EQ(r["stdout"], "out: echo hi");
  EXPECT_EQ(r["stderr"], "err");
  EXPECT_EQ(r["exit_code"], 0);
  EXPECT_EQ(fake.last_exec.stdin_data, "in");
  EXPECT_EQ(fake.last_exec.env.at("K"), "v");
  EXPECT_EQ(fake.last_exec.timeout, std::chrono::seconds(60));

  Ok("sandbox_exec", {{"sandbox", id}, {"argv", {"x"}}, {"timeout", 900}, {"stdin_base64", Base64Encode("\x01\x02")}});
  EXPECT_EQ(fake.last_exec.timeout, std::chrono::minutes(15));
  EXPECT_EQ(fake.last_exec.stdin_data, "\x01\x02");

  EXPECT_EQ(Fail("sandbox_exec", {{"sandbox", id}, {"argv", "ls -l"}}).message, "argv: expected array, got string");
  EXPECT_EQ(Fail("sandbox_exec", {{"sandbox", id}, {"argv", {"x"}}, {"timeout", 901}}).message,
            "timeout: must be <= 900");
  EXPECT_EQ(Fail("sandbox_exec", {{"sandbox", id}, {"argv", json::array()}}).message,
            "argv: must have at least 1 items");
  std::string big(kMaxStdinBytes + 1, 'a');
  EXPECT_NE(Fail("sandbox_exec", {{"sandbox", id}, {"argv", {"x"}}, {"stdin_base64", Base64Encode(big)}})
                .message.find("stdin_base64: at most 1048576 bytes"),
            std::string::npos);
  EXPECT_FALSE(registry.Call("sandbox_exec", {{"sandbox", id}, {"argv", {"x"}}, {"stdin", big}}, HostContext()).ok());
  EXPECT_NE(Fail("sandbox_exec", {{"sandbox", id}, {"argv", {"x"}}, {"stdin", "a"}, {"stdin_base64", "YQ"}})
                .message.find("not both"),
            std::string::npos);
  EXPECT_EQ(Fail("sandbox_exec", {{"sandbox", "nope"}, {"argv", {"x"}}}).code, Code::kNotFound);
}

// Detached: the request passed on, the handle returned at once; no timeout unless one is given; what a command
// nobody waits for cannot have is refused by name.
TEST_F(SandboxToolsTest, ADetachedExecReturnsItsLogIdTakesATimeoutAndRefusesStdinAndTty) {
  std::string id = Create();
  json r = Ok("sandbox_exec", {{"sandbox", id}, {"argv", {"sleep", "1"}}, {"detach", true}, {"env", {{"K", "v"}}}});
  EXPECT_EQ(r, json({{"detached", true}, {"log_id", 1}}));
  EXPECT_TRUE(fake.last_detached);
  EXPECT_EQ(fake.last_exec.argv, std::vector<std::string>({"sleep", "1"}));
  EXPECT_EQ(fake.last_exec.env.at("K"), "v");
  EXPECT_TRUE(fake.last_exec.detach);
  EXPECT_EQ(fake.last_exec.timeout, std::chrono::milliseconds(0));  // none: it runs until it exits
  EXPECT_EQ(Ok("sandbox_exec", {{"sandbox", id}, {"argv", {"true"}}, {"detach", true}, {"timeout", 5}})["log_id"], 2);
  EXPECT_EQ(fake.last_exec.timeout, std::chrono::seconds(5));
  // A client that fills in what the schema documents sends no timeout: the schema states no default for it.
  EXPECT_FALSE(registry.Find("sandbox_exec")->input_schema["properties"]["timeout"].contains("default"));
  EXPECT_EQ(Fail("sandbox_exec", {{"sandbox", id}, {"argv", {"x"}}, {"detach", true}, {"timeout", 901}}).message,
            "timeout: must be <= 900");
  EXPECT_EQ(Fail("sandbox_exec", {{"sandbox", id}, {"argv", {"x"}}, {"detach", true}, {"stdin", "a"}}).message,
            "stdin: not with detach (a detached command's stdin is /dev/null)");
  EXPECT_EQ(Fail("sandbox_exec", {{"sandbox", id}, {"argv", {"x"}}, {"detach", true}, {"tty", true}}).message,
            "tty: not with detach (a detached command has no terminal)");
  EXPECT_EQ(Fail("sandbox_exec", {{"sandbox", "nope"}, {"argv", {"x"}}, {"detach", true}}).code, Code::kNotFound);
  EXPECT_EQ(fake.detached, 2);
  // A waited-for exec keeps its default of 60 s.
  Ok("sandbox_exec", {{"sandbox", id}, {"argv", {"true"}}});
  EXPECT_FALSE(fake.last_exec.detach);
  EXPECT_EQ(fake.last_exec.timeout, std::chrono::seconds(60));
}

TEST_F(SandboxToolsTest, LogsGivesChunksWithTheirStreamsExitsAndCursors) {
  std::string id = Create();
  const Tool* tool = registry.Find("sandbox_logs");
  ASSERT_NE(tool, nullptr);
  EXPECT_TRUE(tool->annotations.read_only);
  LogRead read;
  auto chunk = [&read](uint64_t cursor, int log_id, LogChunk::Kind kind) -> LogChunk& {
    LogChunk& c = read.chunks.emplace_back();
    c.cursor = cursor;
    c.log_id = log_id;
    c.kind = kind;
    return c;
  };
  chunk(10, 1, LogChunk::Kind::kStdout).data = "out\n";
  chunk(14, 1, LogChunk::Kind::kStderr).data = "\xff";
  LogChunk& killed = chunk(15, 1, LogChunk::Kind::kExit);
  killed.exit_code = 137;
  killed.signal = 9;
  LogChunk& lost = chunk(16, 2, LogChunk::Kind::kExit);
  lost.exit_code = -1;
  lost.error = "the sandbox is not running";
  LogChunk& timed_out = chunk(17, 3, LogChunk::Kind::kExit);
  timed_out.exit_code = 124;
  timed_out.signal = 9;
  timed_out.timed_out = true;
  read.next = 18;
  read.start = 10;
  read.end = 18;
  read.dropped = 3;
  read.running = 1;
  fake.logs[id] = read;
  json r = Ok("sandbox_logs", {{"sandbox", id}, {"after", 7}});
  EXPECT_EQ(fake.last_after, 7u);
  EXPECT_EQ(fake.last_limit, kMaxLogReadBytes);
  EXPECT_EQ(r["chunks"], json::parse(R"([
    {"cursor": 10, "log_id": 1, "stream": "stdout", "data": "out\n"},
    {"cursor": 14, "log_id": 1, "stream": "stderr", "data": "\ufffd"},
    {"cursor": 15, "log_id": 1, "stream": "exit", "exit_code": 137, "signal": 9},
    {"cursor": 16, "log_id": 2, "stream": "exit", "exit_code": -1, "signal": 0, "error": "the sandbox is not running"},
    {"cursor": 17, "log_id": 3, "stream": "exit", "exit_code": 124, "signal": 9, "timed_out": true}
  ])"));
  EXPECT_EQ(r["next"], 18);
  EXPECT_EQ(r["start"], 10);
  EXPECT_EQ(r["end"], 18);
  EXPECT_EQ(r["dropped"], 3);
  EXPECT_EQ(r["running"], 1);
  r = Ok("sandbox_logs", {{"sandbox", id}, {"limit_bytes", 100}, {"encoding", "base64"}});
  EXPECT_EQ(fake.last_limit, 100u);
  EXPECT_EQ(r["chunks"][1]["data_base64"], Base64Encode("\xff"));
  EXPECT_FALSE(r["chunks"][1].contains("data"));
  EXPECT_EQ(Fail("sandbox_logs", {{"sandbox", id}, {"limit_bytes", kMaxLogReadBytes + 1}}).message,
            "limit_bytes: must be <= 1048576");
  EXPECT_EQ(Fail("sandbox_logs", {{"sandbox", "nope"}}).code, Code::kNotFound);
}

// utf-8: a character the ring stored across two records reads whole, and one cut by the read's end is left to the
// next read; base64 gives the records as they are.
TEST_F(SandboxToolsTest, LogsInUtf8JoinAStreamsRecordsAndSplitNoCharacter) {
  std::string id = Create();
  LogRead read;
  auto chunk = [&read](uint64_t cursor, int log_id, LogChunk::Kind kind, std::string data) {
    LogChunk& c = read.chunks.emplace_back();
    c.cursor = cursor;
    c.log_id = log_id;
    c.kind = kind;
    c.data = std::move(data);
  };
  chunk(0, 1, LogChunk::Kind::kStdout, "a\xE2\x82");  // "a€" across two records
  chunk(3, 1, LogChunk::Kind::kStdout,
        "\xAC"
        "b");
  chunk(5, 1, LogChunk::Kind::kStderr, "\xC3");           // another stream: not joined
  chunk(6, 2, LogChunk::Kind::kStdout, "c\xF0\x9F\x98");  // "c" and three of the four bytes of U+1F600
  read.next = 10;
  read.end = 10;
  fake.logs[id] = read;
  json r = Ok("sandbox_logs", {{"sandbox", id}});
  EXPECT_EQ(r["chunks"], json::parse(R"([
    {"cursor": 0, "log_id": 1, "stream": "stdout", "data": "a\u20acb"},
    {"cursor": 5, "log_id": 1, "stream": "stderr", "data": "\ufffd"},
    {"cursor": 6, "log_id": 2, "stream": "stdout", "data": "c"}
  ])"));
  EXPECT_EQ(r["next"], 7);
  EXPECT_EQ(r["end"], 10);
  r = Ok("sandbox_logs", {{"sandbox", id}, {"encoding", "base64"}});
  EXPECT_EQ(r["chunks"].size(), 4u);
  EXPECT_EQ(r["chunks"][0]["data_base64"], Base64Encode("a\xE2\x82"));
  EXPECT_EQ(r["chunks"][3]["data_base64"], Base64Encode("c\xF0\x9F\x98"));
  EXPECT_EQ(r["next"], 10);

  // Only an incomplete character: left for later (the next read starts at it) ...
  read.chunks.clear();
  chunk(6, 2, LogChunk::Kind::kStdout, "\xF0\x9F\x98");
  read.next = 9;
  fake.logs[id] = read;
  r = Ok("sandbox_logs", {{"sandbox", id}, {"after", 6}});
  EXPECT_EQ(r["chunks"], json::array());
  EXPECT_EQ(r["next"], 6);
  // ... unless the read's limit stopped it there: then it is given as it is, so a reader always moves on.
  r = Ok("sandbox_logs", {{"sandbox", id}, {"after", 6}, {"limit_bytes", 3}});
  EXPECT_EQ(r["chunks"],
            json::parse(R"([{"cursor": 6, "log_id": 2, "stream": "stdout", "data": "\ufffd\ufffd\ufffd"}])"));
  EXPECT_EQ(r["next"], 9);
  // An exit after it: the command will write no more of it.
  LogChunk& exit = read.chunks.emplace_back();
  exit.cursor = 9;
  exit.log_id = 2;
  exit.kind = LogChunk::Kind::kExit;
  read.next = 10;
  fake.logs[id] = read;
  r = Ok("sandbox_logs", {{"sandbox", id}, {"after", 6}});
  EXPECT_EQ(r["chunks"], json::parse(R"([
    {"cursor": 6, "log_id": 2, "stream": "stdout", "data": "\ufffd\ufffd\ufffd"},
    {"cursor": 9, "log_id": 2, "stream": "exit", "exit_code": 0, "signal": 0}
  ])"));
  EXPECT_EQ(r["next"], 10);
}

// A terminal: streaming only, its size only with tty, its session announced and returned, the caller recorded.
TEST_F(SandboxToolsTest, ExecOnATerminal) {
  std::string id = Create();
  json in = {{"sandbox", id}, {"argv", {"sh"}}, {"tty", true}};
  EXPECT_EQ(Fail("sandbox_exec", in).message,
            "tty: needs a streaming call (REST ?stream=1 or Accept: text/event-stream; MCP with a progressToken), "
            "which announces the session to send input to");
  EXPECT_EQ(Fail("sandbox_exec", {{"sandbox", id}, {"argv", {"sh"}}, {"rows", 5}}).message,
            "rows: only with \"tty\": true");
  fake.exec_fn = [](const ExecRequest& req, const OutputSink& sink) -> Result<ExecResult> {
    req.on_session("ts-42");
    sink(1, "hi\r\n");
    ExecResult r;
    r.exit_code = 3;
    r.stdout_data = "hi\r\n";
    return r;
  };
  std::vector<std::pair<std::string, std::string>> events;
  CallContext ctx;
  ctx.identity = UserIn("t1");
  ctx.progress = [&](std::string_view stream, std::string_view chunk) { events.emplace_back(stream, chunk); };
  ctx.cancelled = [] { return false; };
  json r = Ok("sandbox_exec", {{"sandbox", id}, {"argv", {"sh"}}, {"tty", true}, {"rows", 5}, {"cols", 7}}, ctx);
  EXPECT_EQ(r["session"], "ts-42");
  EXPECT_EQ(r["exit_code"], 3);
  EXPECT_EQ(events, (std::vector<std::pair<std::string, std::string>>{{"session", "ts-42"}, {"stdout", "hi\r\n"}}));
  EXPECT_TRUE(fake.last_exec.tty);
  EXPECT_EQ(fake.last_exec.rows, 5);
  EXPECT_EQ(fake.last_exec.cols, 7);
  EXPECT_EQ(fake.last_exec.caller, "default/token:1");
  // Without a terminal implementation every session is unknown.
  EXPECT_EQ(Fail("sandbox_exec_input", {{"sandbox", id}, {"session", "ts-42"}, {"data", "x"}}).message,
            NoTerminalSession("ts-42", id).message);
  EXPECT_EQ(Fail("sandbox_exec_resize", {{"sandbox", id}, {"session", "ts-42"}, {"rows", 0}, {"cols", 1}}).code,
            Code::kInvalidArgument);
}

// Interactive mode is server-only: a REST or MCP caller's input cannot ask for an idle limit or a longer timeout.
TEST_F(SandboxToolsTest, APublicCallerCannotMakeAnExecInteractiveOrLongerThan900Seconds) {
  std::string id = Create();
  fake.exec_fn = [](const ExecRequest& req, const OutputSink&) -> Result<ExecResult> {
    req.on_session("ts-7");
    return ExecResult{};
  };
  CallContext ctx;
  ctx.identity = UserIn("t1");
  ctx.progress = [](std::string_view, std::string_view) {};
  ctx.cancelled = [] { return false; };
  json in = {{"sandbox", id}, {"argv", {"sh"}}, {"tty", true}, {"idle_timeout", 1800}};
  Error idle = Fail("sandbox_exec", in, ctx);
  EXPECT_EQ(idle.code, Code::kInvalidArgument);
  EXPECT_EQ(idle.message, "unknown field 'idle_timeout'");
  EXPECT_EQ(Fail("sandbox_exec", {{"sandbox", id}, {"argv", {"sh"}}, {"tty", true}, {"timeout", 901}}, ctx).message,
            "timeout: must be <= 900");
  EXPECT_EQ(Fail("sandbox_exec", {{"sandbox", id}, {"argv", {"sh"}}, {"tty", true}, {"timeout", 86400}}, ctx).message,
            "timeout: must be <= 900");
  EXPECT_FALSE(registry.Find("sandbox_exec")->input_schema["properties"].contains("idle_timeout"));
  EXPECT_EQ(registry.Find("sandbox_exec")->input_schema["properties"]["timeout"]["maximum"], 900);
  // A terminal without the server's context keeps the public limits.
  Ok("sandbox_exec", {{"sandbox", id}, {"argv", {"sh"}}, {"tty", true}}, ctx);
  EXPECT_EQ(fake.last_exec.idle_timeout, std::chrono::milliseconds(0));
  EXPECT_EQ(fake.last_exec.timeout, std::chrono::seconds(60));
}

// The server's own web terminal sets interactive limits in the context: up to a day, with an idle limit.
TEST_F(SandboxToolsTest, TheServersTerminalContextMakesATtyExecInteractiveForUpToADay) {
  std::string id = Create();
  fake.exec_fn = [](const ExecRequest& req, const OutputSink&) -> Result<ExecResult> {
    if (req.on_session) req.on_session("ts-7");
    return ExecResult{};
  };
  CallContext ctx;
  ctx.identity = UserIn("t1");
  ctx.progress = [](std::string_view, std::string_view) {};
  ctx.cancelled = [] { return false; };
  ctx.interactive = CallContext::Interactive{std::chrono::minutes(30), std::chrono::hours(24)};
  json in = {{"sandbox", id}, {"argv", {"sh"}}, {"tty", true}};
  Ok("sandbox_exec", in, ctx);
  EXPECT_EQ(fake.last_exec.idle_timeout, std::chrono::minutes(30));
  EXPECT_EQ(fake.last_exec.timeout, std::chrono::hours(24));
  // The input's own timeout cannot override the server's.
  in["timeout"] = 5;
  Ok("sandbox_exec", in, ctx);
  EXPECT_EQ(fake.last_exec.timeout, std::chrono::hours(24));
  ctx.interactive->timeout = std::chrono::hours(24) + std::chrono::milliseconds(1);
  EXPECT_EQ(Fail("sandbox_exec", in, ctx).message,
            "timeout: an interactive command's must be between its idle_timeout and 24 hours");
  // Without tty the context changes nothing: the public limits hold.
  Ok("sandbox_exec", {{"sandbox", id}, {"argv", {"sh"}}}, ctx);
  EXPECT_EQ(fake.last_exec.idle_timeout, std::chrono::milliseconds(0));
  EXPECT_EQ(fake.last_exec.timeout, std::chrono::seconds(60));
}

TEST_F(SandboxToolsTest, ExecCapsOutputAndEncodes) {
  std::string id = Create();
  fake.exec_fn = [](const ExecRequest&, const OutputSink&) -> Result<ExecResult> {
    ExecResult r;
    r.stdout_data = std::string(kMaxOutputBytes + 10, 'x');
    r.stderr_data = std::string("\xFF\x00z", 3);
    r.exit_code = 3;
    return r;
  };
  json r = Ok("sandbox_exec", {{"sandbox", id}, {"argv", {"x"}}});
  EXPECT_EQ(r["stdout"].get<std::string>().size(), kMaxOutputBytes);
  EXPECT_EQ(r["stdout_truncated"], true);
  EXPECT_EQ(r["exit_code"], 3);
  json b = Ok("sandbox_exec", {{"sandbox", id}, {"argv", {"x"}}, {"encoding", "base64"}});
  EXPECT_EQ(*Base64Decode(b["stderr_base64"].get<std::string>()), std::string("\xFF\x00z", 3));
  EXPECT_FALSE(b.contains("stdout"));
}

TEST_F(SandboxToolsTest, ExecStreamsWholeCharactersThroughProgress) {
  std::string id = Create();
  fake.exec_fn = [](const ExecRequest&, const OutputSink& sink) -> Result<ExecResult> {
    sink(1, "a\xC3");  // é split across two chunks
    sink(1,
         "\xA9"
         "b");
    sink(2, "e");
    return ExecResult{};
  };
  std::vector<std::pair<std::string, std::string>> got;
  CallContext ctx = HostContext();
  ctx.progress = [&](std::string_view stream, std::string_view chunk) { got.emplace_back(stream, chunk); };
  Ok("sandbox_exec", {{"sandbox", id}, {"argv", {"x"}}}, ctx);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], (std::pair<std::string, std::string>{"stdout", "a"}));
  EXPECT_EQ(got[1], (std::pair<std::string, std::string>{"stdout",
                                                         "\xC3\xA9"
                                                         "b"}));
  EXPECT_EQ(got[2], (std::pair<std::string, std::string>{"stderr", "e"}));
}

TEST_F(SandboxToolsTest, FilesRoundTripInBothEncodings) {
  std::string id = Create({{"name", "f"}});
  std::string bytes("\x00\x01\xFF", 3);
  json w = Ok("sandbox_file_write",
              {{"sandbox", "f"}, {"path", "/tmp/./a/../b"}, {"content_base64", Base64Encode(bytes)}, {"mode", "0755"}});
  EXPECT_EQ(w["path"], "/tmp/b");
  EXPECT_EQ(w["mode"], "0755");
  EXPECT_EQ(fake.files[id + ":/tmp/b"].mode, 0755u);
  json r = Ok("sandbox_file_read", {{"sandbox", id}, {"path", "/tmp/b"}});
  EXPECT_EQ(*Base64Decode(r["content_base64"].get<std::string>()), bytes);
  EXPECT_EQ(r["size"], 3);
  EXPECT_EQ(Fail("sandbox_file_read", {{"sandbox", id}, {"path", "/tmp/b"}, {"encoding", "utf-8"}}).code,
            Code::kInvalidArgument);

  Ok("sandbox_file_write", {{"sandbox", id}, {"path", "/t.txt"}, {"content", "h\xC3\xA9"}, {"mode", 420}});
  json t = Ok("sandbox_file_read", {{"sandbox", id}, {"path", "/t.txt"}, {"encoding", "utf-8"}});
  EXPECT_EQ(t["content"], "h\xC3\xA9");
  EXPECT_EQ(t["mode"], "0644");
}

TEST_F(SandboxToolsTest, FileLimitsAndRefusedPaths) {
  std::string id = Create();
  EXPECT_NE(Fail("sandbox_file_read", {{"sandbox", id}, {"path", "/proc/self/environ"}}).message.find("/proc"),
            std::string::npos);
  EXPECT_FALSE(registry.Call("sandbox_file_read", {{"sandbox", id}, {"path", "/x/../../sys/x"}}, HostContext()).ok());
  EXPECT_FALSE(registry.Call("sandbox_file_read", {{"sandbox", id}, {"path", "/dev"}}, HostContext()).ok());
  EXPECT_NE(Fail("sandbox_file_read", {{"sandbox", id}, {"path", "relative"}}).message.find("absolute"),
            std::string::npos);
  std::string big(kMaxFileWriteBytes + 1, 'a');
  EXPECT_NE(Fail("sandbox_file_write", {{"sandbox", id}, {"path", "/a"}, {"content_base64", Base64Encode(big)}})
                .message.find("at most 2097152 bytes"),
            std::string::npos);
  EXPECT_NE(Fail("sandbox_file_write", {{"sandbox", id}, {"path", "/a"}}).message.find("content"), std::string::npos);
  EXPECT_NE(Fail("sandbox_file_write", {{"sandbox", id}, {"path", "/a"}, {"content", ""}, {"mode", "0999"}})
                .message.find("mode:"),
            std::string::npos);
  fake.files[id + ":/huge"] = FileData{std::string(kMaxFileReadBytes + 1, 'a'), 0644};
  EXPECT_EQ(Fail("sandbox_file_read", {{"sandbox", id}, {"path", "/huge"}}).code, Code::kTooLarge);
}

TEST_F(SandboxToolsTest, Lifecycle) {
  std::string a = Create({{"labels", {{"team", "a"}}}});
  Create({{"labels", {{"team", "b"}}}});
  EXPECT_EQ(Ok("sandbox_list", json::object())["sandboxes"].size(), 2u);
  json only_a = Ok("sandbox_list", {{"labels", {{"team", "a"}}}});
  ASSERT_EQ(only_a["sandboxes"].size(), 1u);
  EXPECT_EQ(only_a["sandboxes"][0]["id"], a);
  EXPECT_EQ(Ok("sandbox_get", {{"sandbox", a}})["id"], a);
  EXPECT_EQ(Ok("sandbox_stop", {{"sandbox", a}})["state"], "stopped");
  EXPECT_EQ(Fail("sandbox_exec", {{"sandbox", a}, {"argv", {"x"}}}).code, Code::kConflict);
  EXPECT_EQ(Ok("sandbox_start", {{"sandbox", a}})["state"], "running");
  int64_t before = Ok("sandbox_get", {{"sandbox", a}})["expires_at"];
  EXPECT_EQ(Ok("sandbox_extend", {{"sandbox", a}, {"by", 3600}})["expires_at"], before + 3600);
  EXPECT_EQ(Fail("sandbox_extend", {{"sandbox", a}, {"by", 0}}).message, "by: must be >= 1");
  EXPECT_EQ(Ok("sandbox_remove", {{"sandbox", a}})["removed"], true);
  EXPECT_EQ(Fail("sandbox_get", {{"sandbox", a}}).code, Code::kNotFound);
  EXPECT_EQ(Fail("sandbox_get", json::object()).message, "missing required field 'sandbox'");
}

// Each lifecycle call hands the sandboxes who asked: the caller's subject and kind and the call's request id,
// for the history.
TEST_F(SandboxToolsTest, LifecycleCallsHandDownTheirCallerAndRequestId) {
  CallContext ctx;
  ctx.identity = UserIn("ann", "default", identity::Role::kMember, 7);
  auto as = [&](const std::string& request_id) -> const CallContext& {
    ctx.request_id = request_id;
    return ctx;
  };
  std::string a = Ok("sandbox_create", json::object(), as("r-1"))["id"];
  Ok("sandbox_stop", {{"sandbox", a}}, as("r-2"));
  Ok("sandbox_start", {{"sandbox", a}}, as("r-3"));
  Ok("sandbox_extend", {{"sandbox", a}, {"by", 60}}, as("r-4"));
  Ok("sandbox_remove", {{"sandbox", a}}, HostContext());
  EXPECT_EQ(fake.origins,
            (std::vector<std::string>{"create token:7 token r-1", "stop token:7 token r-2", "start token:7 token r-3",
                                      "extend token:7 token r-4", "remove superadmin superadmin "}));
}

// Each sandbox belongs to the org it was created in; from any other org it does not exist, on every tool.
TEST_F(SandboxToolsTest, AnotherOrgsSandboxIsNotThere) {
  std::string id = Create({{"name", "mine"}});
  json info = Ok("sandbox_get", {{"sandbox", id}});
  EXPECT_EQ(info["spec"]["labels"], json({{"isb.org", "default"}, {"isb.owner", "cli:superadmin"}}));
  CallContext other = HostContext("acme");
  other.identity = UserIn("eve", "acme", identity::Role::kOwner);
  for (const std::string& ref : {id, std::string("mine")}) {
    for (const auto& [tool, extra] : std::vector<std::pair<std::string, json>>{
             {"sandbox_get", {}},
             {"sandbox_stop", {}},
             {"sandbox_start", {}},
             {"sandbox_remove", {}},
             {"sandbox_extend", {{"by", 60}}},
             {"sandbox_exec", {{"argv", {"id"}}}},
             {"sandbox_file_read", {{"path", "/etc/hostname"}}},
             {"sandbox_file_write", {{"path", "/tmp/x"}, {"content", "x"}}},
             {"sandbox_egress_set", {{"egress", "none"}}},
             {"sandbox_exec_resize", {{"session", "ts-1"}, {"rows", 1}, {"cols", 1}}},
             {"sandbox_exec_input", {{"session", "ts-1"}, {"data", "x"}}}}) {
      json in = extra.is_null() ? json::object() : extra;
      in["sandbox"] = ref;
      auto r = registry.Call(tool, in, other);
      ASSERT_FALSE(r.ok()) << tool;
      EXPECT_EQ(r.error().code, Code::kNotFound) << tool;
      EXPECT_EQ(r.error().message, "no sandbox '" + ref + "'") << tool;
    }
  }
  EXPECT_EQ(Ok("sandbox_list", json::object(), other)["sandboxes"], json::array());
  EXPECT_EQ(Ok("sandbox_list", json::object())["sandboxes"].size(), 1u);
  EXPECT_EQ(Ok("sandbox_get", {{"sandbox", id}})["state"], "running");  // untouched
}

// Outside the default org no sandbox runs as the host's root, whoever asks (here the host itself, with no remote-spec
// policy): privileged and a mapping of host id 0 are refused, naming the field; other host ids may be mapped in.
TEST_F(SandboxToolsTest, OnlyTheDefaultOrgHasSandboxesRunningAsTheHostsRoot) {
  const CallContext acme = HostContext("acme");
  auto privileged = registry.Call("sandbox_create", {{"privileged", true}}, acme);
  ASSERT_FALSE(privileged.ok());
  EXPECT_EQ(privileged.error().code, Code::kForbidden);
  EXPECT_EQ(privileged.error().message,
            "privileged: true is refused in org 'acme': only the default org may have sandboxes that run as the "
            "host's root");
  const json root = {{"kind", "uid"}, {"host", 0}, {"sandbox", 0}, {"count", 1}};
  const json user = {{"kind", "both"}, {"host", 1000}, {"sandbox", 1000}, {"count", 1}};
  auto mapped = registry.Call("sandbox_create", {{"idmap", {user, root}}}, acme);
  ASSERT_FALSE(mapped.ok());
  EXPECT_EQ(mapped.error().code, Code::kForbidden);
  EXPECT_EQ(mapped.error().message,
            "idmap[1].host: mapping the host's id 0 is refused in org 'acme': only the default org may have sandboxes "
            "that run as the host's root");
  EXPECT_TRUE(fake.sandboxes.empty());
  Ok("sandbox_create", {{"idmap", {user}}}, acme);
  Ok("sandbox_create", {{"privileged", true}});
  Ok("sandbox_create", {{"idmap", {root}}});
  EXPECT_EQ(fake.sandboxes.size(), 3u);
}

// Names are unique per org: another org may use the same one, and each org's references by name are to its own
// sandbox, on every tool that takes one. Within one org a name is still taken once.
TEST_F(SandboxToolsTest, EachOrgHasItsOwnNames) {
  const CallContext mine = HostContext(), theirs = HostContext("acme");
  const std::string a = Ok("sandbox_create", {{"name", "box"}}, mine)["id"];
  const std::string b = Ok("sandbox_create", {{"name", "box"}}, theirs)["id"];
  ASSERT_NE(a, b);
  for (const CallContext* ctx : {&mine, &theirs}) {
    auto dup = registry.Call("sandbox_create", {{"name", "box"}}, *ctx);
    ASSERT_FALSE(dup.ok());
    EXPECT_EQ(dup.error().code, Code::kConflict);
    EXPECT_EQ(dup.error().message, "name: 'box' is in use");
  }
  const json box = {{"sandbox", "box"}};
  for (const auto& [ctx, id] : {std::pair{&mine, a}, {&theirs, b}}) {
    EXPECT_EQ(Ok("sandbox_get", box, *ctx)["id"], id);
    EXPECT_EQ(Ok("sandbox_extend", {{"sandbox", "box"}, {"by", 60}}, *ctx)["id"], id);
    EXPECT_EQ(Ok("sandbox_egress_set", {{"sandbox", "box"}, {"egress", {"example.com"}}}, *ctx)["id"], id);
    EXPECT_EQ(fake.sandboxes[id].spec.egress, json({"example.com"}));
    Ok("sandbox_exec", {{"sandbox", "box"}, {"argv", {"true"}}}, *ctx);
    EXPECT_EQ(fake.last_exec_id, id);
    Ok("sandbox_file_write", {{"sandbox", "box"}, {"path", "/f"}, {"content", "of " + ctx->org}}, *ctx);
    EXPECT_EQ(fake.files[id + ":/f"].content, "of " + ctx->org);
    EXPECT_EQ(Ok("sandbox_file_read", {{"sandbox", "box"}, {"path", "/f"}, {"encoding", "utf-8"}}, *ctx)["content"],
              "of " + ctx->org);
    EXPECT_EQ(Ok("sandbox_stop", box, *ctx)["id"], id);
    EXPECT_EQ(fake.sandboxes[id].state, "stopped");
    EXPECT_EQ(Ok("sandbox_start", box, *ctx)["id"], id);
    EXPECT_EQ(fake.sandboxes[id].state, "running");
  }
  // Stopping one org's "box" left the other's as it was.
  Ok("sandbox_stop", box, mine);
  EXPECT_EQ(Ok("sandbox_get", box, theirs)["state"], "running");
  Ok("sandbox_remove", box, mine);
  EXPECT_EQ(fake.sandboxes.count(a), 0u);
  EXPECT_EQ(Ok("sandbox_get", box, theirs)["id"], b);
  auto gone = registry.Call("sandbox_get", box, mine);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, Code::kNotFound);
  EXPECT_EQ(gone.error().message, "no sandbox 'box'");
  // The name is free again in the default org only.
  EXPECT_NE(Ok("sandbox_create", {{"name", "box"}}, mine)["id"], b);
}

// ${NAME} in a spec: a remote caller's is always filled from its vars and nothing else (the daemon's HOME is not
// one of them); the host's only when it sends vars.
TEST_F(SandboxToolsTest, CreateFillsVarsFromTheCallerOnly) {
  CallContext remote = HostContext();
  remote.identity = UserIn("ann");
  remote.surface = "rest";
  auto refused = registry.Call("sandbox_create", {{"environment", {{"H", "${HOME}"}}}}, remote);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kInvalidArgument);
  EXPECT_EQ(refused.error().message, "environment.H: ${HOME} is not among the vars sent");
  auto wrong = registry.Call("sandbox_create", {{"working_dir", "/${HOME}"}, {"vars", {{"HOMEDIR", "/root"}}}}, remote);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message, "working_dir: ${HOME} is not among the vars sent");
  EXPECT_TRUE(fake.sandboxes.empty());

  json made = Ok("sandbox_create",
                 {{"name", "app-${N}"},
                  {"environment", {{"H", "${HOME}"}, {"PRICE", "$$5 $${NOT}"}}},
                  {"working_dir", "${HOME}/src"},
                  {"user", "${ID}:${ID}"},
                  {"labels", {{"stage", "${STAGE}"}}},
                  {"vars", {{"N", "7"}, {"HOME", "/home/ann"}, {"ID", "1000"}, {"STAGE", "test"}}}},
                 remote);
  EXPECT_EQ(made["name"], "app-7");
  const SandboxSpec& spec = fake.sandboxes[made["id"]].spec;
  EXPECT_EQ(spec.environment, (std::map<std::string, std::string>{{"H", "/home/ann"}, {"PRICE", "$5 ${NOT}"}}));
  EXPECT_EQ(spec.working_dir, "/home/ann/src");
  EXPECT_EQ(spec.user, "1000:1000");
  EXPECT_EQ(spec.labels.at("stage"), "test");

  // The host: text as sent without vars, filled (from vars alone) with them.
  json literal = Ok("sandbox_create", {{"environment", {{"H", "${HOME}"}, {"P", "$$"}}}});
  EXPECT_EQ(fake.sandboxes[literal["id"]].spec.environment,
            (std::map<std::string, std::string>{{"H", "${HOME}"}, {"P", "$$"}}));
  json host_vars = Ok("sandbox_create", {{"environment", {{"H", "${HOME}"}}}, {"vars", {{"HOME", "/h"}}}});
  EXPECT_EQ(fake.sandboxes[host_vars["id"]].spec.environment.at("H"), "/h");
  EXPECT_EQ(Fail("sandbox_create", {{"environment", {{"H", "${PATH}"}}}, {"vars", json::object()}}).message,
            "environment.H: ${PATH} is not among the vars sent");
}

TEST_F(SandboxToolsTest, CreateParsesPrivilegedAndIdmap) {
  json plain = Ok("sandbox_create", json::object());
  EXPECT_EQ(plain["spec"]["privileged"], false);
  EXPECT_EQ(plain["spec"]["idmap"], "auto");
  json none = Ok("sandbox_create", {{"idmap", "none"}});
  EXPECT_EQ(none["spec"]["idmap"], "auto");
  EXPECT_TRUE(fake.sandboxes[none["id"]].spec.idmap.empty());

  json privileged = Ok("sandbox_create", {{"privileged", true}});
  EXPECT_EQ(privileged["spec"]["privileged"], true);
  EXPECT_TRUE(fake.sandboxes[privileged["id"]].spec.privileged);

  json mapped = Ok("sandbox_create", json::parse(R"({"idmap":[{"kind":"both","host":1000,"sandbox":1000},
      {"kind":"gid","host":27,"sandbox":2000,"count":3}]})"));
  EXPECT_EQ(mapped["spec"]["idmap"], json::parse(R"([{"kind":"both","host":1000,"sandbox":1000,"count":1},
      {"kind":"gid","host":27,"sandbox":2000,"count":3}])"));
  using Kind = engine::IdMapping::Kind;
  EXPECT_EQ(fake.sandboxes[mapped["id"]].spec.idmap,
            (std::vector<engine::IdMapping>{{Kind::kBoth, 1000, 1000, 1}, {Kind::kGid, 27, 2000, 3}}));
}

TEST_F(SandboxToolsTest, CreateRefusesABadIdmapNamingTheField) {
  auto message = [&](const char* input) { return Fail("sandbox_create", json::parse(input)).message; };
  EXPECT_EQ(message(R"({"idmap":"host"})"), "idmap: expected \"auto\", \"none\" or a list of mappings");
  EXPECT_EQ(message(R"({"idmap":[{"kind":"user","host":1,"sandbox":1}]})"),
            "idmap[0].kind: must be one of [\"uid\",\"gid\",\"both\"]");
  EXPECT_EQ(message(R"({"idmap":[{"kind":"uid","host":1,"sandbox":70000}]})"), "idmap[0].sandbox: must be <= 65535");
  EXPECT_EQ(message(R"({"idmap":[{"kind":"uid","host":1,"sandbox":1,"count":0}]})"), "idmap[0].count: must be >= 1");
  EXPECT_EQ(message(R"({"idmap":[{"kind":"uid","host":1,"sandbox":65535,"count":2}]})"),
            "idmap[0].sandbox: ids 65535-65536 must lie within 0-65535");
  EXPECT_EQ(message(R"({"idmap":[{"kind":"uid","host":1,"sandbox":10,"count":5},
      {"kind":"both","host":100,"sandbox":14}]})"),
            "idmap[1].sandbox: ids 14-14 overlap idmap[0]");
  EXPECT_EQ(message(R"({"idmap":[{"kind":"uid","host":268435456,"sandbox":0}]})"),
            "idmap[0].host: ids 268435456-268435456 overlap isb's own sandbox ranges (ids 268435456-536870911)");
  EXPECT_EQ(message(R"({"privileged":true,"idmap":[{"kind":"uid","host":1000,"sandbox":1000}]})"),
            "idmap: a privileged sandbox has no user namespace to map ids into (use one or the other)");
  EXPECT_TRUE(fake.sandboxes.empty());
}

// Remote callers are held to the daemon's flags; the host (the unix socket) and superadmins are not.
TEST(SandboxToolsPolicyTest, PrivilegedAndIdmapFollowTheFlagsForRemoteCallersOnly) {
  const json privileged = {{"privileged", true}};
  const json mapped = json::parse(R"({"idmap":[{"kind":"both","host":1000,"sandbox":1000}]})");
  auto call = [](RemoteSpecPolicy policy, const json& input, const CallContext& ctx) {
    FakeSandboxes fake;
    Registry registry;
    EXPECT_TRUE(AddSandboxTools(registry, fake, {.remote = &policy}).ok());
    return registry.Call("sandbox_create", input, ctx);
  };
  CallContext remote = HostContext();
  remote.identity = UserIn("ann");
  remote.surface = "rest";
  auto refused = call({}, privileged, remote);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kForbidden);
  EXPECT_EQ(refused.error().message, "privileged: true needs --allow-privileged");
  refused = call({}, mapped, remote);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kForbidden);
  EXPECT_EQ(refused.error().message, "idmap: mapping host ids needs --allow-raw");
  RemoteSpecPolicy allow_privileged, allow_raw;
  allow_privileged.allow_privileged = true;
  allow_raw.allow_raw = true;
  EXPECT_TRUE(call(allow_privileged, privileged, remote).ok());
  EXPECT_TRUE(call(allow_raw, mapped, remote).ok());
  EXPECT_TRUE(call({}, {{"idmap", "none"}}, remote).ok());
  // No policy for the host's socket and superadmins.
  EXPECT_TRUE(call({}, privileged, HostContext()).ok());
  EXPECT_TRUE(call({}, mapped, HostContext()).ok());
}

// A directory of the test's own (its real path), removed with everything in it at the end.
struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/isb-roots-XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) dir = std::filesystem::canonical(tmpl).string();
  }
  ~TempDir() {
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
  std::string dir;
};

// An org's own bind roots are its members' only: the create checks the caller's org, and hands the daemon the
// real path it checked, marked as checked.
TEST(SandboxToolsPolicyTest, AMemberMountsUnderItsOwnOrgsBindRootsOnly) {
  TempDir temp;
  ASSERT_FALSE(temp.dir.empty());
  const std::string& dir = temp.dir;
  std::filesystem::create_directories(dir + "/acme");
  RemoteSpecPolicy policy;
  policy.bind_roots = {"acme=" + dir + "/acme"};
  ASSERT_TRUE(PrepareRemoteSpecPolicy(policy).ok());
  FakeSandboxes fake;
  Registry registry;
  ASSERT_TRUE(AddSandboxTools(registry, fake, {.remote = &policy}).ok());
  const json input = {{"mounts", {{{"source", dir + "/acme/"}, {"target", "/mnt/x"}}}}};
  auto in = [](const std::string& org) {
    CallContext ctx = HostContext(org);
    ctx.identity = UserIn("ann", org);
    ctx.surface = "rest";
    return ctx;
  };
  auto beta = registry.Call("sandbox_create", input, in("beta"));
  ASSERT_FALSE(beta.ok());
  EXPECT_EQ(beta.error().code, Code::kForbidden);
  EXPECT_EQ(beta.error().message, "mounts[0].source '" + dir +
                                      "/acme/': host paths need --bind-root DIR or beta=DIR "
                                      "(none is set for org 'beta')");
  auto acme = registry.Call("sandbox_create", input, in("acme"));
  ASSERT_TRUE(acme.ok()) << acme.error().message;
  ASSERT_EQ(fake.sandboxes.size(), 1u);
  const SandboxSpec& made = fake.sandboxes.begin()->second.spec;
  EXPECT_EQ(made.mounts[0].source, dir + "/acme");
  EXPECT_TRUE(made.paths_checked);
}

// An image is seen through the sandbox's id mapping (its root's files the sandbox root's) only when the host or a
// superadmin chose it; a member's image below a bind root is bound as it is, whatever the input says.
TEST(SandboxToolsPolicyTest, OnlyTheHostsImagesAreSeenThroughTheSandboxsIdMapping) {
  TempDir temp;
  ASSERT_FALSE(temp.dir.empty());
  const std::string& dir = temp.dir;
  std::filesystem::create_directories(dir + "/image");
  RemoteSpecPolicy policy;
  policy.bind_roots = {dir};
  ASSERT_TRUE(PrepareRemoteSpecPolicy(policy).ok());
  FakeSandboxes fake;
  Registry registry;
  ASSERT_TRUE(AddSandboxTools(registry, fake, {.remote = &policy}).ok());
  CallContext member = HostContext();
  member.identity = UserIn("ann");
  member.surface = "rest";
  ASSERT_TRUE(registry.Call("sandbox_create", {{"name", "host"}, {"image", dir + "/image"}}, HostContext()).ok());
  ASSERT_TRUE(registry.Call("sandbox_create", {{"name", "plain"}}, HostContext()).ok());
  ASSERT_TRUE(registry.Call("sandbox_create", {{"name", "ann"}, {"image", dir + "/image"}}, member).ok());
  auto smuggled = registry.Call("sandbox_create", {{"image", dir + "/image"}, {"image_idmapped", true}}, member);
  ASSERT_FALSE(smuggled.ok());
  EXPECT_EQ(smuggled.error().code, Code::kInvalidArgument);
  std::map<std::string, bool> idmapped;
  for (const auto& [id, sb] : fake.sandboxes) idmapped[sb.spec.name] = sb.spec.image_idmapped;
  EXPECT_EQ(idmapped, (std::map<std::string, bool>{{"host", true}, {"plain", false}, {"ann", false}}));
}

TEST_F(SandboxToolsTest, IsbLabelsAreReserved) {
  auto r = registry.Call("sandbox_create", {{"labels", {{"isb.org", "acme"}}}}, HostContext());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kForbidden);
  EXPECT_EQ(r.error().message, "label 'isb.org': labels starting with isb. are reserved");
}

// Creates at once against an org's quota: its check and the create are one step, so of eight creates racing for
// the last instance exactly one gets it, however long a create takes.
TEST(SandboxQuotaTest, ConcurrentCreatesCannotAllSqueezeIntoTheQuota) {
  struct SlowCreates : FakeSandboxes {
    Result<SandboxInfo> Create(const SandboxSpec& spec, const CallOrigin& origin = {}) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return FakeSandboxes::Create(spec, origin);
    }
  } fake;
  Registry registry;
  QuotaGate quotas([](const std::string&) -> Result<identity::Quota> { return identity::Quota{.instances = 1}; });
  ASSERT_TRUE(AddSandboxTools(registry, fake, {.quotas = &quotas}).ok());
  std::vector<std::string> outcomes(8);
  std::vector<std::thread> creates;
  for (size_t i = 0; i < outcomes.size(); ++i)
    creates.emplace_back([&, i] {
      auto r = registry.Call("sandbox_create", json::object(), HostContext("acme"));
      outcomes[i] = r.ok() ? "ok" : r.error().message;
    });
  for (auto& t : creates) t.join();
  EXPECT_EQ(std::count(outcomes.begin(), outcomes.end(), "ok"), 1) << ::testing::PrintToString(outcomes);
  EXPECT_EQ(std::count(outcomes.begin(), outcomes.end(), "quota: org 'acme' may have 1 sandboxes and has 1"), 7)
      << ::testing::PrintToString(outcomes);
  EXPECT_EQ(fake.sandboxes.size(), 1u);
}

// A quota is a budget of what the org's sandboxes are allocated; the refusal names it and the current use.
TEST(SandboxQuotaTest, CreateIsRefusedBeyondTheOrgsQuota) {
  FakeSandboxes fake;
  Registry registry;
  identity::Quota quota{.cpus = 3, .memory = int64_t{1} << 30, .instances = 2};
  QuotaGate quotas([&](const std::string& org) -> Result<identity::Quota> {
    if (org == "acme") return quota;
    return identity::Quota{};
  });
  ASSERT_TRUE(AddSandboxTools(registry, fake, {.quotas = &quotas}).ok());
  auto create = [&](const std::string& org, const json& spec) {
    auto r = registry.Call("sandbox_create", spec, HostContext(org));
    return r.ok() ? std::string("ok") : r.error().message;
  };
  EXPECT_EQ(create("acme", {{"cpus", 2}, {"mem_limit", "512M"}}), "ok");
  EXPECT_EQ(create("acme", {{"cpus", 2}, {"mem_limit", "64M"}}),
            "quota: org 'acme' may be allocated 3 cpus; it has 2 and this sandbox asks for 2");
  EXPECT_EQ(create("acme", {{"cpus", 1}, {"mem_limit", "768M"}}),
            "quota: org 'acme' may be allocated 1024 MiB of memory; it has 512 MiB and this sandbox asks for 768 MiB");
  EXPECT_EQ(create("acme", {{"cpus", 1}, {"mem_limit", "512M"}}), "ok");
  EXPECT_EQ(create("acme", {{"cpus", 0.1}, {"mem_limit", "4M"}}), "quota: org 'acme' may have 2 sandboxes and has 2");
  // Another org's sandboxes count for it, not for acme; an org without a quota is not limited.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(create("default", json::object()), "ok");
}

// Disk is a budget like memory: the sum of the org's sandboxes' disk sizes, each 2 GiB unless its spec says.
// The sandbox tools over fake sandboxes, every org under `quota`; Create answers "ok" or the refusal.
struct QuotaFixture {
  explicit QuotaFixture(identity::Quota q) : quota(q) {
    EXPECT_TRUE(AddSandboxTools(registry, fake, {.quotas = &quotas}).ok());
  }
  std::string Create(const json& spec) {
    auto r = registry.Call("sandbox_create", spec, HostContext("acme"));
    return r.ok() ? std::string("ok") : r.error().message;
  }
  identity::Quota quota;
  QuotaGate quotas{[this](const std::string&) -> Result<identity::Quota> { return quota; }};
  FakeSandboxes fake;
  Registry registry;
};

TEST(SandboxQuotaTest, CreateIsRefusedBeyondTheOrgsDiskQuota) {
  QuotaFixture f(identity::Quota{.disk = int64_t{5} << 30});
  auto create = [&](const json& spec) { return f.Create(spec); };
  EXPECT_EQ(create(json::object()), "ok");
  EXPECT_EQ(create({{"disk", "2G"}}), "ok");
  EXPECT_EQ(create({{"disk", "1025M"}}),
            "quota: org 'acme' may be allocated 5120 MiB of disk; it has 4096 MiB and this sandbox asks for 1025 MiB");
  EXPECT_EQ(create({{"disk", "1G"}}), "ok");
  EXPECT_EQ(create({{"disk", "16M"}}),
            "quota: org 'acme' may be allocated 5120 MiB of disk; it has 5120 MiB and this sandbox asks for 16 MiB");
}

// An image that needs a flattened layer: the quota is checked before the image is resolved (and the layer made), and
// the most the flatten may write must fit the org's disk quota beside its sandboxes, its images and the new
// sandbox's disk, or it is refused naming the quota and nothing is made.
TEST(SandboxQuotaTest, AFlattenForAnImageIsCheckedAgainstTheDiskQuotaBeforeItIsMade) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  FakeSandboxes fake;
  Registry registry;
  uint64_t image_bytes = kGiB;
  QuotaGate quotas(
      [](const std::string&) -> Result<identity::Quota> {
        return identity::Quota{.disk = static_cast<int64_t>(5 * kGiB)};
      },
      [&](const std::string&) { return image_bytes; });
  std::vector<std::string> resolved;  // each call of resolve_image, and whether it flattened
  uint64_t flatten = 0;               // what the image's flatten may write
  SandboxToolOptions options{.quotas = &quotas};
  options.resolve_image = [&](const std::string& org, const std::string& ref,
                              const std::function<Status(uint64_t)>& may_flatten) -> Result<ResolvedImage> {
    if (!may_flatten) return Error::Msg("no disk check for " + org);
    if (Status may = may_flatten(flatten); !may.ok()) {
      resolved.push_back(ref + " refused");
      return may.error();
    }
    resolved.push_back(ref + " flattened");
    ResolvedImage image;
    image.name = "docker.io/test/deep:130";
    image.digest = "sha256:" + std::string(64, 'e');
    image.layers = {"/l"};
    return image;
  };
  ASSERT_TRUE(AddSandboxTools(registry, fake, options).ok());
  auto create = [&](const json& spec) {
    auto r = registry.Call("sandbox_create", spec, HostContext("acme"));
    return r.ok() ? std::string("ok") : r.error().message;
  };
  // 2 GiB of disk, 1 GiB of images and 2 GiB written by the flatten: 5 GiB, the quota.
  flatten = 2 * kGiB;
  EXPECT_EQ(create({{"image", "test/deep:130"}}), "ok");
  EXPECT_EQ(resolved, std::vector<std::string>{"test/deep:130 flattened"});
  // Past the quota already: refused before the image is looked at.
  image_bytes = 3 * kGiB;
  flatten = 0;
  EXPECT_EQ(create({{"image", "test/deep:130"}, {"disk", "1G"}}),
            "quota: org 'acme' may be allocated 5120 MiB of disk; it has 5120 MiB (sandboxes 2048 MiB, images 3072 "
            "MiB) and this sandbox asks for 1024 MiB");
  EXPECT_EQ(resolved.size(), 1u);
  // The sandbox fits, its flatten does not.
  image_bytes = kGiB;
  flatten = kGiB + (1 << 20);
  EXPECT_EQ(create({{"image", "test/deep:130"}, {"disk", "1G"}}),
            "quota: org 'acme' may be allocated 5120 MiB of disk; it has 3072 MiB (sandboxes 2048 MiB, images 1024 "
            "MiB), this sandbox asks for 1024 MiB and flattening the lowest layers of image 'test/deep:130' would "
            "write up to 1025 MiB more: remove images or sandboxes first");
  EXPECT_EQ(resolved.back(), "test/deep:130 refused");
  flatten = kGiB;
  EXPECT_EQ(create({{"image", "test/deep:130"}, {"disk", "1G"}}), "ok");
  EXPECT_EQ(resolved.back(), "test/deep:130 flattened");
  EXPECT_EQ(fake.sandboxes.size(), 2u);
}

// A flatten runs without the gate held, so no other create waits for it, and what it may write is reserved for its
// org meanwhile: a second create of that org whose flatten fits only without the first one's is refused.
TEST(SandboxQuotaTest, AFlattenHoldsNoCreateBackAndWhatItMayWriteIsReservedForItsOrg) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  FakeSandboxes acme, other;
  QuotaGate quotas(
      [](const std::string&) -> Result<identity::Quota> {
        return identity::Quota{.disk = static_cast<int64_t>(5 * kGiB)};
      },
      [](const std::string&) { return uint64_t{0}; });
  SandboxSpec spec;
  spec.disk = kGiB;
  std::promise<void> flattening, go_on;
  std::shared_future<void> released = go_on.get_future().share();
  bool let_go = false;
  std::thread first;
  struct Finish {  // however the test ends (an ASSERT returns early), the first create is let go and joined
    std::promise<void>& go_on;
    bool& let_go;
    std::thread& first;
    ~Finish() {
      if (!let_go) go_on.set_value();
      if (first.joinable()) first.join();
    }
  } finish{go_on, let_go, first};
  first = std::thread([&] {
    auto made = quotas.Create(acme, "acme", spec, [&](SandboxSpec&, const QuotaGate::DiskCheck& may_write) -> Status {
      ISB_TRY(may_write(2 * kGiB));
      flattening.set_value();
      released.wait();
      return {};
    });
    EXPECT_TRUE(made.ok()) << made.error().message;
  });
  flattening.get_future().wait();
  auto meanwhile = std::async(std::launch::async, [&] { return quotas.Create(other, "other", spec); });
  const bool not_held = meanwhile.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  EXPECT_TRUE(not_held) << "another org's create was held back by the flatten";
  if (!not_held) {  // let the first go, so that this one can end
    go_on.set_value();
    let_go = true;
  }
  EXPECT_TRUE(meanwhile.get().ok());
  // 1 GiB of disk and 3 GiB to flatten fit 5 GiB alone, not beside the 2 GiB the first create may still write.
  auto second = quotas.Create(acme, "acme", spec,
                              [&](SandboxSpec&, const QuotaGate::DiskCheck& may_write) { return may_write(3 * kGiB); });
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, Code::kForbidden);
  EXPECT_EQ(second.error().message,
            "quota: org 'acme' may be allocated 5120 MiB of disk; it has 2048 MiB (sandboxes 0 MiB, images 2048 MiB), "
            "this sandbox asks for 1024 MiB and flattening the lowest layers of image '' would write up to 3072 MiB "
            "more: remove images or sandboxes first");
  if (!let_go) go_on.set_value();
  let_go = true;
  first.join();
  // Given back once the first create is done: the same flatten now fits beside its sandbox.
  auto third = quotas.Create(acme, "acme", spec,
                             [&](SandboxSpec&, const QuotaGate::DiskCheck& may_write) { return may_write(3 * kGiB); });
  EXPECT_TRUE(third.ok()) << third.error().message;
  EXPECT_EQ(acme.sandboxes.size(), 2u);
}

// Processes are a budget too: the sum of the org's sandboxes' pids limits (64 each unless its spec says), so a
// member cannot take the host's process table with one sandbox of pids 65536 or many of 64.
TEST(SandboxQuotaTest, CreateIsRefusedBeyondTheOrgsPidsQuota) {
  QuotaFixture f(identity::Quota{.pids = 200});
  auto create = [&](const json& spec) { return f.Create(spec); };
  EXPECT_EQ(create({{"pids", 65536}}),
            "quota: org 'acme' may be allocated 200 pids; it has 0 and this sandbox asks for 65536");
  EXPECT_EQ(create(json::object()), "ok");
  EXPECT_EQ(create({{"pids", 100}}), "ok");
  EXPECT_EQ(create(json::object()),
            "quota: org 'acme' may be allocated 200 pids; it has 164 and this sandbox asks for 64");
  EXPECT_EQ(create({{"pids", 36}}), "ok");
}

}  // namespace
}  // namespace isb::api

namespace isb::api {
namespace {

// sandbox_usage over a store: each point's network counts as read, the CPU as a rate, and the output its schema.
TEST(UsageToolTest, EachPointCarriesTheNetworkCountsAndTheResultMatchesItsSchema) {
  FakeSandboxes fake;
  Registry registry;
  UsageStore store;
  ASSERT_TRUE(AddSandboxTools(registry, fake, {.usage = &store}).ok());
  Result<json> made = registry.Call("sandbox_create", json::object(), HostContext());
  ASSERT_TRUE(made.ok()) << made.error().message;
  const std::string id = (*made)["id"];
  constexpr int64_t kT0 = 1'800'000'000'000;
  store.Add(id, {.at_ms = kT0, .cpu_usec = 0, .memory_bytes = 1, .pids = 1, .net_rx_bytes = 0, .net_tx_bytes = 0});
  store.Add(id, {.at_ms = kT0 + 2000,
                 .cpu_usec = 2'000'000,
                 .memory_bytes = 1,
                 .pids = 1,
                 .net_rx_bytes = 1 << 20,
                 .net_tx_bytes = 517});
  Result<json> r = registry.Call("sandbox_usage", {{"sandbox", id}}, HostContext());
  ASSERT_TRUE(r.ok()) << r.error().message;
  Status valid = Validate(registry.Find("sandbox_usage")->output_schema, *r);
  EXPECT_TRUE(valid.ok()) << valid.error().message;
  EXPECT_EQ((*r)["samples"], json::parse(R"([
    {"at": "2027-01-15T08:00:00.000Z", "cpu_cores": 0.0, "memory_bytes": 1, "pids": 1, "net_rx_bytes": 0, "net_tx_bytes": 0},
    {"at": "2027-01-15T08:00:02.000Z", "cpu_cores": 1.0, "memory_bytes": 1, "pids": 1, "net_rx_bytes": 1048576,
     "net_tx_bytes": 517}])"))
      << r->dump();
  EXPECT_FALSE(r->contains("network"));
}

}  // namespace
}  // namespace isb::api
