// Orgs and memberships, with the last-owner rule held by single conditional statements.
#include "identity/orgs.h"

#include <variant>

#include "identity/names.h"

namespace isb::identity {
namespace {

Error OrgNotFound(std::string_view org) { return Error::Of(Code::kNotFound, "org " + std::string(org) + " not found"); }

Error NotMember(int64_t user, std::string_view org) {
  return Error::Of(Code::kNotFound, "user " + std::to_string(user) + " is not a member of org " + std::string(org));
}

Error LastOwner(int64_t user, std::string_view org) {
  return Error::Of(Code::kConflict, "user " + std::to_string(user) + " is the last owner of org " + std::string(org) +
                                        "; make another member owner first");
}

Status NeedPlatformAdmin(const Principal& caller, std::string_view what) {
  if (caller.IsPlatformAdmin()) return {};
  return Error::Of(Code::kForbidden, "only platform admins " + std::string(what));
}

constexpr char kOrgColumns[] = "SELECT id, name, created_at, display_name, description FROM orgs ";

Org OrgOf(const store::Row& r) {
  return Org{store::AsInt(r[0]), store::AsText(r[1]), store::AsInt(r[2]), store::AsText(r[3]), store::AsText(r[4])};
}

}  // namespace

Result<int64_t> Orgs::Create(const Principal& caller, std::string_view name) {
  ISB_TRY(NeedPlatformAdmin(caller, "create orgs"));
  ISB_TRY(CheckOrgName(name));
  // The audit log and the sandboxes' history keep a deleted org's name, and an org reads its rows by name: a new org
  // of that name would read the old one's. So a name stays taken while rows name it.
  auto rows = db_.Query(
      "INSERT INTO orgs(name, created_at) SELECT ?1, ?2 WHERE NOT EXISTS (SELECT 1 FROM audit_log WHERE org = ?1) "
      "AND NOT EXISTS (SELECT 1 FROM sandbox_history WHERE org = ?1) RETURNING id",
      {std::string(name), now_()});
  auto taken = [&] { return Error::Of(Code::kConflict, "org " + std::string(name) + " already exists"); };
  if (!rows.ok() && rows.error().code == Code::kConflict) return taken();
  if (!rows.ok()) return rows.error();
  if (rows->empty() && Get(name).ok()) return taken();  // live, and named by rows: the insert selected nothing
  if (rows->empty())
    return Error::Of(Code::kConflict, "org " + std::string(name) +
                                          " existed before, and its audit records and history keep the name: "
                                          "choose another");
  return store::AsInt((*rows)[0][0]);
}

Status Orgs::Delete(const Principal& caller, std::string_view name) {
  ISB_TRY(NeedPlatformAdmin(caller, "delete orgs"));
  if (name == kDefaultOrg) return Error::Of(Code::kForbidden, "org default cannot be deleted");
  // Sandboxes name their org too, and would pass to a later org of that name: an org goes only without any.
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("DELETE FROM orgs WHERE name = ?1 AND NOT EXISTS "
                                            "(SELECT 1 FROM sandboxes WHERE org = ?1) RETURNING id",
                                            {std::string(name)}));
  if (!rows.empty()) return {};
  ISB_TRY(Get(name));
  return Error::Of(Code::kConflict, "org " + std::string(name) + " still has sandboxes: remove them first");
}

Status Orgs::SetQuota(const Principal& caller, std::string_view org, const Quota& quota) {
  ISB_TRY(NeedPlatformAdmin(caller, "set quotas"));
  ISB_ASSIGN_OR_RETURN(Org o, Get(org));
  auto opt_real = [](const std::optional<double>& v) { return v ? store::Value(*v) : store::Value(nullptr); };
  auto opt_int = [](const std::optional<int64_t>& v) { return v ? store::Value(*v) : store::Value(nullptr); };
  return db_.Exec(
      "INSERT INTO org_quotas(org_id, cpus, memory, instances, disk, pids) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
      "ON CONFLICT(org_id) DO UPDATE SET cpus = ?2, memory = ?3, instances = ?4, disk = ?5, pids = ?6",
      {o.id, opt_real(quota.cpus), opt_int(quota.memory), opt_int(quota.instances), opt_int(quota.disk),
       opt_int(quota.pids)});
}

Result<Quota> Orgs::GetQuota(std::string_view org) {
  ISB_ASSIGN_OR_RETURN(Org o, Get(org));
  ISB_ASSIGN_OR_RETURN(
      auto rows, db_.Query("SELECT cpus, memory, instances, disk, pids FROM org_quotas WHERE org_id = ?1", {o.id}));
  Quota q;
  if (rows.empty()) return q;
  const store::Row& r = rows[0];
  if (auto* d = std::get_if<double>(&r[0]))
    q.cpus = *d;
  else if (auto* i = std::get_if<int64_t>(&r[0]))
    q.cpus = static_cast<double>(*i);
  if (!std::holds_alternative<std::nullptr_t>(r[1])) q.memory = store::AsInt(r[1]);
  if (!std::holds_alternative<std::nullptr_t>(r[2])) q.instances = store::AsInt(r[2]);
  if (!std::holds_alternative<std::nullptr_t>(r[3])) q.disk = store::AsInt(r[3]);
  if (!std::holds_alternative<std::nullptr_t>(r[4])) q.pids = store::AsInt(r[4]);
  return q;
}

