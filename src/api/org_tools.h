// The tools about orgs: orgs themselves, their members, invitations, and the caller's browser sessions.
#pragma once

#include "api/registry.h"
#include "identity/store.h"

namespace isb::api {

// org_list, org_get, org_quota_set, org_create, org_delete, member_list, member_add, member_update, member_remove,
// invitation_create, invitation_accept, session_list, session_revoke. Member and invitation tools act in the call's
// org. `store` must outlive the registry.
Status AddOrgTools(Registry& registry, identity::IdentityStore& store);

}  // namespace isb::api
