// The secret tools: an org's secrets, stored encrypted (secrets/secret_store.h), created and changed by its admins,
// read in full by its members (every read audited), and listed by name, version and approved hosts to its viewers.
#pragma once

#include <functional>
#include <string>

#include "api/registry.h"
#include "secrets/secret_store.h"

namespace isb::api {

// secret_create, secret_set, secret_import, secret_delete (the org's admins; admin-scoped tokens), secret_get
// (members; admin-scoped tokens: read and deploy tokens get no value), secret_list, secret_inspect and
// secret_recipient (viewers: never a value), and secret_reencrypt (platform admins). `store` must outlive the registry.
Status AddSecretTools(Registry& registry, secrets::SecretStore& store);

// The hosts a secret may be sent to, as a caller gives them ("api.example.com", "*.example.com:8443"): each checked
// as an egress entry and returned in its canonical form (port 443 unless given), duplicates dropped. Errors
// (kInvalidArgument) name the entry.
Result<std::vector<std::string>> CanonicalSecretHosts(const nlohmann::json& hosts);

}  // namespace isb::api
