// REST routes, error codes, OpenAPI generation and SSE streaming, without a socket.
#include "api/rest.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "api/fake_sandboxes.h"
#include "api/json_schema.h"
#include "api/json_util.h"
#include "api/principals.h"
#include "api/sandbox_tools.h"

namespace isb::api {
namespace {

class RestTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(AddSandboxTools(registry, fake).ok()); }

  Response Do(const std::string& method, const std::string& target, const std::string& body = "",
              std::vector<std::pair<std::string, std::string>> headers = {}) {
    Request req;
    req.method = method;
    req.target = target;
    req.body = body;
    for (auto& [n, v] : headers) req.headers.Add(n, v);
    return rest.Handle(req, Identity::Host());
  }
  static json Body(const Response& r) { return json::parse(r.body); }
  static std::string Drain(const Response& r) {
    std::string out;
    r.stream([&](std::string_view chunk) {
      out += chunk;
      return true;
    });
    return out;
  }

  FakeSandboxes fake;
  Registry registry;
  RestApi rest{registry, "1.2.3"};
};

TEST_F(RestTest, Healthz) {
  Response r = Do("GET", "/healthz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Body(r)["ok"], true);
  EXPECT_EQ(r.headers.Get("content-type"), "application/json");
}

TEST_F(RestTest, CallsATool) {
  Response c = Do("POST", "/api/v1/tools/sandbox_create", R"({"name":"a"})");
  ASSERT_EQ(c.status, 200) << c.body;
  std::string id = Body(c)["result"]["id"];
  Response e = Do("POST", "/api/v1/tools/sandbox_exec", R"({"sandbox":"a","argv":["ls"]})");
  ASSERT_EQ(e.status, 200) << e.body;
  EXPECT_EQ(Body(e)["result"]["stdout"], "out: ls");
  EXPECT_FALSE(e.headers.Get("X-Request-Id").empty());
  // An empty body is an empty input.
  Response l = Do("POST", "/api/v1/tools/sandbox_list");
  EXPECT_EQ(Body(l)["result"]["sandboxes"][0]["id"], id);
}

TEST_F(RestTest, ErrorCodes) {
  auto check = [&](const Response& r, int status, const std::string& code) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(Body(r)["error"], code) << r.body;
    EXPECT_FALSE(Body(r)["message"].get<std::string>().empty());
  };
  check(Do("POST", "/api/v1/tools/sandbox_exec", "{not json"), 400, "invalid_argument");
  check(Do("POST", "/api/v1/tools/sandbox_exec", R"({"sandbox":"x","argv":"ls"})"), 400, "invalid_argument");
  EXPECT_EQ(Body(Do("POST", "/api/v1/tools/sandbox_exec", R"({"sandbox":"x","argv":"ls"})"))["message"],
            "argv: expected array, got string");
  check(Do("POST", "/api/v1/tools/sandbox_exec", "[1]"), 400, "invalid_argument");
  check(Do("POST", "/api/v1/tools/nope", "{}"), 404, "not_found");
  check(Do("POST", "/api/v1/tools/sandbox_get", R"({"sandbox":"missing"})"), 404, "not_found");
  check(Do("POST", "/nowhere", "{}"), 404, "not_found");
  Do("POST", "/api/v1/tools/sandbox_create", R"({"name":"a"})");
  check(Do("POST", "/api/v1/tools/sandbox_create", R"({"name":"a"})"), 409, "conflict");
  check(Do("POST", "/api/v1/tools/sandbox_create", std::string(9 << 20, ' ')), 413, "too_large");
  Response m = Do("GET", "/api/v1/tools/sandbox_list");
  EXPECT_EQ(m.status, 405);
  EXPECT_EQ(m.headers.Get("Allow"), "POST");

  fake.exec_fn = [](const ExecRequest&, const OutputSink&) -> Result<ExecResult> {
    return Error::Of(Code::kTimeout, "exec timed out");
  };
  check(Do("POST", "/api/v1/tools/sandbox_exec", R"({"sandbox":"a","argv":["x"]})"), 504, "timeout");
  fake.exec_fn = [](const ExecRequest&, const OutputSink&) -> Result<ExecResult> {
    return Error::Of(Code::kForbidden, "no");
  };
  check(Do("POST", "/api/v1/tools/sandbox_exec", R"({"sandbox":"a","argv":["x"]})"), 403, "forbidden");
  fake.exec_fn = [](const ExecRequest&, const OutputSink&) -> Result<ExecResult> { return Error::Msg("boom"); };
  check(Do("POST", "/api/v1/tools/sandbox_exec", R"({"sandbox":"a","argv":["x"]})"), 500, "internal");
}

TEST_F(RestTest, ListsTools) {
  json tools = Body(Do("GET", "/api/v1/tools"))["tools"];
  ASSERT_EQ(tools.size(), 15u);
  for (const json& t : tools) {
    EXPECT_TRUE(t.contains("inputSchema") && t.contains("outputSchema") && t.contains("annotations")) << t["name"];
  }
}

constexpr Code kEveryCode[] = {Code::kInvalidArgument, Code::kUnauthenticated, Code::kForbidden, Code::kNotFound,
                               Code::kConflict,        Code::kTooLarge,        Code::kTimeout,   Code::kUnavailable,
                               Code::kTooManyRequests, Code::kInternal};

