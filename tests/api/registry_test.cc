// The registry: registration rules, validation before the handler, and what surfaces publish.
#include "api/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "api/principals.h"

namespace isb::api {
namespace {

using json = nlohmann::json;

Tool Echo(int* calls) {
  return Tool{"echo",
              "Echo",
              "Returns its input.",
              json::parse(R"({"type":"object","additionalProperties":false,"required":["x"],
                              "properties":{"x":{"type":"integer","minimum":0}}})"),
              json::parse(R"({"type":"object"})"),
              ToolAnnotations{.read_only = true, .idempotent = true},
              false,
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

// A call that may change something is told to the intent observer before its handler runs, and to the observer
// after. When the intent cannot be recorded, the handler never runs and the caller is told why; when the outcome
// cannot be recorded, the call's result stands and Run says why. A read-only tool has no intent.
TEST(RegistryTest, AChangeWhoseIntentCannotBeRecordedNeverRuns) {
  Registry r;
  std::vector<std::string> events;
  for (const char* name : {"change", "peek"}) {
    const std::string n = name;
    ASSERT_TRUE(r.Add(Tool{n, "t", "A tool.", json{{"type", "object"}}, json{{"type", "object"}},
                           ToolAnnotations{.read_only = n == "peek"}, false,
                           [&events, n](const json&, const CallContext&) -> Result<json> {
                             events.push_back("handler of " + n);
                             return json{{"done", n}};
                           }})
                    .ok());
  }
  Status intent_recorded, outcome_recorded;
  r.SetIntentObserver([&](std::string_view name, const Tool&, const json&, const CallContext&) -> Status {
    events.push_back("intent " + std::string(name));
    return intent_recorded;
  });
  r.SetObserver(
      [&](std::string_view name, const Tool*, const json&, const CallContext&, const Result<json>& result) -> Status {
        events.push_back("end " + std::string(name) + (result.ok() ? " ok" : " failed"));
        return outcome_recorded;
      });
  CallContext ctx;
  ctx.identity = UserIn("m");
  ctx.org = "default";
  auto run = [&](const std::string& name, std::string* unrecorded) {
    const Tool* tool = *r.Admit(name, json::object(), ctx);
    return r.Run(*tool, json::object(), ctx, unrecorded);
  };

  std::string unrecorded = "untouched";
  ASSERT_TRUE(run("change", &unrecorded).ok());
  ASSERT_TRUE(run("peek", &unrecorded).ok());
  EXPECT_EQ(unrecorded, "untouched");
  EXPECT_EQ(events, (std::vector<std::string>{"intent change", "handler of change", "end change ok", "handler of peek",
                                              "end peek ok"}));

  events.clear();
  intent_recorded = Error::Of(Code::kUnavailable, "the audit log could not record it (disk full)");
  auto refused = run("change", &unrecorded);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kUnavailable);
  EXPECT_EQ(refused.error().message,
            "change was not run, so nothing changed: the audit log could not record it (disk full)");
  EXPECT_TRUE(run("peek", &unrecorded).ok());  // nothing to record before it
  EXPECT_EQ(events, (std::vector<std::string>{"intent change", "handler of peek", "end peek ok"}));

  events.clear();
  intent_recorded = {};
  outcome_recorded = Error::Of(Code::kUnavailable, "the audit log could not record its outcome (disk full)");
  auto done = run("change", &unrecorded);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(*done, (json{{"done", "change"}}));
  EXPECT_EQ(unrecorded, "the audit log could not record its outcome (disk full)");
  EXPECT_EQ(events, (std::vector<std::string>{"intent change", "handler of change", "end change ok"}));

  // A stream's Begin records the intent before any response (a refusal is its own status); Run then records none.
  events.clear();
  outcome_recorded = {};
  const Tool* change = r.Find("change");
  CallContext streamed = ctx;
  ASSERT_TRUE(r.Begin(*change, json::object(), streamed).ok());
  EXPECT_TRUE(streamed.intent_recorded);
  ASSERT_TRUE(r.Run(*change, json::object(), streamed).ok());
  EXPECT_EQ(events, (std::vector<std::string>{"intent change", "handler of change", "end change ok"}));
  intent_recorded = Error::Of(Code::kUnavailable, "the audit log could not record it (disk full)");
  CallContext refused_stream = ctx;
  Status begun = r.Begin(*change, json::object(), refused_stream);
  ASSERT_FALSE(begun.ok());
  EXPECT_EQ(begun.error().message,
            "change was not run, so nothing changed: the audit log could not record it (disk full)");
  EXPECT_FALSE(refused_stream.intent_recorded);
}

TEST(RegistryTest, ValidatesBeforeTheHandler) {
  Registry r;
  int calls = 0;
  ASSERT_TRUE(r.Add(Echo(&calls)).ok());
  CallContext ctx = HostContext();
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
  EXPECT_EQ(HttpStatusFor(Code::kTooManyRequests), 429);
  EXPECT_EQ(HttpStatusFor(Code::kTimeout), 504);
  EXPECT_EQ(HttpStatusFor(Code::kInternal), 500);
}

// A tool of each kind: read (viewer), deploy (member), admin (admin, admin scope), platform, and one about the caller.
class AuthorizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto add = [&](const std::string& name, ToolAnnotations annotations, std::optional<ToolAccess> access) {
      Tool t{name,
             name,
             name,
             json::parse(R"({"type":"object","properties":{"x":{"type":"integer"}}})"),
             json::parse(R"({"type":"object"})"),
             annotations,
             false,
             [this, name](const json&, const CallContext&) -> Result<json> {
               ran.push_back(name);
               return json::object();
             },
             access};
      ASSERT_TRUE(r.Add(std::move(t)).ok());
    };
    add("peek", ToolAnnotations{.read_only = true}, std::nullopt);
    add("poke", ToolAnnotations{}, std::nullopt);
    add("manage", ToolAnnotations{},
        ToolAccess{.least_role = identity::Role::kAdmin, .kind = identity::ScopeKind::kAdmin});
    add("rule", ToolAnnotations{},
        ToolAccess{.least_role = identity::Role::kOwner,
                   .kind = identity::ScopeKind::kAdmin,
                   .org_bound = false,
                   .platform = true});
    add("self", ToolAnnotations{.read_only = true}, ToolAccess{.org_bound = false});
    add("self_change", ToolAnnotations{}, ToolAccess{.kind = identity::ScopeKind::kAdmin, .org_bound = false});
    r.SetOrgCheck([](std::string_view org) { return org == "default" || org == "acme"; });
    r.SetObserver([this](std::string_view name, const Tool*, const json&, const CallContext&,
                         const Result<json>& result) -> Status {
      seen.emplace_back(std::string(name), result.ok() ? "ok" : std::string(CodeName(result.error().code)));
      return {};
    });
  }

