#include "identity/roles.h"

#include <gtest/gtest.h>

namespace isb::identity {
namespace {

TEST(RolesTest, ParseAndFormatRoundTripInOrder) {
  Role prev = Role::kViewer;
  for (const char* name : {"viewer", "member", "admin", "owner"}) {
    auto r = ParseRole(name);
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_EQ(RoleName(*r), name);
    EXPECT_GE(*r, prev);
    prev = *r;
  }
  EXPECT_LT(Role::kViewer, Role::kMember);
  EXPECT_LT(Role::kMember, Role::kAdmin);
  EXPECT_LT(Role::kAdmin, Role::kOwner);
}

TEST(RolesTest, UnknownRoleIsInvalid) {
  auto r = ParseRole("Owner");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_EQ(r.error().message, "role: 'Owner' is not a role (viewer, member, admin, owner)");
  EXPECT_FALSE(ParseRole("").ok());
}

TEST(ScopesTest, ParseAndFormat) {
  auto s = ParseScopes("read,deploy,admin,tool:sandbox_*,read");
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->size(), 4u);  // the duplicate read dropped
  EXPECT_EQ((*s)[3], (Scope{ScopeKind::kTool, "sandbox_*"}));
  EXPECT_EQ(FormatScopes(*s), "read,deploy,admin,tool:sandbox_*");
  auto none = ParseScopes("");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(ScopesTest, MalformedScopesAreRefusedExactly) {
  auto bad = ParseScopes("read,write");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Code::kInvalidArgument);
  EXPECT_EQ(bad.error().message, "scope: 'write' is not a scope (read, deploy, admin, metrics, tool:GLOB)");
  EXPECT_EQ(ParseScopes("read,").error().message, "scope: '' is not a scope (read, deploy, admin, metrics, tool:GLOB)");
  const std::string glob_error = "scope: tool:GLOB needs a glob of 1 to 64 characters of a-z, 0-9, _, * and ?";
  EXPECT_EQ(ParseScope("tool:").error().message, glob_error);
  EXPECT_EQ(ParseScope("tool:Sandbox").error().message, glob_error);
  EXPECT_EQ(ParseScope("tool:a,b").error().message, glob_error);
  EXPECT_EQ(ParseScope("tool:" + std::string(65, 'a')).error().message, glob_error);
  EXPECT_TRUE(ParseScope("tool:" + std::string(64, 'a')).ok());
}

TEST(GlobTest, Matches) {
  EXPECT_TRUE(GlobMatch("sandbox_*", "sandbox_exec"));
  EXPECT_TRUE(GlobMatch("sandbox_*", "sandbox_"));
  EXPECT_FALSE(GlobMatch("sandbox_*", "sandbox"));
  EXPECT_TRUE(GlobMatch("*_list", "token_list"));
  EXPECT_FALSE(GlobMatch("*_list", "token_list_all"));
  EXPECT_TRUE(GlobMatch("s?n*x*c", "sandbox_exec"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_FALSE(GlobMatch("", "a"));
  EXPECT_TRUE(GlobMatch("whoami", "whoami"));
  EXPECT_FALSE(GlobMatch("whoami", "whoam"));
  // Many stars against a long miss stays quick (no exponential backtracking).
  EXPECT_FALSE(GlobMatch("*a*a*a*a*a*a*a*a*b", std::string(5000, 'a')));
}

TEST(MayTest, RoleBelowTheToolsLeastRoleIsRefused) {
  EXPECT_TRUE(May(Role::kMember, {}, Role::kMember, ScopeKind::kDeploy, "sandbox_create").ok());
  auto st = May(Role::kViewer, {}, Role::kMember, ScopeKind::kDeploy, "sandbox_create");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Code::kForbidden);
  EXPECT_EQ(st.error().message, "role viewer may not call sandbox_create, which needs member");
}

TEST(MayTest, ScopesOnlyNarrow) {
  std::vector<Scope> read = {{ScopeKind::kRead, ""}};
  std::vector<Scope> deploy = {{ScopeKind::kDeploy, ""}};
  std::vector<Scope> admin = {{ScopeKind::kAdmin, ""}};
  EXPECT_TRUE(May(Role::kMember, read, Role::kViewer, ScopeKind::kRead, "sandbox_list").ok());
  EXPECT_TRUE(May(Role::kMember, deploy, Role::kViewer, ScopeKind::kRead, "sandbox_list").ok());
  EXPECT_TRUE(May(Role::kMember, deploy, Role::kMember, ScopeKind::kDeploy, "sandbox_create").ok());
  EXPECT_TRUE(May(Role::kAdmin, admin, Role::kAdmin, ScopeKind::kAdmin, "member_add").ok());
  auto st = May(Role::kOwner, read, Role::kMember, ScopeKind::kDeploy, "sandbox_create");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Code::kForbidden);
  EXPECT_EQ(st.error().message,
            "token scopes (read) do not cover sandbox_create; it needs scope deploy, admin, or tool:sandbox_create");
  EXPECT_EQ(May(Role::kOwner, deploy, Role::kAdmin, ScopeKind::kAdmin, "member_add").error().message,
            "token scopes (deploy) do not cover member_add; it needs scope admin, or tool:member_add");
  // An admin scope never lifts a role: the role check comes first.
  EXPECT_EQ(May(Role::kMember, admin, Role::kAdmin, ScopeKind::kAdmin, "member_add").error().message,
            "role member may not call member_add, which needs admin");
}

TEST(MayTest, ToolGlobScopesCoverMatchingToolsOfAnyKind) {
  std::vector<Scope> exec_only = {{ScopeKind::kTool, "sandbox_exec"}};
  EXPECT_TRUE(May(Role::kMember, exec_only, Role::kMember, ScopeKind::kDeploy, "sandbox_exec").ok());
  EXPECT_FALSE(May(Role::kMember, exec_only, Role::kViewer, ScopeKind::kRead, "sandbox_list").ok());
  std::vector<Scope> sandboxes = {{ScopeKind::kTool, "sandbox_*"}, {ScopeKind::kRead, ""}};
  EXPECT_TRUE(May(Role::kMember, sandboxes, Role::kMember, ScopeKind::kDeploy, "sandbox_rm").ok());
  EXPECT_TRUE(May(Role::kMember, sandboxes, Role::kViewer, ScopeKind::kRead, "whoami").ok());
  EXPECT_EQ(May(Role::kOwner, sandboxes, Role::kAdmin, ScopeKind::kAdmin, "token_create").error().message,
            "token scopes (tool:sandbox_*,read) do not cover token_create; it needs scope admin, or tool:token_create");
  // Still not above the role.
  EXPECT_FALSE(May(Role::kViewer, exec_only, Role::kMember, ScopeKind::kDeploy, "sandbox_exec").ok());
}

TEST(MayTest, ToolKindsParse) {
  EXPECT_EQ(*ParseToolKind("deploy"), ScopeKind::kDeploy);
  EXPECT_EQ(ParseToolKind("tool:x").error().message, "tool kind: 'tool:x' is not a kind (read, deploy, admin)");
}

}  // namespace
}  // namespace isb::identity
