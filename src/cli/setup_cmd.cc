// `isb setup`: over the unix socket (the host's own power), make the first platform admin, owner of the default org,
// and mint their first API token; print the token on stdout and the commands that work next on stderr.
#include "cli/setup_cmd.h"

#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {
namespace {

struct SetupFlags {
  std::shared_ptr<ConnectFlags> connect = SharedConnectFlags();
  std::string state_dir;
  std::string user = "admin";
  std::string token_name;
  std::string public_url = "http://127.0.0.1:8092";
  bool password_stdin = false;
};

Error Usage(std::string message) { return Error::Of(Code::kInvalidArgument, std::move(message)); }

// The enabled platform admins' names, comma-separated ("" when none).
Result<std::string> PlatformAdmins(const ToolClient& client) {
  ISB_ASSIGN_OR_RETURN(json listed, client.Call("user_list", json::object()));
  std::string names;
  for (const json& u : listed.value("users", json::array())) {
    if (!u.value("platform_admin", false) || u.value("disabled", false)) continue;
    names += (names.empty() ? "" : ", ") + u.value("name", "");
  }
  return names;
}

int RunSetup(SetupFlags& f) {
  if (!f.state_dir.empty()) {
    if (!f.connect->socket.empty() || !f.connect->url.empty())
      return ReportUsage(Usage("give --state-dir or --socket/--url, not both"));
    f.connect->socket = f.state_dir + "/api/isb.sock";
  }
  if (!f.connect->url.empty()) {
    return ReportUsage(Usage("isb setup runs on the daemon's host over its unix socket (--socket or --state-dir); "
                             "from elsewhere, POST /api/v1/auth/setup with the setup token, a user, a password and "
                             "a token_name"));
  }
  std::string password;
  if (f.password_stdin) {
    if (!std::getline(std::cin, password))
      return ReportUsage(Usage("--password-stdin: no line on stdin"));
    if (!password.empty() && password.back() == '\r') password.pop_back();
  }
  auto client = Connect(*f.connect);
  if (!client.ok()) return ReportUsage(client.error());
  auto admins = PlatformAdmins(*client);
  if (!admins.ok()) return Report(admins.error());
  if (!admins->empty()) {
    return Report(Error::Of(Code::kConflict, "a platform admin exists already (" + *admins +
                                                 "); mint another token with: isb token create --for-user NAME "
                                                 "TOKEN_NAME"));
  }
  json user = {{"name", f.user}, {"platform_admin", true}};
  if (f.password_stdin) user["password"] = password;
  if (auto made = client->Call("user_create", user); !made.ok()) return Report(made.error());
  // As the setup token's route does: the first admin owns the default org, so their sandboxes have a home.
  ConnectFlags in_default = *f.connect;
  in_default.org = "default";
  auto owner_client = Connect(in_default);
  if (!owner_client.ok()) return ReportUsage(owner_client.error());
  if (auto added = owner_client->Call("member_add", {{"user", f.user}, {"role", "owner"}}); !added.ok())
    return Report(added.error());
  const std::string token_name = f.token_name.empty() ? f.user + "-cli" : f.token_name;
  auto minted = client->Call("token_create", {{"name", token_name}, {"user", f.user}});
  if (!minted.ok()) return Report(minted.error());
  const std::string token = minted->value("token", "");
  std::printf("%s\n", token.c_str());
  std::fflush(stdout);
  std::string steps = SetupNextSteps(f.user, token, f.public_url, client->endpoint().unix_path);
  if (!f.password_stdin) {
    steps += "The web UI's sign-in needs a password; this account has none (isb setup --password-stdin sets one).\n";
  }
  std::fputs(steps.c_str(), stderr);
  return kExitOk;
}

}  // namespace

std::string SetupNextSteps(const std::string& user, const std::string& token, const std::string& url,
                           const std::string& socket) {
  return "isb: " + user + " is a platform admin and owner of org default; the line above is their API token "
         "(shown once).\n"
         "Next, from any shell:\n"
         "  export ISB_URL=" + url + " ISB_TOKEN=" + token + "\n"
         "  isb create --name demo\n"
         "  isb exec demo -- uname -a\n"
         "  isb rm demo\n"
         "REST: curl -s -X POST -H \"Authorization: Bearer $ISB_TOKEN\" " + url + "/api/v1/tools/sandbox_list -d '{}'\n"
         "MCP:  " + url + "/mcp with the header \"Authorization: Bearer $ISB_TOKEN\", or a local client's config:\n"
         "      {\"command\": \"isb\", \"args\": [\"mcp\", \"--url\", \"" + url + "\"], \"env\": {\"ISB_TOKEN\": \"" +
         token + "\"}}\n"
         "      (not --socket " + socket + ": over the socket isb mcp acts as the host, beyond every role, approval "
         "and tool policy)\n";
}

void AddSetupCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<SetupFlags>();
  auto* cmd = app.add_subcommand(
      "setup", "On the daemon's host: make the first platform admin and their first API token in one step");
  AddConnectOptions(cmd, f->connect);
  cmd->add_option("user", f->user, "The admin's name")->capture_default_str();
  cmd->add_option("--state-dir", f->state_dir, "The daemon's state dir: its socket is DIR/api/isb.sock");
  cmd->add_option("--token-name", f->token_name, "What to call the token (default: USER-cli)");
  cmd->add_option("--public-url", f->public_url, "The daemon's HTTP address, for the commands printed")
      ->capture_default_str();
  cmd->add_flag("--password-stdin", f->password_stdin,
                "Read the admin's password (at least 12 characters) from stdin, for the web UI");
  cmd->callback([f, exit_code] { *exit_code = RunSetup(*f); });
}

}  // namespace isb::cli
