// The secret tools. The authorizer has checked the caller's role in the call's org; every call names one org's
// secrets only. A value enters through secret_create or secret_set and leaves only through secret_get: no other
// result, error or audit detail holds one.
#include "api/secret_tools.h"

#include <set>

#include "api/json_util.h"
#include "api/schema.h"
#include "base/base64.h"
#include "egress/policy.h"
#include "secrets/credential_headers.h"

namespace isb::api {
namespace {

using json = nlohmann::json;
using identity::Role;
using identity::ScopeKind;

json NameField() {
  return Str("The secret's name: 1-128 letters, digits, '_', '.' or '-'.", secrets::kMaxSecretNameSize, 1);
}

json HostsField() {
  return {{"type", "array"},
          {"maxItems", 256},
          {"description",
           "The hosts the secret may ever be sent to as a placeholder's value (\"api.example.com\", "
           "\"*.example.com\", \"host:8443\"; port 443 unless given). A sandbox may narrow them, never widen them."},
          {"items", {{"type", "string"}, {"maxLength", 300}}}};
}

json SubstituteField() {
  return {{"type", "array"},
          {"maxItems", 3},
          {"description",
           "Where in a request to its hosts the placeholder is swapped for the value: \"header\" (always), and "
           "\"query\" (the request target) and \"body\" (bodies and WebSocket messages) when opted in. Default "
           "[\"header\"]: an origin that echoes a query or a body back would hand the value to the sandbox; "
           "elsewhere the placeholder goes on as it is."},
          {"items", {{"type", "string"}, {"enum", {"header", "query", "body"}}}}};
}

json HeadersField() {
  return {{"type", "array"},
          {"maxItems", secrets::kMaxExtraSwapHeaders},
          {"description",
           "Header fields the placeholder is swapped in besides the credential headers (Authorization, "
           "Proxy-Authorization, X-Api-Key, Api-Key, X-Auth-Token, X-Goog-Api-Key), e.g. [\"X-Custom-Key\"]; "
           "in any other header it goes on as it is (an origin that reflects or stores a header would hand the value "
           "back). Given to secret_set, it replaces the list."},
          {"items", {{"type", "string"}, {"maxLength", secrets::kMaxSecretNameSize}}}};
}

json LabelsField() { return StringMap("Labels of the secret (never secret themselves).", 64); }

json ValueFields(json props) {
  props["value"] = Str("The value, as text. Or value_base64 for bytes.", secrets::kMaxSecretValueSize);
  props["value_base64"] =
      Str("The value's bytes in base64, instead of value.", (secrets::kMaxSecretValueSize + 2) / 3 * 4);
  return props;
}

json MetaSchema() {
  return Output({{"name", {{"type", "string"}}},
                 {"version", {{"type", "integer"}}},
                 {"created_at", {{"type", "integer"}, {"description", "Unix milliseconds."}}},
                 {"updated_at", {{"type", "integer"}, {"description", "Unix milliseconds."}}},
                 {"hosts", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                 {"labels", {{"type", "object"}}},
                 {"substitute", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                 {"headers", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                 {"placeholder_ready",
                  {{"type", "boolean"},
                   {"description",
                    "The value can go out as a placeholder's (up to 64 KiB, "
                    "no CR or LF); files take any value."}}}},
                {"name", "version", "hosts"});
}

json MetaJson(const secrets::SecretMeta& m) {
  return {{"name", m.name},   {"version", m.version}, {"created_at", m.created_ms}, {"updated_at", m.updated_ms},
          {"hosts", m.hosts}, {"labels", m.labels},   {"substitute", m.substitute}, {"headers", m.headers}};
}

std::map<std::string, std::string> LabelsOf(const json& in) {
  return in.contains("labels") ? in["labels"].get<std::map<std::string, std::string>>()
                               : std::map<std::string, std::string>{};
}

std::optional<std::vector<std::string>> StringsOf(const json& in, const char* field) {
  if (!in.contains(field)) return std::nullopt;
  return in[field].get<std::vector<std::string>>();
}

// The value a call gives: exactly one of value and value_base64, within the store's bound.
Result<secrets::SecretBytes> ValueOf(const json& in) {
  const bool text = in.contains("value"), bytes = in.contains("value_base64");
  if (text == bytes) return Error::Of(Code::kInvalidArgument, "value: give value or value_base64, one of them");
  if (text) return secrets::SecretBytes(in["value"].get_ref<const std::string&>());
  Result<std::string> decoded = Base64Decode(in["value_base64"].get_ref<const std::string&>());
  if (!decoded.ok()) return Error::Of(Code::kInvalidArgument, "value_base64: not base64");
  secrets::SecretBytes value(std::move(*decoded));
  if (value.size() > secrets::kMaxSecretValueSize)
    return Error::Of(Code::kInvalidArgument, "value_base64: a value is at most 1 MiB");
  return value;
}

json WithReadiness(const secrets::SecretMeta& meta, const secrets::SecretStore& store) {
  json out = MetaJson(meta);
  auto value = store.Get(meta.org, meta.name);
  out["placeholder_ready"] = value.ok() && secrets::CheckPlaceholderValue(value->value.view()).ok();
  return out;
}

ToolAccess AdminAccess() { return ToolAccess{.least_role = Role::kAdmin, .kind = ScopeKind::kAdmin}; }

Status AddChanges(Registry& reg, secrets::SecretStore& store) {
  json create = ValueFields({{"name", NameField()},
                             {"hosts", HostsField()},
                             {"labels", LabelsField()},
                             {"substitute", SubstituteField()},
                             {"headers", HeadersField()}});
  ISB_TRY(reg.Add(
      Tool{"secret_create", "Create a secret",
           "Stores a new secret of the call's org, encrypted at rest (admins). A sandbox then uses it as a placeholder "
           "that the egress proxy swaps for the value on the way to one of `hosts`, or as a file; it never sees the "
           "value otherwise.",
           Object(std::move(create), {"name"}), MetaSchema(), ToolAnnotations{}, false,
           [&store](const json& in, const CallContext& ctx) -> Result<json> {
             ISB_ASSIGN_OR_RETURN(secrets::SecretBytes value, ValueOf(in));
             std::vector<std::string> hosts;
             if (in.contains("hosts")) {
               ISB_ASSIGN_OR_RETURN(hosts, CanonicalSecretHosts(in["hosts"]));
             }
             ISB_ASSIGN_OR_RETURN(secrets::SecretMeta meta,
                                  store.Create(ctx.org, in["name"].get<std::string>(), value, hosts, LabelsOf(in),
                                               StringsOf(in, "substitute").value_or(std::vector<std::string>{}),
                                               StringsOf(in, "headers").value_or(std::vector<std::string>{})));
             return WithReadiness(meta, store);
           },
           AdminAccess()}));

  json set = ValueFields({{"name", NameField()},
                          {"hosts", HostsField()},
                          {"labels", LabelsField()},
                          {"substitute", SubstituteField()},
                          {"headers", HeadersField()}});
  ISB_TRY(reg.Add(
      Tool{"secret_set", "Change a secret",
           "A new version of the secret's value (running sandboxes use it within 2 s), and/or its hosts or labels "
           "(admins). Fields not given stay as they are.",
           Object(std::move(set), {"name"}), MetaSchema(), ToolAnnotations{}, false,
           [&store](const json& in, const CallContext& ctx) -> Result<json> {
             const std::string name = in["name"].get<std::string>();
             std::optional<std::vector<std::string>> hosts;
             if (in.contains("hosts")) {
               ISB_ASSIGN_OR_RETURN(hosts, CanonicalSecretHosts(in["hosts"]));
             }
             std::optional<std::map<std::string, std::string>> labels;
             if (in.contains("labels")) labels = LabelsOf(in);
             std::optional<std::vector<std::string>> substitute = StringsOf(in, "substitute");
             std::optional<std::vector<std::string>> headers = StringsOf(in, "headers");
             const bool new_value = in.contains("value") || in.contains("value_base64");
             if (!new_value && !hosts && !labels && !substitute && !headers)
               return Error::Of(Code::kInvalidArgument,
                                "secret_set: give a value, hosts, labels, substitute or headers to change");
             // Checked before the value is stored: a refused name must leave the secret as it was.
             if (headers) {
               ISB_ASSIGN_OR_RETURN(headers, secrets::CanonicalSwapHeaders(*headers));
             }
             ISB_ASSIGN_OR_RETURN(secrets::SecretMeta meta, store.Inspect(ctx.org, name));
             // The value first: one refused (too short, too long, not base64) must leave the secret as it was, not its
             // old value approved for the new hosts or swapped into bodies. A value stored under the hosts it had is
             // what both old and new settings allow.
             if (new_value) {
               ISB_ASSIGN_OR_RETURN(secrets::SecretBytes value, ValueOf(in));
               ISB_ASSIGN_OR_RETURN(meta, store.Set(ctx.org, name, value));
             }
             if (hosts || labels || substitute || headers) {
               ISB_ASSIGN_OR_RETURN(meta, store.Update(ctx.org, name, hosts, labels, substitute, headers));
             }
             return WithReadiness(meta, store);
           },
           AdminAccess()}));

  ISB_TRY(reg.Add(
      Tool{"secret_import", "Import an age file as a secret",
           "A file that `age -r RECIPIENT` encrypted to this daemon's recipient (secret_recipient), stored as a new "
           "secret or as a new version of an existing one (admins).",
           Object({{"name", NameField()},
                   {"age_file_base64", Str("The age file's bytes in base64.", 2u << 20, 1)},
                   {"hosts", HostsField()},
                   {"labels", LabelsField()}},
                  {"name", "age_file_base64"}),
           MetaSchema(), ToolAnnotations{}, false,
           [&store](const json& in, const CallContext& ctx) -> Result<json> {
             Result<std::string> file = Base64Decode(in["age_file_base64"].get_ref<const std::string&>());
             if (!file.ok()) return Error::Of(Code::kInvalidArgument, "age_file_base64: not base64");
             std::vector<std::string> hosts;
             if (in.contains("hosts")) {
               ISB_ASSIGN_OR_RETURN(hosts, CanonicalSecretHosts(in["hosts"]));
             }
             ISB_ASSIGN_OR_RETURN(secrets::SecretMeta meta,
                                  store.Import(ctx.org, in["name"].get<std::string>(), *file, hosts, LabelsOf(in)));
             return WithReadiness(meta, store);
           },
           AdminAccess()}));

  return reg.Add(
      Tool{"secret_delete", "Delete a secret",
           "Removes every version of the secret (admins). Running sandboxes stop having it swapped at once: their "
           "placeholder then goes out as it is.",
           Object({{"name", NameField()}}, {"name"}), Output({{"deleted", {{"type", "string"}}}}, {"deleted"}),
           ToolAnnotations{.destructive = true, .idempotent = false}, false,
           [&store](const json& in, const CallContext& ctx) -> Result<json> {
             const std::string name = in["name"].get<std::string>();
             ISB_TRY(store.Delete(ctx.org, name));
             return json{{"deleted", name}};
           },
           ToolAccess{.least_role = Role::kAdmin, .kind = ScopeKind::kAdmin}});
}

Status AddReads(Registry& reg, secrets::SecretStore& store) {
  json got = Output({{"name", {{"type", "string"}}},
                     {"version", {{"type", "integer"}}},
                     {"value", {{"type", "string"}, {"description", "The value, when it is UTF-8 text."}}},
                     {"value_base64", {{"type", "string"}, {"description", "The value's bytes, when it is not."}}}},
                    {"name", "version"});
  ISB_TRY(reg.Add(
      Tool{"secret_get", "Read a secret's value",
           "The value of a secret of the call's org (members; not for read or deploy tokens). Every read is in the "
           "audit log.",
           Object({{"name", NameField()}, {"version", Int("A version; default the latest.", 1, INT32_MAX)}}, {"name"}),
           std::move(got), ToolAnnotations{.read_only = true, .idempotent = true}, false,
           [&store](const json& in, const CallContext& ctx) -> Result<json> {
             ISB_ASSIGN_OR_RETURN(secrets::SecretStore::Value v,
                                  store.Get(ctx.org, in["name"].get<std::string>(), in.value("version", 0)));
             json out = {{"name", v.meta.name}, {"version", v.version}};
             if (IsValidUtf8(v.value.view())) {
               out["value"] = std::string(v.value.view());
             } else {
               out["value_base64"] = Base64Encode(v.value.view());
             }
             return out;
           },
           ToolAccess{.least_role = Role::kMember, .kind = ScopeKind::kAdmin, .audit_reads = true}}));

  ISB_TRY(reg.Add(Tool{"secret_list", "List secrets",
                       "The call's org's secrets by name: versions, hosts and labels, never values.", Object({}, {}),
                       Output({{"secrets", {{"type", "array"}, {"items", MetaSchema()}}}}, {"secrets"}),
                       ToolAnnotations{.read_only = true, .idempotent = true}, false,
                       [&store](const json&, const CallContext& ctx) -> Result<json> {
                         json out = json::array();
                         for (const secrets::SecretMeta& m : store.List(ctx.org)) out.push_back(MetaJson(m));
                         return json{{"secrets", std::move(out)}};
                       }}));

  ISB_TRY(reg.Add(Tool{
      "secret_inspect", "Inspect a secret",
      "One secret's version, hosts, labels and whether its value can go out as a placeholder; never the value.",
      Object({{"name", NameField()}}, {"name"}), MetaSchema(), ToolAnnotations{.read_only = true, .idempotent = true},
      false, [&store](const json& in, const CallContext& ctx) -> Result<json> {
        ISB_ASSIGN_OR_RETURN(secrets::SecretMeta meta, store.Inspect(ctx.org, in["name"].get<std::string>()));
        return WithReadiness(meta, store);
      }}));

  ISB_TRY(
      reg.Add(Tool{"secret_recipient", "The daemon's age recipient",
                   "The public key (age1...) secrets are encrypted to: `age -r` it to make a file secret_import reads.",
                   Object({}, {}), Output({{"recipient", {{"type", "string"}}}}, {"recipient"}),
                   ToolAnnotations{.read_only = true, .idempotent = true}, false,
                   [&store](const json&, const CallContext&) -> Result<json> {
                     return json{{"recipient", store.Recipient()}};
                   }}));

  return reg.Add(Tool{
      "secret_reencrypt", "Re-encrypt every secret",
      "Every secret file of every org encrypted again to the daemon's key and the current break-glass recipients "
      "(platform admins): after a recipient is added or removed.",
      Object({}, {}), Output({{"files", {{"type", "integer"}}}}, {"files"}), ToolAnnotations{.idempotent = true}, false,
      [&store](const json&, const CallContext&) -> Result<json> {
        ISB_ASSIGN_OR_RETURN(int files, store.Reencrypt());
        return json{{"files", files}};
      },
      ToolAccess{.least_role = Role::kOwner, .kind = ScopeKind::kAdmin, .org_bound = false, .platform = true}});
}

}  // namespace

Result<std::vector<std::string>> CanonicalSecretHosts(const json& hosts) {
  Result<egress::EgressSpec> parsed = egress::ParseEgressSpec(json{{"allow", hosts}});
  if (!parsed.ok()) {
    std::string why = parsed.error().message;
    if (why.starts_with("egress ")) why = why.substr(7);
    return Error::Of(parsed.error().code, "hosts: " + why);
  }
  std::vector<std::string> out;
  for (const egress::HostRule& r : parsed->allow) out.push_back(r.ToString());
  return out;
}

Status AddSecretTools(Registry& registry, secrets::SecretStore& store) {
  ISB_TRY(AddChanges(registry, store));
  return AddReads(registry, store);
}

}  // namespace isb::api
