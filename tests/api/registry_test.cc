// The registry: registration rules, validation before the handler, and what surfaces publish.
#include "api/registry.h"

#include <gtest/gtest.h>

namespace isb::api {
namespace {

using json = nlohmann::json;

Tool Echo(int* calls) {
  return Tool{"echo", "Echo", "Returns its input.",
              json::parse(R"({"type":"object","additionalProperties":false,"required":["x"],
                              "properties":{"x":{"type":"integer","minimum":0}}})"),
              json::parse(R"({"type":"object"})"),
              ToolAnnotations{.read_only = true, .idempotent = true}, false,
              [calls](const json& in, const CallContext& ctx) -> Result<json> {
                ++*calls;
                if (in["x"] == 13) throw std::runtime_error("unlucky");
                return json{{"x", in["x"]}, {"surface", ctx.surface}};
              }};
}

TEST(RegistryTest, AddFindList) {
  Registry r;
  int calls = 0;
  ASSERT_TRUE(r.Add(Echo(&calls)).ok());
  EXPECT_FALSE(r.Add(Echo(&calls)).ok());  // duplicate
  Tool no_handler = Echo(&calls);
  no_handler.name = "other";
  no_handler.handler = nullptr;
  EXPECT_FALSE(r.Add(no_handler).ok());
  EXPECT_NE(r.Find("echo"), nullptr);
  EXPECT_EQ(r.Find("nope"), nullptr);
  ASSERT_EQ(r.List().size(), 1u);
}

TEST(RegistryTest, ValidatesBeforeTheHandler) {
  Registry r;
  int calls = 0;
  ASSERT_TRUE(r.Add(Echo(&calls)).ok());
  CallContext ctx;
  ctx.surface = "rest";
  auto bad = r.Call("echo", {{"x", "1"}}, ctx);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Code::kInvalidArgument);
  EXPECT_EQ(bad.error().message, "x: expected integer, got string");
  auto not_object = r.Call("echo", json::array(), ctx);
  EXPECT_EQ(not_object.error().message, "input: expected object, got array");
  EXPECT_EQ(calls, 0);

  auto ok = r.Call("echo", {{"x", 2}}, ctx);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)["surface"], "rest");
  EXPECT_EQ(calls, 1);

  EXPECT_EQ(r.Call("missing", json::object(), ctx).error().code, Code::kNotFound);
  auto thrown = r.Call("echo", {{"x", 13}}, ctx);
  ASSERT_FALSE(thrown.ok());
  EXPECT_EQ(thrown.error().code, Code::kInternal);
}

TEST(RegistryTest, DescribeCarriesSchemasAndAnnotations) {
  int calls = 0;
  json d = Registry::Describe(Echo(&calls));
  EXPECT_EQ(d["name"], "echo");
  EXPECT_EQ(d["title"], "Echo");
  EXPECT_EQ(d["inputSchema"]["required"][0], "x");
  EXPECT_EQ(d["outputSchema"]["type"], "object");
  EXPECT_EQ(d["annotations"]["readOnlyHint"], true);
  EXPECT_EQ(d["annotations"]["destructiveHint"], false);
  EXPECT_EQ(d["annotations"]["idempotentHint"], true);
}

TEST(RegistryTest, CodeMapping) {
  EXPECT_EQ(CodeName(Code::kInvalidArgument), "invalid_argument");
  EXPECT_EQ(HttpStatusFor(Code::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusFor(Code::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatusFor(Code::kForbidden), 403);
  EXPECT_EQ(HttpStatusFor(Code::kNotFound), 404);
  EXPECT_EQ(HttpStatusFor(Code::kConflict), 409);
  EXPECT_EQ(HttpStatusFor(Code::kTooLarge), 413);
  EXPECT_EQ(HttpStatusFor(Code::kTimeout), 504);
  EXPECT_EQ(HttpStatusFor(Code::kInternal), 500);
}

}  // namespace
}  // namespace isb::api