  // "ok" or "CODE: message".
  std::string Call(const std::string& tool, const Identity& who, const std::string& org = "default",
                   const json& input = json::object()) {
    CallContext ctx;
    ctx.identity = who;
    ctx.org = org;
    auto res = r.Call(tool, input, ctx);
    return res.ok() ? "ok" : std::string(CodeName(res.error().code)) + ": " + res.error().message;
  }

  Registry r;
  std::vector<std::string> ran;
  std::vector<std::pair<std::string, std::string>> seen;
};

TEST_F(AuthorizerTest, RolesInTheCallsOrg) {
  using identity::Role;
  Identity viewer = UserIn("v", "default", Role::kViewer), member = UserIn("m"),
           admin = UserIn("a", "default", Role::kAdmin);
  EXPECT_EQ(Call("peek", viewer), "ok");
  EXPECT_EQ(Call("poke", viewer), "forbidden: role viewer may not call poke, which needs member");
  EXPECT_EQ(Call("poke", member), "ok");
  EXPECT_EQ(Call("manage", member), "forbidden: role member may not call manage, which needs admin");
  EXPECT_EQ(Call("manage", admin), "ok");
  EXPECT_EQ(Call("rule", admin), "forbidden: rule needs a platform admin");
  EXPECT_EQ(Call("self", viewer), "ok");
  EXPECT_EQ(ran, (std::vector<std::string>{"peek", "poke", "manage", "self"}));
}

TEST_F(AuthorizerTest, AnotherOrgIsOneThatDoesNotExist) {
  Identity member = UserIn("m");
  EXPECT_EQ(Call("peek", member, "acme"), "not_found: no org 'acme'");
  EXPECT_EQ(Call("peek", member, "nowhere"), "not_found: no org 'nowhere'");
  // Even the host cannot act in an org that does not exist; it can in any that does.
  EXPECT_EQ(Call("poke", Identity::Host(), "nowhere"), "not_found: no org 'nowhere'");
  EXPECT_EQ(Call("poke", Identity::Host(), "acme"), "ok");
  // A credential scoped to one org reaches no other, whatever the user's roles.
  Identity scoped = UserIn("m");
  scoped.roles["acme"] = identity::Role::kOwner;
  scoped.org_scope = "default";
  EXPECT_EQ(Call("poke", scoped, "acme"), "not_found: no org 'acme'");
  // Nobody (no credential resolved) reaches nothing.
  EXPECT_EQ(Call("peek", Identity{}), "not_found: no org 'default'");
  EXPECT_TRUE(ran == std::vector<std::string>{"poke"});
}