TEST_F(RestTest, OpenApiIsGeneratedFromTheRegistry) {
  Response r = Do("GET", "/api/v1/openapi.json");
  ASSERT_EQ(r.status, 200);
  json doc = Body(r);
  EXPECT_EQ(doc["openapi"], "3.1.0");
  EXPECT_EQ(doc["info"]["version"], "1.2.3");
  for (const Tool* t : registry.List()) {
    const json& op = doc["paths"]["/api/v1/tools/" + t->name]["post"];
    EXPECT_EQ(op["operationId"], t->name);
    EXPECT_EQ(op["requestBody"]["content"]["application/json"]["schema"], t->input_schema);
    EXPECT_EQ(op["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["result"],
              t->output_schema);
    EXPECT_EQ(op["responses"]["404"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/Error");
    // Every status an error can have is documented, and every error name is in the schema's list.
    for (Code c : kEveryCode)
      EXPECT_TRUE(op["responses"].contains(std::to_string(HttpStatusFor(c)))) << t->name << " " << CodeName(c);
  }
  EXPECT_TRUE(doc["components"]["schemas"].contains("Error"));
  const json& names = doc["components"]["schemas"]["Error"]["properties"]["error"]["enum"];
  for (Code c : kEveryCode)
    EXPECT_NE(std::find(names.begin(), names.end(), json(CodeName(c))), names.end()) << CodeName(c);
  EXPECT_EQ(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
}

TEST_F(RestTest, OpenApiLeavesOutTheToolsTheCallerMayNotSee) {
  registry.SetToolFilter([](std::string_view tool) { return tool != "sandbox_exec"; });
  Request req;
  req.method = "GET";
  req.target = "/api/v1/openapi.json";
  Identity remote = UserIn("m");
  json doc = Body(rest.Handle(req, remote));
  EXPECT_FALSE(doc["paths"].contains("/api/v1/tools/sandbox_exec"));
  EXPECT_TRUE(doc["paths"].contains("/api/v1/tools/sandbox_create"));
  size_t tool_paths = 0;
  for (const auto& [path, op] : doc["paths"].items()) tool_paths += path.starts_with("/api/v1/tools/") ? 1 : 0;
  EXPECT_EQ(tool_paths, registry.Visible(remote).size());
  // The host sees every tool, as in tools/list.
  EXPECT_TRUE(Body(Do("GET", "/api/v1/openapi.json"))["paths"].contains("/api/v1/tools/sandbox_exec"));
}

TEST_F(RestTest, StreamsExecAsServerSentEvents) {
  Do("POST", "/api/v1/tools/sandbox_create", R"({"name":"a"})");
  for (auto [target, headers] : std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>{
           {"/api/v1/tools/sandbox_exec?stream=1", {}},
           {"/api/v1/tools/sandbox_exec", {{"Accept", "text/event-stream"}}}}) {
    Response r = Do("POST", target, R"({"sandbox":"a","argv":["ls"]})", headers);
    ASSERT_EQ(r.status, 200);
    ASSERT_TRUE(r.stream);
    EXPECT_EQ(r.headers.Get("Content-Type"), "text/event-stream");
    std::string sse = Drain(r);
    EXPECT_EQ(sse.substr(0, sse.find("event: result")),
              "event: stdout\ndata: {\"data\":\"out:\"}\n\n"
              "event: stdout\ndata: {\"data\":\" ls\"}\n\n"
              "event: stderr\ndata: {\"data\":\"err\"}\n\n");
    size_t at = sse.find("event: result\ndata: ");
    ASSERT_NE(at, std::string::npos);
    json result = json::parse(sse.substr(at + 20, sse.size() - at - 22));
    EXPECT_EQ(result["result"]["stdout"], "out: ls");
    EXPECT_TRUE(sse.ends_with("\n\n"));
  }
  // Bad input, and a sandbox that is not there, are refused before the stream starts, with their own status; a
  // call that fails once started (here, in a stopped sandbox) ends with an error event.
  EXPECT_EQ(Do("POST", "/api/v1/tools/sandbox_exec?stream=1", R"({"sandbox":"a"})").status, 400);
  Response gone = Do("POST", "/api/v1/tools/sandbox_exec?stream=1", R"({"sandbox":"zz","argv":["x"]})");
  EXPECT_FALSE(gone.stream);
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(Body(gone), json({{"error", "not_found"}, {"message", "no sandbox 'zz'"}}));
  Do("POST", "/api/v1/tools/sandbox_stop", R"({"sandbox":"a"})");
  Response stopped = Do("POST", "/api/v1/tools/sandbox_exec?stream=1", R"({"sandbox":"a","argv":["x"]})");
  ASSERT_TRUE(stopped.stream);
  EXPECT_NE(Drain(stopped).find("event: error\ndata: {\"error\":\"conflict\""), std::string::npos);
  // A non-streaming tool ignores ?stream=1.
  EXPECT_FALSE(Do("POST", "/api/v1/tools/sandbox_list?stream=1", "{}").stream);
}

TEST(SseTest, Framing) {
  EXPECT_EQ(SseEvent("result", "{}"), "event: result\ndata: {}\n\n");
  EXPECT_EQ(SseEvent("", "a\nb\r\nc"), "data: a\ndata: b\ndata: c\n\n");
  EXPECT_EQ(SseEvent("x", ""), "event: x\ndata: \n\n");
}

TEST(RequestTest, PathAndQuery) {
  Request r;
  r.target = "/a/b?stream=1&x&y=2";
  EXPECT_EQ(r.Path(), "/a/b");
  EXPECT_EQ(r.QueryParam("stream"), "1");
  EXPECT_EQ(r.QueryParam("y"), "2");
  EXPECT_EQ(r.QueryParam("x"), "");
  EXPECT_EQ(r.QueryParam("z"), "");
}

}  // namespace
}  // namespace isb::api
