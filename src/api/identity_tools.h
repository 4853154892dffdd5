// The tools about callers and their credentials: whoami, users, and API tokens.
#pragma once

#include "api/registry.h"
#include "identity/store.h"

namespace isb::api {

// whoami, user_create, user_list, token_create, token_list, token_revoke. `store` must outlive the registry.
Status AddIdentityTools(Registry& registry, identity::IdentityStore& store);

}  // namespace isb::api