TEST_F(AuthorizerTest, ScopesAndCapsOnlyNarrow) {
  Identity read_only = UserIn("o", "default", identity::Role::kOwner);
  read_only.scopes = {{identity::ScopeKind::kRead, ""}};
  EXPECT_EQ(Call("peek", read_only), "ok");
  EXPECT_EQ(Call("poke", read_only),
            "forbidden: token scopes (read) do not cover poke; it needs scope deploy, admin, or tool:poke");
  EXPECT_EQ(Call("self", read_only), "ok");
  Identity one_tool = UserIn("o", "default", identity::Role::kOwner);
  one_tool.scopes = {{identity::ScopeKind::kTool, "po*"}};
  EXPECT_EQ(Call("poke", one_tool), "ok");
  EXPECT_EQ(Call("peek", one_tool),
            "forbidden: token scopes (tool:po*) do not cover peek; it needs scope read, deploy, admin, or tool:peek");
  Identity capped = UserIn("o", "default", identity::Role::kOwner);
  capped.role_cap = identity::Role::kViewer;
  EXPECT_EQ(Call("poke", capped), "forbidden: role viewer may not call poke, which needs member");
}

TEST_F(AuthorizerTest, ACapHoldsOnToolsAboutTheCallerAndOnPlatformPowers) {
  // A platform admin's token capped at viewer: it still reads every org, as a viewer, and changes nothing, not
  // even about its own user, and it is no platform admin.
  Identity capped = UserIn("p", "default", identity::Role::kViewer);
  capped.platform_admin = true;
  capped.role_cap = identity::Role::kViewer;
  EXPECT_EQ(Call("peek", capped, "acme"), "ok");
  EXPECT_EQ(Call("self", capped), "ok");
  EXPECT_EQ(Call("self_change", capped), "forbidden: role viewer may not call self_change, which needs member");
  EXPECT_EQ(Call("rule", capped), "forbidden: rule needs a platform admin");
  // Capped at admin: still below owner, so no platform powers; changes about itself are allowed.
  capped.role_cap = identity::Role::kAdmin;
  EXPECT_EQ(Call("rule", capped), "forbidden: rule needs a platform admin");
  EXPECT_EQ(Call("self_change", capped), "ok");
  // Uncapped, or capped at owner: a platform admin.
  capped.role_cap = identity::Role::kOwner;
  EXPECT_EQ(Call("rule", capped), "ok");
  capped.role_cap.reset();
  EXPECT_EQ(Call("rule", capped), "ok");
  // A viewer's own membership: read-only tools only, whatever the tool declares.
  EXPECT_EQ(Call("self_change", UserIn("v", "default", identity::Role::kViewer)), "ok");
  EXPECT_EQ(ran, (std::vector<std::string>{"peek", "self", "self_change", "rule", "rule", "self_change"}));
}

TEST_F(AuthorizerTest, RefusedBeforeValidationAndReported) {
  // An unauthorized caller learns nothing about the input's shape; the refusal reaches the observer.
  EXPECT_EQ(Call("poke", UserIn("v", "default", identity::Role::kViewer), "default", {{"x", "not a number"}}),
            "forbidden: role viewer may not call poke, which needs member");
  EXPECT_EQ(Call("poke", UserIn("m"), "default", {{"x", "not a number"}}),
            "invalid_argument: x: expected integer, got string");
  EXPECT_EQ(seen,
            (std::vector<std::pair<std::string, std::string>>{{"poke", "forbidden"}, {"poke", "invalid_argument"}}));
  EXPECT_TRUE(ran.empty());
}

TEST_F(AuthorizerTest, ASurfacesOwnRefusalReachesTheObserver) {
  // A body a surface could not read as input: refused before Admit, reported all the same, nothing run.
  CallContext ctx;
  ctx.identity = UserIn("m");
  r.Refuse("poke", ctx, Error::Of(Code::kInvalidArgument, "body: not valid JSON"));
  r.Refuse("no_such_tool", ctx, Error::Of(Code::kTooLarge, "request body is larger than 8 bytes"));
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, std::string>>{{"poke", "invalid_argument"},
                                                                    {"no_such_tool", "too_large"}}));
  EXPECT_TRUE(ran.empty());
}

TEST_F(AuthorizerTest, ToolFilterHidesFromCallersButTheHost) {
  r.SetToolFilter([](std::string_view tool) { return tool != "poke"; });
  Identity member = UserIn("m");
  EXPECT_EQ(Call("poke", member), "not_found: unknown tool 'poke'");
  EXPECT_EQ(r.FindVisible("poke", member), nullptr);
  std::vector<std::string> names;
  for (const Tool* t : r.Visible(member)) names.push_back(t->name);
  EXPECT_EQ(names, (std::vector<std::string>{"manage", "peek", "rule", "self", "self_change"}));
  EXPECT_EQ(r.Visible(Identity::Host()).size(), 6u);
  EXPECT_EQ(Call("poke", Identity::Host()), "ok");
  // A superadmin token over a listener sees the tools the listener offers, as the spec says.
  Identity token = Identity::Host();
  token.kind = identity::PrincipalKind::kToken;
  token.credential_id = 7;
  EXPECT_EQ(Call("poke", token), "not_found: unknown tool 'poke'");
  EXPECT_EQ(r.Visible(token).size(), 5u);
}

}  // namespace
}  // namespace isb::api
