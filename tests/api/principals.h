// Callers for the api tests: the host, and users with a role in one org.
#pragma once

#include <string>

#include "api/registry.h"

namespace isb::api {

// A token-bearing user with `role` in `org`; credential ids tell callers apart.
inline Identity UserIn(const std::string& name, const std::string& org = "default",
                       identity::Role role = identity::Role::kMember, int64_t credential = 1) {
  Identity who;
  who.kind = identity::PrincipalKind::kToken;
  who.user_id = credential;
  who.user_name = name;
  who.credential_id = credential;
  who.roles[org] = role;
  return who;
}

// A context acting as the host in `org`.
inline CallContext HostContext(const std::string& org = "default") {
  CallContext ctx;
  ctx.identity = Identity::Host();
  ctx.org = org;
  return ctx;
}

}  // namespace isb::api
