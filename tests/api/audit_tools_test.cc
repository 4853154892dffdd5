// The accountability tools on a real audit log and history in a temporary database: each org sees its own rows and
// sandboxes only, members and org admins are refused what is not theirs with the authorizer's words.
#include "api/audit_tools.h"

#include <gtest/gtest.h>

#include "api/fake_sandboxes.h"
#include "api/json_schema.h"
#include "api/org_sandboxes.h"
#include "api/principals.h"
#include "audit/audit_fixture.h"

namespace isb::api {
namespace {

using json = nlohmann::json;
using identity::Role;

class AuditToolsTest : public audit::testing::AuditDbTest {
 protected:
  void SetUp() override {
    AuditDbTest::SetUp();
    auto h = audit::History::Open(*db_);
    ASSERT_TRUE(h.ok()) << h.error().message;
    history_ = std::move(*h);
    ASSERT_TRUE(AddAuditTools(registry_, *log_, *history_, fake_).ok());
  }
  void TearDown() override {
    history_.reset();
    AuditDbTest::TearDown();
  }

  void Append(const std::string& org, const std::string& action) {
    audit::Entry e;
    e.org = org;
    e.actor = "user:alice";
    e.actor_kind = "user";
    e.surface = "rest";
    e.action = action;
    ASSERT_TRUE(log_->Append(e).ok());
  }
  // A sandbox of `org`, as OrgSandboxes labels it, with a "created" event.
  std::string SandboxOf(const std::string& org) {
    SandboxSpec spec;
    spec.labels[kOrgLabel] = org;
    auto info = fake_.Create(spec);
    EXPECT_TRUE(info.ok());
    EXPECT_TRUE(
        history_
            ->Record({.sandbox = info->id, .org = org, .event = "created", .actor = "user:alice", .actor_kind = "user"})
            .ok());
    return info->id;
  }

  static CallContext As(Identity who, const std::string& org) {
    CallContext ctx;
    ctx.identity = std::move(who);
    ctx.org = org;
    return ctx;
  }
  // Calls a tool, expects success and checks the result against the tool's output schema.
  json Ok(const std::string& tool, const json& input, const CallContext& ctx) {
    auto r = registry_.Call(tool, input, ctx);
    EXPECT_TRUE(r.ok()) << tool << ": " << (r.ok() ? "" : r.error().message);
    if (!r.ok()) return nullptr;
    Status s = Validate(registry_.Find(tool)->output_schema, *r);
    EXPECT_TRUE(s.ok()) << tool << " output: " << (s.ok() ? "" : s.error().message);
    return *r;
  }
  Error Fail(const std::string& tool, const json& input, const CallContext& ctx) {
    auto r = registry_.Call(tool, input, ctx);
    EXPECT_FALSE(r.ok()) << tool << " unexpectedly succeeded";
    return r.ok() ? Error{} : r.error();
  }
  static std::vector<int64_t> Ids(const json& rows) {
    std::vector<int64_t> ids;
    for (const auto& r : rows) ids.push_back(r["id"].get<int64_t>());
    return ids;
  }

