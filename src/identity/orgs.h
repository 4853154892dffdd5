// Orgs (the tenant boundary; `default` always exists) and memberships with their roles.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "identity/clock.h"
#include "identity/principal.h"
#include "store/db.h"

namespace isb::identity {

inline constexpr std::string_view kDefaultOrg = "default";

struct Org {
  int64_t id = 0;
  std::string name;  // the identifier (URLs, token scopes, audit rows): it never changes
  int64_t created_at = 0;
  std::string display_name;  // "" : none
  std::string description;
};

// What org_update changes; an unset field stays as it is.
struct OrgUpdate {
  std::optional<std::string> display_name{};
  std::optional<std::string> description{};
};

// What an org's sandboxes may be allocated in all; unset: no limit.
struct Quota {
  std::optional<double> cpus{};        // cores
  std::optional<int64_t> memory{};     // bytes
  std::optional<int64_t> instances{};  // sandboxes, running or stopped
  std::optional<int64_t> disk{};       // bytes of writable layers (each sandbox's spec.disk)
  std::optional<int64_t> pids{};       // processes and threads (each sandbox's spec.pids)
};

struct Member {
  int64_t user_id = 0;
  std::string user_name;
  Role role = Role::kViewer;
};

// Every change takes the caller's principal and checks what the data decides (not the tool's least role, which is
// the authorizer's): platform admins create and delete orgs; admins of an org manage its members; only owners make,
// unmake or remove owners; an org always keeps one owner once it has had one. An org the caller does not reach is
// kNotFound, as if it did not exist. Thread-safe.
class Orgs {
 public:
  Orgs(store::Db& db, Clock now) : db_(db), now_(std::move(now)) {}

  Result<int64_t> Create(const Principal& caller, std::string_view name);
  // `default` is kForbidden "org default cannot be deleted". Deletes its memberships, tokens and invitations.
  Status Delete(const Principal& caller, std::string_view name);
  // Owners of the org (and platform admins) change its display name and description. Control characters are
  // kInvalidArgument.
  Result<Org> Update(const Principal& caller, std::string_view org, const OrgUpdate& update);
  Result<Org> Get(std::string_view name);
  Result<std::vector<Org>> List();
  // The orgs `caller` reaches, by name.
  Result<std::vector<Org>> ListFor(const Principal& caller);

  Status AddMember(const Principal& caller, std::string_view org, int64_t user, Role role);
  // Demoting the last owner is kConflict.
  Status ChangeRole(const Principal& caller, std::string_view org, int64_t user, Role role);
  // Removing the last owner is kConflict.
  Status RemoveMember(const Principal& caller, std::string_view org, int64_t user);
  Result<std::vector<Member>> Members(std::string_view org);

  // Platform admins set an org's quota (replacing it whole); anyone may read it through the tools that reach the org.
  Status SetQuota(const Principal& caller, std::string_view org, const Quota& quota);
  Result<Quota> GetQuota(std::string_view org);

 private:
  // The org's id when `caller` is at least admin there (owner when `owner_needed`).
  Result<int64_t> ManagedOrg(const Principal& caller, std::string_view org, bool owner_needed);
  Result<Role> CurrentRole(int64_t org_id, std::string_view org, int64_t user);

  store::Db& db_;
  Clock now_;
};

}  // namespace isb::identity
