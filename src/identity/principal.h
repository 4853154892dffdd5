// Who a resolved caller is: user, credential, org reach, roles, scopes. What the authorizer judges every call by.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "identity/roles.h"

namespace isb::identity {

enum class PrincipalKind {
  kUser,        // signed in with a password just now
  kToken,       // an isb_tok_ or isb_sa_ bearer token
  kSession,     // a browser session (isb_sess_)
  kSuperadmin,  // the host: the unix socket or the CLI on the host
};

std::string_view PrincipalKindName(PrincipalKind kind);  // "user" | "token" | "session" | "superadmin"

struct Principal {
  PrincipalKind kind = PrincipalKind::kUser;
  int64_t user_id = 0;  // 0: no user (the host, an isb_sa_ token)
  std::string user_name;
  int64_t credential_id = 0;     // the token's or session's id; 0 for a password sign-in and the host
  std::string credential_name;   // the token's name
  bool superadmin = false;       // the host or an isb_sa_ token: owner of every org and platform admin
  bool platform_admin = false;   // the user's flag; an org-scoped token drops it
  std::string org_scope;         // "": every org the user reaches; else the one org this credential reaches
  std::optional<Role> role_cap;  // a token's cap on every role
  std::map<std::string, Role, std::less<>> roles;  // org name -> the user's membership role, as stored
  std::vector<Scope> scopes;                       // a token's scopes; empty: unscoped
  std::string resource;  // an OAuth access token's audience (RFC 8707), the one MCP URL it is for; "": any

  // The unix socket's and the host CLI's caller.
  static Principal Host();

  // The effective role in `org`, with the org scope and the role cap applied; nullopt when the caller does not reach
  // `org` at all (the authorizer answers as if it did not exist). Superadmins and platform admins are owners of every
  // org.
  std::optional<Role> RoleIn(std::string_view org) const;
  // Platform powers (creating orgs and users, revoking anyone's credentials): a platform admin's credential capped
  // below owner keeps its reach into every org, at the capped role, but not these.
  bool IsPlatformAdmin() const { return superadmin || (platform_admin && (!role_cap || *role_cap >= Role::kOwner)); }
  // A credential that reaches one org only (an org-scoped token) may not act on what spans every org: the user's
  // other credentials, browser sessions, memberships elsewhere.
  bool OrgScoped() const { return !org_scope.empty(); }
  // For logs and the audit log: "superadmin", "user:NAME", "session:NAME", "token:ID", "superadmin-token:ID".
  std::string Subject() const;
};

// What the stores check for a change in an org, after the authorizer's check of the tool: kNotFound "org O not
// found" when `caller` does not reach `org`, kForbidden "role R may not <what>; it needs <need>" when its role there
// is below `need`.
Status RequireRole(const Principal& caller, std::string_view org, Role need, const std::string& what);

}  // namespace isb::identity