  std::unique_ptr<audit::History> history_;
  FakeSandboxes fake_;
  Registry registry_;
};

TEST_F(AuditToolsTest, AnAdminListsOnlyItsOrgsRows) {
  Append("a", "sandbox_create");
  Append("b", "sandbox_create");
  Append("a", "sandbox_remove");
  Append("b", "sandbox_remove");
  CallContext alice = As(UserIn("alice", "a", Role::kAdmin), "a");

  json all = Ok("audit_list", json::object(), alice);
  EXPECT_EQ(Ids(all["records"]), (std::vector<int64_t>{1, 3}));
  for (const auto& r : all["records"]) EXPECT_EQ(r["org"], "a");
  EXPECT_EQ(all["next_after"], nullptr);

  EXPECT_EQ(Ids(Ok("audit_list", {{"action", "sandbox_remove"}}, alice)["records"]), (std::vector<int64_t>{3}));
  json first = Ok("audit_list", {{"limit", 1}}, alice);
  EXPECT_EQ(Ids(first["records"]), (std::vector<int64_t>{1}));
  EXPECT_EQ(first["next_after"], 1);
  EXPECT_EQ(Ids(Ok("audit_list", {{"after", 1}}, alice)["records"]), (std::vector<int64_t>{3}));

  // The host, owner of every org, still sees only the org it calls in.
  EXPECT_EQ(Ids(Ok("audit_list", json::object(), HostContext("b"))["records"]), (std::vector<int64_t>{2, 4}));
}

TEST_F(AuditToolsTest, AMemberMayNotList) {
  Append("a", "sandbox_create");
  Error e = Fail("audit_list", json::object(), As(UserIn("bob", "a", Role::kMember), "a"));
  EXPECT_EQ(e.code, Code::kForbidden);
  EXPECT_EQ(e.message, "role member may not call audit_list, which needs admin");
  // An admin of A calling in B, which it does not reach, finds no such org.
  e = Fail("audit_list", json::object(), As(UserIn("alice", "a", Role::kAdmin), "b"));
  EXPECT_EQ(e.code, Code::kNotFound);
  EXPECT_EQ(e.message, "no org 'b'");
}

TEST_F(AuditToolsTest, VerifyReportsBothChainsToPlatformAdmins) {
  Append("a", "sandbox_create");
  Append("b", "sandbox_create");
  SandboxOf("a");
  Identity ops = UserIn("ops", "a", Role::kViewer);
  ops.platform_admin = true;
  json r = Ok("audit_verify", json::object(), As(ops, "a"));
  EXPECT_EQ(r["audit_log"]["ok"], true);
  EXPECT_EQ(r["audit_log"]["rows"], 2);
  EXPECT_EQ(r["audit_log"]["head"]["id"], 2);
  EXPECT_EQ(r["audit_log"]["first_broken"], nullptr);
  EXPECT_EQ(r["history"]["ok"], true);
  EXPECT_EQ(r["history"]["rows"], 1);

  // A row changed behind isb's back (with write access to the file and its triggers dropped) shows.
  ASSERT_EQ(Raw("DROP TRIGGER audit_log_no_update; UPDATE audit_log SET actor = 'user:mallory' WHERE id = 1"), "");
  r = Ok("audit_verify", json::object(), As(ops, "a"));
  EXPECT_EQ(r["audit_log"]["ok"], false);
  EXPECT_EQ(r["audit_log"]["first_broken"]["id"], 1);

  Error e = Fail("audit_verify", json::object(), As(UserIn("alice", "a", Role::kOwner), "a"));
  EXPECT_EQ(e.code, Code::kForbidden);
  EXPECT_EQ(e.message, "audit_verify needs a platform admin");
}

TEST_F(AuditToolsTest, HistoryOfTheOrgsSandboxOnly) {
  std::string mine = SandboxOf("a");
  std::string theirs = SandboxOf("b");
  ASSERT_TRUE(
      history_->Record({.sandbox = mine, .org = "a", .event = "stopped", .actor_kind = "system", .reason = "idle"})
          .ok());
  CallContext viewer = As(UserIn("vera", "a", Role::kViewer), "a");

  json r = Ok("history_query", {{"sandbox", mine}}, viewer);
  ASSERT_EQ(r["events"].size(), 2u);
  EXPECT_EQ(r["events"][0]["event"], "created");
  EXPECT_EQ(r["events"][0]["actor"], "user:alice");
  EXPECT_EQ(r["events"][1]["event"], "stopped");
  EXPECT_EQ(r["events"][1]["reason"], "idle");
  for (const auto& ev : r["events"]) EXPECT_EQ(ev["sandbox"], mine);

  Error e = Fail("history_query", {{"sandbox", theirs}}, viewer);
  EXPECT_EQ(e.code, Code::kNotFound);
  EXPECT_EQ(e.message, "no sandbox '" + theirs + "'");
}

TEST_F(AuditToolsTest, HistoryOfTheWholeOrgWithoutASandbox) {
  std::string first = SandboxOf("a");
  std::string other = SandboxOf("b");
  std::string second = SandboxOf("a");
  // A removed sandbox is gone from the org's view, its events are not.
  ASSERT_TRUE(
      history_->Record({.sandbox = first, .org = "a", .event = "removed", .actor = "user:alice", .actor_kind = "user"})
          .ok());
  ASSERT_TRUE(fake_.Remove(first).ok());

  json r = Ok("history_query", json::object(), As(UserIn("vera", "a", Role::kViewer), "a"));
  EXPECT_EQ(Ids(r["events"]), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(r["events"][0]["sandbox"], first);
  EXPECT_EQ(r["events"][1]["sandbox"], second);
  EXPECT_EQ(r["events"][2]["event"], "removed");
  EXPECT_EQ(r["next_after"], nullptr);
  // Paged: one at a time.
  r = Ok("history_query", {{"limit", 1}, {"after", 1}}, As(UserIn("vera", "a", Role::kViewer), "a"));
  EXPECT_EQ(Ids(r["events"]), (std::vector<int64_t>{3}));
  EXPECT_EQ(r["next_after"], 3);

  r = Ok("history_query", json::object(), As(UserIn("bob", "b", Role::kViewer), "b"));
  EXPECT_EQ(Ids(r["events"]), (std::vector<int64_t>{2}));
  EXPECT_EQ(r["events"][0]["sandbox"], other);
  // The removed sandbox by reference is gone like any missing one.
  Error e = Fail("history_query", {{"sandbox", first}}, As(UserIn("vera", "a", Role::kViewer), "a"));
  EXPECT_EQ(e.code, Code::kNotFound);
  EXPECT_EQ(e.message, "no sandbox '" + first + "'");
}

}  // namespace
}  // namespace isb::api
