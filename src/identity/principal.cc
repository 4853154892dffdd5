// Effective roles of a principal.
#include "identity/principal.h"

#include <algorithm>

namespace isb::identity {

std::string_view PrincipalKindName(PrincipalKind kind) {
  switch (kind) {
    case PrincipalKind::kUser:
      return "user";
    case PrincipalKind::kToken:
      return "token";
    case PrincipalKind::kSession:
      return "session";
    case PrincipalKind::kSuperadmin:
      return "superadmin";
  }
  return "unknown";
}

Principal Principal::Host() {
  Principal p;
  p.kind = PrincipalKind::kSuperadmin;
  p.superadmin = true;
  return p;
}

std::optional<Role> Principal::RoleIn(std::string_view org) const {
  if (!org_scope.empty() && org != org_scope) return std::nullopt;
  std::optional<Role> role;
  if (superadmin || platform_admin) {
    role = Role::kOwner;
  } else if (auto it = roles.find(org); it != roles.end()) {
    role = it->second;
  }
  if (role && role_cap) role = std::min(*role, *role_cap);
  return role;
}

Status RequireRole(const Principal& caller, std::string_view org, Role need, const std::string& what) {
  auto role = caller.RoleIn(org);
  if (!role) return Error::Of(Code::kNotFound, "org " + std::string(org) + " not found");
  if (*role < need)
    return Error::Of(Code::kForbidden, "role " + std::string(RoleName(*role)) + " may not " + what + "; it needs " +
                                           std::string(RoleName(need)));
  return {};
}

std::string Principal::Subject() const {
  switch (kind) {
    case PrincipalKind::kSuperadmin:
      return "superadmin";
    case PrincipalKind::kUser:
      return "user:" + user_name;
    case PrincipalKind::kSession:
      return "session:" + user_name;
    case PrincipalKind::kToken:
      return (superadmin ? "superadmin-token:" : "token:") + std::to_string(credential_id);
  }
  return "unknown";
}

}  // namespace isb::identity
