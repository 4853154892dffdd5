// The identity commands: flags -> tool input -> the tool's answer. A secret (a password, a minted token) never goes
// through argv: passwords come from stdin, a minted token goes to stdout only.
#include "cli/identity_cmds.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <tuple>

#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {
namespace {

struct Flags {
  std::shared_ptr<ConnectFlags> connect = SharedConnectFlags();
  bool json = false;
};

CLI::App* Command(CLI::App* parent, const std::shared_ptr<Flags>& flags, const char* name, const char* help) {
  auto* cmd = parent->add_subcommand(name, help);
  AddConnectOptions(cmd, flags->connect);
  cmd->add_flag("--json", flags->json, "Print the tool's result as JSON");
  return cmd;
}

// Calls `tool`; prints the result as JSON with --json, else what `text` makes of it.
int Run(const Flags& flags, const std::string& tool, const json& input, const std::function<void(const json&)>& text) {
  auto client = Connect(*flags.connect);
  if (!client.ok()) return ReportUsage(client.error());
  auto r = client->Call(tool, input);
  if (!r.ok()) return Report(r.error());
  if (flags.json)
    Print(*r);
  else
    text(*r);
  return kExitOk;
}

// One line from stdin, without its newline.
Result<std::string> PasswordFromStdin() {
  std::string line;
  if (!std::getline(std::cin, line)) return Error::Of(Code::kInvalidArgument, "--password-stdin: no line on stdin");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

struct UserFlags {
  std::string name;
  bool admin = false, password_stdin = false;
};

struct TokenFlags {
  std::string name, org, role, scopes, expires, user;
  bool superadmin = false;
};

Result<json> TokenInput(const TokenFlags& f) {
  json in = {{"name", f.name}};
  if (!f.org.empty()) in["org"] = f.org;
  if (!f.role.empty()) in["role"] = f.role;
  if (!f.scopes.empty()) in["scopes"] = f.scopes;
  if (!f.user.empty()) in["user"] = f.user;
  if (f.superadmin) in["superadmin"] = true;
  if (!f.expires.empty()) {
    ISB_ASSIGN_OR_RETURN(int64_t seconds, ParseSeconds("--expires", f.expires));
    in["expires_in"] = seconds;
  }
  return in;
}

void AddUserCommands(CLI::App& app, const std::shared_ptr<Flags>& flags, int* exit_code) {
  auto* user = app.add_subcommand("user", "Accounts (platform admins; on this host, the host)");
  user->require_subcommand(1);
  auto uf = std::make_shared<UserFlags>();
  auto* cmd = Command(user, flags, "create", "Create an account; --admin makes it a platform admin");
  cmd->add_option("name", uf->name, "The account's name")->required();
  cmd->add_flag("--admin", uf->admin, "A platform admin: every org, creates and removes orgs");
  cmd->add_flag("--password-stdin", uf->password_stdin, "Read its password (at least 12 characters) from stdin");
  cmd->callback([flags, uf, exit_code] {
    json in = {{"name", uf->name}};
    if (uf->admin) in["platform_admin"] = true;
    if (uf->password_stdin) {
      auto password = PasswordFromStdin();
      if (!password.ok()) {
        *exit_code = ReportUsage(password.error());
        return;
      }
      in["password"] = *password;
    }
    *exit_code =
        Run(*flags, "user_create", in, [](const json& r) { std::printf("%s\n", r.value("name", "").c_str()); });
  });
  cmd = Command(user, flags, "ls", "List accounts");
  cmd->callback([flags, exit_code] {
    *exit_code = Run(*flags, "user_list", json::object(), [](const json& r) {
      std::printf("%-6s %-32s %-6s %s\n", "ID", "NAME", "ADMIN", "STATE");
      const json users = r.value("users", json::array());
      for (const json& u : users) {
        std::printf("%-6lld %-32s %-6s %s\n", static_cast<long long>(u.value("id", int64_t{0})),
                    u.value("name", "").c_str(), u.value("platform_admin", false) ? "yes" : "",
                    u.value("disabled", false) ? "revoked" : "active");
      }
    });
  });
  auto revoke_name = std::make_shared<std::string>();
  cmd = Command(user, flags, "revoke", "Take an account away: no sign-in, every session and token revoked");
  cmd->add_option("name", *revoke_name, "The account's name")->required();
  cmd->callback([flags, revoke_name, exit_code] {
    *exit_code = Run(*flags, "user_revoke", {{"name", *revoke_name}},
                     [](const json& r) { std::printf("revoked %s\n", r.value("name", "").c_str()); });
  });
}

void AddTokenCommands(CLI::App& app, const std::shared_ptr<Flags>& flags, int* exit_code) {
  auto* token = app.add_subcommand("token", "API tokens");
  token->require_subcommand(1);
  auto tf = std::make_shared<TokenFlags>();
  auto* cmd = Command(token, flags, "create", "Mint a token and print it (shown once; isb keeps only its hash)");
  cmd->add_option("name", tf->name, "What you call it")->required();
  cmd->add_option("--org-only", tf->org, "The one org it reaches (default: every org the user reaches)");
  cmd->add_option("--role", tf->role, "A cap on the role: viewer, member, admin or owner");
  cmd->add_option("--scopes", tf->scopes,
                  "Comma-separated: read, deploy, admin, metrics (platform admins: /metrics only), tool:GLOB");
  cmd->add_option("--expires", tf->expires, "Lifetime, e.g. 30d (default: none)");
  cmd->add_option("--for-user", tf->user, "On the host: mint it for this user");
  cmd->add_flag("--superadmin", tf->superadmin, "On the host: a superadmin token (isb_sa_)");
  cmd->callback([flags, tf, exit_code] {
    auto in = TokenInput(*tf);
    if (!in.ok()) {
      *exit_code = ReportUsage(in.error());
      return;
    }
    *exit_code =
        Run(*flags, "token_create", *in, [](const json& r) { std::printf("%s\n", r.value("token", "").c_str()); });
  });
  cmd = Command(token, flags, "ls", "List your tokens (on the host: every token)");
  cmd->callback([flags, exit_code] {
    *exit_code = Run(*flags, "token_list", json::object(), [](const json& r) {
      std::printf("%-6s %-24s %-10s %-16s %s\n", "ID", "NAME", "KIND", "ORG", "STATE");
      const json tokens = r.value("tokens", json::array());
      for (const json& t : tokens) {
        std::string state = t.value("revoked_at", json()).is_null() ? "active" : "revoked";
        std::printf("%-6lld %-24s %-10s %-16s %s\n", static_cast<long long>(t.value("id", int64_t{0})),
                    t.value("name", "").c_str(), t.value("kind", "").c_str(),
                    t.value("org", "").empty() ? "*" : t.value("org", "").c_str(), state.c_str());
      }
    });
  });
  auto id = std::make_shared<int64_t>(0);
  cmd = Command(token, flags, "revoke", "Revoke a token at once");
  cmd->add_option("id", *id, "The token's id (isb token ls)")->required();
  cmd->callback([flags, id, exit_code] {
    *exit_code = Run(*flags, "token_revoke", {{"id", *id}}, [](const json& r) {
      std::printf("revoked %lld\n", static_cast<long long>(r.value("id", int64_t{0})));
    });
  });
}

struct OrgFlags {
  std::string name, display_name, description, role;
  int64_t id = 0;
};

void AddOrgCommands(CLI::App& app, const std::shared_ptr<Flags>& flags, int* exit_code) {
  auto* org = app.add_subcommand("org", "Orgs: the tenant boundary (create and rm: platform admins)");
  org->require_subcommand(1);
  auto of = std::make_shared<OrgFlags>();
  auto* cmd = Command(org, flags, "ls", "The orgs you reach");
  cmd->callback([flags, exit_code] {
    *exit_code = Run(*flags, "org_list", json::object(), [](const json& r) {
      std::printf("%-32s %s\n", "NAME", "DISPLAY NAME");
      for (const json& o : r.value("orgs", json::array()))
        std::printf("%-32s %s\n", o.value("name", "").c_str(), o.value("display_name", "").c_str());
    });
  });
  cmd = Command(org, flags, "create", "Create an org");
  cmd->add_option("name", of->name, "Lower-case letters, digits and '-'")->required();
  cmd->callback([flags, of, exit_code] {
    *exit_code = Run(*flags, "org_create", {{"name", of->name}},
                     [](const json& r) { std::printf("%s\n", r.value("name", "").c_str()); });
  });
  cmd = Command(org, flags, "rm", "Delete an org with its memberships, tokens and invitations");
  cmd->add_option("name", of->name, "The org")->required();
  cmd->callback([flags, of, exit_code] {
    *exit_code = Run(*flags, "org_delete", {{"name", of->name}},
                     [](const json& r) { std::printf("deleted %s\n", r.value("name", "").c_str()); });
  });
  cmd = Command(org, flags, "update", "Change the org's display name or description (owners; the org is --org)");
  auto* display = cmd->add_option("--display-name", of->display_name, "What people see (\"\" for none)");
  auto* description = cmd->add_option("--description", of->description, "A line about the org (\"\" for none)");
  cmd->callback([flags, of, display, description, exit_code] {
    json in = json::object();
    if (display->count() > 0) in["display_name"] = of->display_name;
    if (description->count() > 0) in["description"] = of->description;
    *exit_code = Run(*flags, "org_update", in, [](const json& r) {
      std::printf("%s: %s\n", r.value("name", "").c_str(), r.value("display_name", "").c_str());
    });
  });
}

void AddInvitationCommands(CLI::App& app, const std::shared_ptr<Flags>& flags, int* exit_code) {
  auto* inv = app.add_subcommand("invitation", "Invitations into an org (admins; the org is --org)");
  inv->require_subcommand(1);
  auto of = std::make_shared<OrgFlags>();
  auto* cmd = Command(inv, flags, "create", "Mint an invitation and print it (shown once; valid 7 days)");
  cmd->add_option("role", of->role, "viewer, member, admin or owner")->required();
  cmd->callback([flags, of, exit_code] {
    *exit_code = Run(*flags, "invitation_create", {{"role", of->role}},
                     [](const json& r) { std::printf("%s\n", r.value("invitation", "").c_str()); });
  });
  cmd = Command(inv, flags, "ls", "The org's invitations and their state");
  cmd->callback([flags, exit_code] {
    *exit_code = Run(*flags, "invitation_list", json::object(), [](const json& r) {
      std::printf("%-6s %-8s %-24s %s\n", "ID", "ROLE", "BY", "STATE");
      for (const json& i : r.value("invitations", json::array())) {
        std::printf("%-6lld %-8s %-24s %s\n", static_cast<long long>(i.value("id", int64_t{0})),
                    i.value("role", "").c_str(), i.value("created_by", "").c_str(), i.value("state", "").c_str());
      }
    });
  });
  cmd = Command(inv, flags, "revoke", "Revoke a pending invitation");
  cmd->add_option("id", of->id, "The invitation's id (isb invitation ls)")->required();
  cmd->callback([flags, of, exit_code] {
    *exit_code = Run(*flags, "invitation_revoke", {{"id", of->id}}, [](const json& r) {
      std::printf("revoked %lld\n", static_cast<long long>(r.value("id", int64_t{0})));
    });
  });
}

struct MemberFlags {
  std::string user, role;
};

void PrintMember(const json& r) { std::printf("%s %s\n", r.value("user", "").c_str(), r.value("role", "").c_str()); }

void AddMemberCommands(CLI::App& app, const std::shared_ptr<Flags>& flags, int* exit_code) {
  auto* member = app.add_subcommand("member", "An org's members and their roles (admins; the org is --org)");
  member->require_subcommand(1);
  auto mf = std::make_shared<MemberFlags>();
  auto* cmd = Command(member, flags, "ls", "The org's members with their roles");
  cmd->callback([flags, exit_code] {
    *exit_code = Run(*flags, "member_list", json::object(), [](const json& r) {
      std::printf("%-6s %-32s %s\n", "ID", "USER", "ROLE");
      for (const json& m : r.value("members", json::array())) {
        std::printf("%-6lld %-32s %s\n", static_cast<long long>(m.value("user_id", int64_t{0})),
                    m.value("user", "").c_str(), m.value("role", "").c_str());
      }
    });
  });
  for (auto [name, tool, help] :
       {std::tuple("add", "member_add", "Add a user to the org with a role (owners add owners)"),
        std::tuple("set-role", "member_update", "Change a member's role (only owners make or unmake owners)")}) {
    cmd = Command(member, flags, name, help);
    cmd->add_option("user", mf->user, "The user's name")->required();
    cmd->add_option("role", mf->role, "viewer, member, admin or owner")->required();
    cmd->callback([flags, mf, exit_code, tool = std::string(tool)] {
      *exit_code = Run(*flags, tool, {{"user", mf->user}, {"role", mf->role}}, PrintMember);
    });
  }
  cmd = Command(member, flags, "rm", "Remove a member from the org (the last owner stays)");
  cmd->add_option("user", mf->user, "The user's name")->required();
  cmd->callback([flags, mf, exit_code] {
    *exit_code = Run(*flags, "member_remove", {{"user", mf->user}},
                     [](const json& r) { std::printf("removed %s\n", r.value("user", "").c_str()); });
  });
}

}  // namespace

void AddIdentityCommands(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<Flags>();
  auto* cmd = Command(&app, flags, "whoami", "Who the daemon takes you for, and your role in each org");
  cmd->callback([flags, exit_code] {
    *exit_code = Run(*flags, "whoami", json::object(), [](const json& r) {
      std::printf("%s\n", r.value("subject", "").c_str());
      if (auto roles = r.find("roles"); roles != r.end() && roles->is_object()) {
        for (auto it = roles->begin(); it != roles->end(); ++it) {
          std::printf("  %s: %s\n", it.key().c_str(), it.value().get<std::string>().c_str());
        }
      }
    });
  });
  AddUserCommands(app, flags, exit_code);
  AddTokenCommands(app, flags, exit_code);
  AddOrgCommands(app, flags, exit_code);
  AddInvitationCommands(app, flags, exit_code);
  AddMemberCommands(app, flags, exit_code);
}

}  // namespace isb::cli
