// `isb setup`: over the unix socket (the host's own power), make the first platform admin, owner of the default org,
// and mint their first API token; or, with --url, the same through the setup route with the setup token. The token
// goes to stdout, the commands that work next to stderr.
#include "cli/setup_cmd.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>

#include "base/file.h"

#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {
namespace {

struct SetupFlags {
  std::shared_ptr<ConnectFlags> connect = SharedConnectFlags();
  std::string state_dir;
  std::string user = "admin";
  std::string token_name;
  std::string public_url = "http://127.0.0.1:8092";
  std::string setup_token_file;  // --url: the setup token's file, "-" for stdin
  bool password_stdin = false;
};

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

// The first line of `file` ("-": of stdin), without its newline.
Result<std::string> FirstLine(const std::string& file) {
  std::string line;
  if (file == "-") {
    if (!std::getline(std::cin, line)) return Usage("--setup-token-file -: no line on stdin");
  } else {
    Result<std::string> text = ReadFile(file);
    if (!text.ok()) return Usage("--setup-token-file: " + text.error().message);
    line = text->substr(0, text->find('\n'));
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// The admin's password from stdin, when asked for.
Result<std::string> Password(const SetupFlags& f) {
  std::string password;
  if (!f.password_stdin) return password;
  if (!std::getline(std::cin, password)) return Usage("--password-stdin: no line on stdin");
  if (!password.empty() && password.back() == '\r') password.pop_back();
  return password;
}

void PrintMade(const SetupFlags& f, const std::string& token, const std::string& url, const std::string& socket) {
  std::printf("%s\n", token.c_str());
  std::fflush(stdout);
  std::string steps = SetupNextSteps(f.user, token, url, socket);
  if (!f.password_stdin) {
    steps += "The web UI's sign-in needs a password; this account has none (isb setup --password-stdin sets one).\n";
  }
  std::fputs(steps.c_str(), stderr);
}

// The admins exist already (`admins`, their names): who, and how to get another token.
int RefuseSecondAdmin(const std::string& admins) {
  return Report(Error::Of(Code::kConflict, "a platform admin exists already (" + admins +
                                               "); mint another token with: isb token create --for-user NAME "
                                               "TOKEN_NAME"));
}

}  // namespace

std::string PlainHttpWarning(const Endpoint& endpoint) {
  if (!endpoint.unix_path.empty()) return "";
  std::string_view host = endpoint.host;
  if (host.starts_with("[") && host.ends_with("]")) host = host.substr(1, host.size() - 2);
  // Loopback stays on this machine; a tailnet address (100.64.0.0/10, fd7a:115c:a1e0::/48) is encrypted by it.
  in_addr v4{};
  in6_addr v6{};
  if (host == "localhost") return "";
  if (std::string h(host); inet_pton(AF_INET, h.c_str(), &v4) == 1) {
    const uint32_t a = ntohl(v4.s_addr);
    if ((a >> 24) == 127 || (a & 0xffc00000u) == 0x64400000u) return "";
  } else if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    static const uint8_t kTailnet[6] = {0xfd, 0x7a, 0x11, 0x5c, 0xa1, 0xe0};
    if (IN6_IS_ADDR_LOOPBACK(&v6) || std::memcmp(v6.s6_addr, kTailnet, sizeof(kTailnet)) == 0) return "";
  }
  return "isb: warning: the setup token and the new admin's password go to " + endpoint.Describe() +
         " over plain HTTP, which anyone on the way can read; run isb setup on the daemon's host, or reach it over "
         "loopback (an SSH tunnel) or a tailnet";
}

namespace {

// From elsewhere: the setup route, with the setup token the daemon wrote on its host, makes the admin and a token.
int RunRemoteSetup(const SetupFlags& f) {
  if (f.setup_token_file.empty()) {
    return ReportUsage(
        Usage("isb setup --url needs the setup token the daemon wrote (<state>/setup-token on its "
              "host): --setup-token-file FILE, or - to read it from stdin; and --password-stdin"));
  }
  if (!f.password_stdin)
    return ReportUsage(Usage("isb setup --url needs --password-stdin: the setup route makes an account that signs in"));
  auto setup_token = FirstLine(f.setup_token_file);
  if (!setup_token.ok()) return ReportUsage(setup_token.error());
  auto password = Password(f);
  if (!password.ok()) return ReportUsage(password.error());
  auto client = Connect(*f.connect);
  if (!client.ok()) return ReportUsage(client.error());
  if (std::string warning = PlainHttpWarning(client->endpoint()); !warning.empty())
    std::fprintf(stderr, "%s\n", warning.c_str());
  HttpRequest req;
  req.method = "POST";
  req.target = "/api/v1/auth/setup";
  req.headers = {{"Content-Type", "application/json"}, {"Accept", "application/json"}};
  req.body = json{{"setup_token", *setup_token},
                  {"user", f.user},
                  {"password", *password},
                  {"token_name", f.token_name.empty() ? f.user + "-cli" : f.token_name}}
                 .dump();
  auto sent = HttpClient(client->endpoint()).Send(req);
  if (!sent.ok()) return Report(sent.error());
  if (sent->status != 200) return Report(DaemonError(sent->status, sent->body));
  json answer = json::parse(sent->body, nullptr, false);
  if (!answer.is_object()) return Report(Error::Of(Code::kInternal, "the isb daemon's setup answer is not JSON"));
  if (answer.contains("token_error")) return Report(Error::Of(Code::kInternal, answer.value("token_error", "")));
  std::string url = f.connect->url;
  while (url.ends_with('/')) url.pop_back();
  PrintMade(f, answer.value("token", ""), url, "");
  return kExitOk;
}

int RunSetup(SetupFlags& f) {
  if (!f.state_dir.empty()) {
    if (!f.connect->socket.empty() || !f.connect->url.empty())
      return ReportUsage(Usage("give --state-dir or --socket/--url, not both"));
    f.connect->socket = f.state_dir + "/api/isb.sock";
  }
  if (!f.connect->url.empty()) return RunRemoteSetup(f);
  if (!f.setup_token_file.empty())
    return ReportUsage(Usage("--setup-token-file is for --url; over the unix socket the host needs no setup token"));
  auto password = Password(f);
  if (!password.ok()) return ReportUsage(password.error());
  auto client = Connect(*f.connect);
  if (!client.ok()) return ReportUsage(client.error());
  auto admins = PlatformAdmins(*client);
  if (!admins.ok()) return Report(admins.error());
  if (!admins->empty()) return RefuseSecondAdmin(*admins);
  // first_admin: the daemon checks again that there is none and makes this one in one step, so that of two setups
  // at once one is refused.
  json user = {{"name", f.user}, {"first_admin", true}};
  if (f.password_stdin) user["password"] = *password;
  if (auto made = client->Call("user_create", user); !made.ok()) {
    if (made.error().code == Code::kConflict && made.error().message.starts_with("first_admin:")) {
      admins = PlatformAdmins(*client);  // another setup won the race: name whom it made
      if (admins.ok() && !admins->empty()) return RefuseSecondAdmin(*admins);
    }
    return Report(made.error());
  }
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
  PrintMade(f, minted->value("token", ""), f.public_url, client->endpoint().unix_path);
  return kExitOk;
}

}  // namespace

std::string SetupNextSteps(const std::string& user, const std::string& token, const std::string& url,
                           const std::string& socket) {
  return "isb: " + user +
         " is a platform admin and owner of org default; the line above is their API token "
         "(shown once).\n"
         "Next, from any shell:\n"
         "  export ISB_URL=" +
         url + " ISB_TOKEN=" + token +
         "\n"
         "  isb create --name demo\n"
         "  isb exec demo -- uname -a\n"
         "  isb rm demo\n"
         "REST: curl -s -X POST -H \"Authorization: Bearer $ISB_TOKEN\" " +
         url +
         "/api/v1/tools/sandbox_list -d '{}'\n"
         "MCP:  " +
         url +
         "/mcp with the header \"Authorization: Bearer $ISB_TOKEN\", or a local client's config:\n"
         "      {\"command\": \"isb\", \"args\": [\"mcp\", \"--url\", \"" +
         url + "\"], \"env\": {\"ISB_TOKEN\": \"" + token + "\"}}\n" +
         (socket.empty() ? std::string()
                         : "      (not --socket " + socket +
                               ": over the socket isb mcp acts as the host, beyond every "
                               "role, approval and tool policy)\n");
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
                "Read the admin's password (at least 12 characters) from stdin, for the web UI (after the setup "
                "token's line with --setup-token-file -)");
  cmd->add_option("--setup-token-file", f->setup_token_file,
                  "With --url, from another machine: the file holding the setup token the daemon wrote "
                  "(<state>/setup-token), or - for stdin's first line");
  cmd->callback([f, exit_code] { *exit_code = RunSetup(*f); });
}

}  // namespace isb::cli