Result<Org> Orgs::Update(const Principal& caller, std::string_view org, const OrgUpdate& update) {
  ISB_TRY(RequireRole(caller, org, Role::kOwner, "change org " + std::string(org)));
  if (update.display_name) ISB_TRY(CheckDisplayText("display_name", *update.display_name));
  if (update.description) ISB_TRY(CheckDisplayText("description", *update.description));
  auto text = [](const std::optional<std::string>& v) { return v ? store::Value(*v) : store::Value(nullptr); };
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("UPDATE orgs SET display_name = coalesce(?2, display_name), "
                                            "description = coalesce(?3, description) WHERE name = ?1 RETURNING id",
                                            {std::string(org), text(update.display_name), text(update.description)}));
  if (rows.empty()) return OrgNotFound(org);
  return Get(org);
}

Result<Org> Orgs::Get(std::string_view name) {
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query(std::string(kOrgColumns) + "WHERE name = ?1", {std::string(name)}));
  if (rows.empty()) return OrgNotFound(name);
  return OrgOf(rows[0]);
}

Result<std::vector<Org>> Orgs::List() {
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query(std::string(kOrgColumns) + "ORDER BY name"));
  std::vector<Org> out;
  for (const auto& r : rows) out.push_back(OrgOf(r));
  return out;
}

Result<std::vector<Org>> Orgs::ListFor(const Principal& caller) {
  ISB_ASSIGN_OR_RETURN(auto all, List());
  std::vector<Org> out;
  for (auto& o : all)
    if (caller.RoleIn(o.name)) out.push_back(std::move(o));
  return out;
}

Result<int64_t> Orgs::ManagedOrg(const Principal& caller, std::string_view org, bool owner_needed) {
  if (!caller.RoleIn(org)) return OrgNotFound(org);
  ISB_ASSIGN_OR_RETURN(Org o, Get(org));
  ISB_TRY(RequireRole(
      caller, org, owner_needed ? Role::kOwner : Role::kAdmin,
      std::string(owner_needed ? "make, unmake or remove owners" : "manage members") + " of org " + std::string(org)));
  return o.id;
}

Result<Role> Orgs::CurrentRole(int64_t org_id, std::string_view org, int64_t user) {
  ISB_ASSIGN_OR_RETURN(auto rows,
                       db_.Query("SELECT role FROM memberships WHERE org_id = ?1 AND user_id = ?2", {org_id, user}));
  if (rows.empty()) return NotMember(user, org);
  return ParseRole(store::AsText(rows[0][0]));
}

Status Orgs::AddMember(const Principal& caller, std::string_view org, int64_t user, Role role) {
  ISB_ASSIGN_OR_RETURN(int64_t org_id, ManagedOrg(caller, org, role == Role::kOwner));
  auto users = db_.Query("SELECT 1 FROM users WHERE id = ?1", {user});
  if (!users.ok()) return users.error();
  if (users->empty()) return Error::Of(Code::kNotFound, "user " + std::to_string(user) + " not found");
  auto st = db_.Exec("INSERT INTO memberships(org_id, user_id, role) VALUES (?1, ?2, ?3)",
                     {org_id, user, std::string(RoleName(role))});
  if (!st.ok() && st.error().code == Code::kConflict)
    return Error::Of(Code::kConflict, "user " + std::to_string(user) + " is already a member of org " +
                                          std::string(org) + "; change its role instead");
  return st;
}

Status Orgs::ChangeRole(const Principal& caller, std::string_view org, int64_t user, Role role) {
  ISB_ASSIGN_OR_RETURN(int64_t org_id, ManagedOrg(caller, org, false));
  ISB_ASSIGN_OR_RETURN(Role current, CurrentRole(org_id, org, user));
  if (current == Role::kOwner || role == Role::kOwner) ISB_TRY(ManagedOrg(caller, org, true));
  // One statement: another owner must remain, checked and changed atomically.
  ISB_ASSIGN_OR_RETURN(
      auto rows,
      db_.Query(
          "UPDATE memberships SET role = ?3 WHERE org_id = ?1 AND user_id = ?2 AND (role != 'owner' OR ?3 = 'owner' OR "
          "(SELECT count(*) FROM memberships WHERE org_id = ?1 AND role = 'owner') > 1) RETURNING role",
          {org_id, user, std::string(RoleName(role))}));
  if (rows.empty()) return LastOwner(user, org);
  return {};
}

Status Orgs::RemoveMember(const Principal& caller, std::string_view org, int64_t user) {
  ISB_ASSIGN_OR_RETURN(int64_t org_id, ManagedOrg(caller, org, false));
  ISB_ASSIGN_OR_RETURN(Role current, CurrentRole(org_id, org, user));
  if (current == Role::kOwner) ISB_TRY(ManagedOrg(caller, org, true));
  ISB_ASSIGN_OR_RETURN(
      auto rows,
      db_.Query("DELETE FROM memberships WHERE org_id = ?1 AND user_id = ?2 AND (role != 'owner' OR "
                "(SELECT count(*) FROM memberships WHERE org_id = ?1 AND role = 'owner') > 1) RETURNING role",
                {org_id, user}));
  if (rows.empty()) return LastOwner(user, org);
  return {};
}

Result<std::vector<Member>> Orgs::Members(std::string_view org) {
  ISB_ASSIGN_OR_RETURN(Org o, Get(org));
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("SELECT u.id, u.name, m.role FROM memberships m JOIN users u ON u.id = "
                                            "m.user_id WHERE m.org_id = ?1 ORDER BY u.name",
                                            {o.id}));
  std::vector<Member> out;
  for (const auto& r : rows) {
    auto role = ParseRole(store::AsText(r[2]));
    if (role.ok()) out.push_back(Member{store::AsInt(r[0]), store::AsText(r[1]), *role});
  }
  return out;
}

}  // namespace isb::identity
