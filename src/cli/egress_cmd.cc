// `isb egress`: show and change a sandbox's egress, and list the connections its egress refused.
#include "cli/egress_cmd.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <tuple>

#include "cli/audit_rows.h"
#include "egress/policy.h"

namespace isb::cli {
namespace {

struct EgressFlags {
  std::shared_ptr<ConnectFlags> connect = SharedConnectFlags();
  std::string sandbox;
  EgressChange change;
  int64_t limit = 20;
  bool json = false;
};

CLI::App* Command(CLI::App* parent, const std::shared_ptr<EgressFlags>& f, const char* name, const char* help) {
  auto* cmd = parent->add_subcommand(name, help);
  AddConnectOptions(cmd, f->connect);
  cmd->add_option("sandbox", f->sandbox, "The sandbox's id or name")->required();
  return cmd;
}

// The sandbox's current egress from sandbox_get.
Result<json> CurrentEgress(const ToolClient& client, const std::string& sandbox, std::string* id) {
  ISB_ASSIGN_OR_RETURN(json info, client.Call("sandbox_get", {{"sandbox", sandbox}}));
  if (id != nullptr) *id = info.value("id", "");
  const json spec = info.value("spec", json::object());
  return spec.contains("egress") ? spec["egress"] : json("none");
}

int RunShow(const EgressFlags& f) {
  auto client = Connect(*f.connect);
  if (!client.ok()) return ReportUsage(client.error());
  auto egress = CurrentEgress(*client, f.sandbox, nullptr);
  if (!egress.ok()) return Report(egress.error());
  if (f.json)
    Print(*egress);
  else
    std::fputs(EgressText(*egress).c_str(), stdout);
  return kExitOk;
}

int RunSet(const EgressFlags& f) {
  const EgressChange& c = f.change;
  if (c.replace.empty() == (c.add.empty() && c.remove.empty()))
    return ReportUsage(Usage("give the hosts (isb egress set SANDBOX HOST...) or --add/--rm, not both, not neither"));
  EgressChange checked;
  for (auto [flag, given, out] :
       {std::tuple("host", &c.replace, &checked.replace), std::tuple("--add", &c.add, &checked.add),
        std::tuple("--rm", &c.remove, &checked.remove)}) {
    auto hosts = EgressEntries(flag, *given);
    if (!hosts.ok()) return ReportUsage(hosts.error());
    *out = hosts->get<std::vector<std::string>>();
  }
  auto client = Connect(*f.connect);
  if (!client.ok()) return ReportUsage(client.error());
  auto now = CurrentEgress(*client, f.sandbox, nullptr);
  if (!now.ok()) return Report(now.error());
  auto next = NextEgress(f.sandbox, *now, checked);
  if (!next.ok()) return Report(next.error());
  auto info = client->Call("sandbox_egress_set", {{"sandbox", f.sandbox}, {"egress", *next}});
  if (!info.ok()) return Report(info.error());
  const json spec = info->value("spec", json::object());
  const json egress = spec.contains("egress") ? spec["egress"] : json("none");
  if (f.json)
    Print(egress);
  else
    std::fputs(EgressText(egress).c_str(), stdout);
  return kExitOk;
}

// The last `keep` egress_connect rows of the sandbox, oldest first, in one call (audit_list's `latest`).
Result<json> LastRefusals(const ToolClient& client, const std::string& id, int64_t keep) {
  ISB_ASSIGN_OR_RETURN(
      json page,
      client.Call("audit_list",
                  {{"action", "egress_connect"}, {"actor", "sandbox:" + id}, {"limit", keep}, {"latest", true}}));
  return page.value("records", json::array());
}

int RunLog(const EgressFlags& f) {
  auto client = Connect(*f.connect);
  if (!client.ok()) return ReportUsage(client.error());
  std::string id;
  auto egress = CurrentEgress(*client, f.sandbox, &id);
  if (!egress.ok()) return Report(egress.error());
  auto rows = LastRefusals(*client, id, f.limit);
  if (!rows.ok()) return Report(rows.error());
  if (f.json)
    Print(json{{"records", *rows}});
  else
    std::fputs(EgressLogTable(*rows).c_str(), stdout);
  return kExitOk;
}

// The list an --add/--rm changes: the list itself, or the object form's allow list.
json* ListOf(json& egress) {
  if (egress.is_array()) return &egress;
  if (egress.is_object() && !egress.contains("block") && egress.contains("allow") && egress["allow"].is_array())
    return &egress["allow"];
  return nullptr;
}

// An entry as the daemon reads it ("PyPI.org." is "pypi.org:443"), so --add and --rm compare rules, not spellings;
// an entry that does not parse here is compared as written (the daemon says what is wrong with it).
std::string Canonical(const json& entry) {
  if (!entry.is_string()) return entry.dump();
  auto spec = egress::ParseEgressSpec(json::array({entry}));
  if (!spec.ok() || spec->allow.size() != 1) return entry.get<std::string>();
  return spec->allow[0].ToString();
}

json::iterator FindRule(json& list, const std::string& entry) {
  const std::string canonical = Canonical(entry);
  return std::find_if(list.begin(), list.end(), [&](const json& h) { return Canonical(h) == canonical; });
}

}  // namespace

std::string EgressText(const json& egress) {
  if (egress.is_string()) return egress.get<std::string>() + "\n";
  std::string out;
  if (egress.is_array()) {
    for (const json& h : egress) out += (h.is_string() ? h.get<std::string>() : h.dump()) + "\n";
    return out;
  }
  if (!egress.is_object()) return egress.dump() + "\n";
  for (const char* key : {"allow", "block", "judge"}) {
    for (const json& h : egress.value(key, json::array()))
      out += std::string(key) + " " + (h.is_string() ? h.get<std::string>() : h.dump()) + "\n";
  }
  for (const json& s : egress.value("secrets", json::array()))
    out += "secret " + (s.is_string() ? s.get<std::string>() : s.value("name", s.dump())) + "\n";
  return out;
}

// An egress object with no allow list (a block list, a judge, secrets alone): hosts set over it would drop those.
std::string NoAllowList(const std::string& sandbox) {
  return sandbox +
         "'s egress is an object without an allow list (a block list, a judge or secrets alone): setting "
         "hosts here would drop those; change it with the sandbox_egress_set tool (isb egress show " +
         sandbox + ")";
}

Result<json> NextEgress(const std::string& sandbox, const json& now, const EgressChange& change) {
  json next = now;
  json* list = ListOf(next);
  if (!change.replace.empty()) {
    // "none" and "open" are modes of their own: sent as such, for the daemon to say whether it can change to them.
    if (change.replace.size() == 1 && (change.replace[0] == "none" || change.replace[0] == "open"))
      return json(change.replace[0]);
    if (now.is_object() && list == nullptr) return Usage(NoAllowList(sandbox));
    if (list == nullptr || next.is_array()) return json(change.replace);
    *list = change.replace;  // the object form: its secrets and on_leak stay
    return next;
  }
  if (now.is_object() && list == nullptr) return Usage(NoAllowList(sandbox));
  if (list == nullptr) {
    return Usage("--add/--rm change a list of hosts, and " + sandbox + "'s egress is " +
                 (now.is_string() ? now.get<std::string>() : now.dump()) +
                 "; give the whole list instead: isb egress set " + sandbox + " HOST...");
  }
  for (const std::string& host : change.remove) {
    auto it = FindRule(*list, host);
    if (it == list->end())
      return Usage("--rm '" + host + "': not in " + sandbox + "'s egress (isb egress show " + sandbox + ")");
    list->erase(it);
  }
  for (const std::string& host : change.add)
    if (FindRule(*list, host) == list->end()) list->push_back(host);
  return next;
}

std::string EgressLogTable(const json& records) {
  std::string out = "TIME                 TARGET                         REASON\n";
  char line[160];
  for (const json& r : records) {
    const json details = r.value("details", json::object());
    const std::string reason = details.is_object() ? details.value("reason", "") : "";
    std::snprintf(line, sizeof line, "%-20s %-30s ", UtcTime(r.value("time", int64_t{0})).c_str(),
                  r.value("target", "").c_str());
    out += line + reason + "\n";
  }
  return out;
}

void AddEgressCommand(CLI::App& app, int* exit_code) {
  auto* egress = app.add_subcommand("egress", "A sandbox's egress: where it may connect, and what was refused");
  egress->require_subcommand(1);
  auto f = std::make_shared<EgressFlags>();
  auto* cmd = Command(egress, f, "show", "The hosts the sandbox may reach (none, open, or its list)");
  cmd->add_flag("--json", f->json, "Print the spec's egress as JSON");
  cmd->callback([f, exit_code] { *exit_code = RunShow(*f); });

  cmd = Command(egress, f, "set",
                "Replace the sandbox's list of hosts, or change it with --add/--rm; new connections follow at once");
  cmd->add_option("hosts", f->change.replace, "host[:port] or *.domain entries (repeatable, or comma-separated)");
  cmd->add_option("--add", f->change.add, "Add this host to the list (repeatable)");
  cmd->add_option("--rm", f->change.remove, "Take this host out of the list (repeatable)");
  cmd->add_flag("--json", f->json, "Print the new egress as JSON");
  cmd->callback([f, exit_code] { *exit_code = RunSet(*f); });

  cmd = Command(egress, f, "log", "The sandbox's last refused connections and why (org admins; from the audit log)");
  cmd->add_option("--limit", f->limit, "At most N rows, the latest")->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_flag("--json", f->json, "Print the audit rows as JSON");
  cmd->callback([f, exit_code] { *exit_code = RunLog(*f); });
}

}  // namespace isb::cli
