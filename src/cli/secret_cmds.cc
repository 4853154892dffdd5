// The secret commands: flags -> secret tool input -> the tool's answer. Values travel in the request body only.
#include "cli/secret_cmds.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "api/json_util.h"
#include "base/base64.h"
#include "base/file.h"
#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {
namespace {

struct SecretFlags {
  std::shared_ptr<ConnectFlags> connect = SharedConnectFlags();
  bool json = false;
  std::string name, from_file, file;
  std::vector<std::string> hosts, labels, substitute, headers;
  bool stdin_value = false, clear_hosts = false, clear_headers = false;
  int version = 0;
};

CLI::App* Command(CLI::App* parent, const std::shared_ptr<SecretFlags>& f, const char* name, const char* help,
                  bool named = true) {
  auto* cmd = parent->add_subcommand(name, help);
  AddConnectOptions(cmd, f->connect);
  cmd->add_flag("--json", f->json, "Print the tool's result as JSON");
  if (named) cmd->add_option("name", f->name, "The secret's name")->required();
  return cmd;
}

void AddMetaOptions(CLI::App* cmd, const std::shared_ptr<SecretFlags>& f) {
  cmd->add_option("--host", f->hosts, "A host it may be sent to (repeatable): host, *.domain, host:port");
  cmd->add_option("--label", f->labels, "K=V (repeatable)");
}

void AddSwapOptions(CLI::App* cmd, const std::shared_ptr<SecretFlags>& f) {
  cmd->add_option("--substitute", f->substitute,
                  "Swap the placeholder in this part of a request too (repeatable): query (the request target) or "
                  "body (bodies and WebSocket messages); headers always. Only for origins that never echo them back")
      ->check(CLI::IsMember({"header", "query", "body"}));
  cmd->add_option("--header", f->headers,
                  "Swap the placeholder in this header too (repeatable), besides Authorization, Proxy-Authorization, "
                  "X-Api-Key, Api-Key, X-Auth-Token and X-Goog-Api-Key; in other headers it goes on as it is");
}

Result<std::string> ReadStdin() {
  std::string bytes{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  if (std::cin.bad()) return Error::Of(Code::kInvalidArgument, "stdin: cannot be read");
  return ValueFromStdin(std::move(bytes));
}

// The value: from --from-file as it is, else from stdin.
Result<std::string> ValueOf(const SecretFlags& f) {
  if (!f.from_file.empty()) {
    Result<std::string> bytes = ReadFile(f.from_file);
    if (!bytes.ok()) return Error::Of(Code::kInvalidArgument, "--from-file: " + bytes.error().message);
    return bytes;
  }
  if (::isatty(STDIN_FILENO)) std::fprintf(stderr, "isb: reading the value from stdin (end with Ctrl-D)\n");
  return ReadStdin();
}

Result<json> MetaInput(const SecretFlags& f) {
  json in = {{"name", f.name}};
  if (!f.hosts.empty() || f.clear_hosts) in["hosts"] = f.hosts;
  if (!f.labels.empty()) {
    json labels = json::object();
    for (const std::string& kv : f.labels) {
      ISB_ASSIGN_OR_RETURN(auto pair, ParseKeyValue("--label", kv));
      labels[pair.first] = pair.second;
    }
    in["labels"] = std::move(labels);
  }
  if (!f.substitute.empty()) {
    json parts = json::array({"header"});
    for (const std::string& part : f.substitute)
      if (part != "header") parts.push_back(part);
    in["substitute"] = std::move(parts);
  }
  if (!f.headers.empty() && f.clear_headers)
    return Error::Of(Code::kInvalidArgument, "--header and --no-headers: give one or the other");
  if (!f.headers.empty() || f.clear_headers) in["headers"] = f.headers;
  return in;
}

// The value as the secret tools take it: text when it is UTF-8, else base64.
void PutValue(json& in, const std::string& value) {
  if (api::IsValidUtf8(value)) {
    in["value"] = value;
  } else {
    in["value_base64"] = Base64Encode(value);
  }
}

int Run(const SecretFlags& f, const std::string& tool, const Result<json>& input,
        const std::function<void(const json&)>& text) {
  if (!input.ok()) return ReportUsage(input.error());
  auto client = Connect(*f.connect);
  if (!client.ok()) return ReportUsage(client.error());
  auto r = client->Call(tool, *input);
  if (!r.ok()) return Report(r.error());
  if (f.json)
    Print(*r);
  else
    text(*r);
  return kExitOk;
}

void PrintMeta(const json& r) {
  std::printf("%s v%lld", r.value("name", "").c_str(), static_cast<long long>(r.value("version", int64_t{0})));
  const json hosts = r.value("hosts", json::array());
  std::string list;
  for (const json& h : hosts) list += (list.empty() ? "" : ",") + h.get<std::string>();
  std::printf(" hosts=%s", list.empty() ? "(none)" : list.c_str());
  const json parts = r.value("substitute", json::array({"header"}));
  if (parts != json::array({"header"})) {
    std::string swapped;
    for (const json& p : parts) swapped += (swapped.empty() ? "" : ",") + p.get<std::string>();
    std::printf(" substitute=%s", swapped.c_str());
  }
  std::string headers;
  for (const json& h : r.value("headers", json::array()))
    headers += (headers.empty() ? "" : ",") + h.get<std::string>();
  if (!headers.empty()) std::printf(" headers=%s", headers.c_str());
  if (!r.value("placeholder_ready", true)) std::printf(" (files only: over 64 KiB or has CR/LF)");
  std::printf("\n");
}

void AddWrites(CLI::App* secret, const std::shared_ptr<SecretFlags>& f, int* exit_code) {
  auto* cmd = Command(secret, f, "create", "Create a secret; its value from stdin or --from-file");
  cmd->add_option("--from-file", f->from_file, "Read the value from this file, byte for byte");
  AddMetaOptions(cmd, f);
  AddSwapOptions(cmd, f);
  cmd->callback([f, exit_code] {
    Result<json> in = MetaInput(*f);
    if (in.ok()) {
      Result<std::string> value = ValueOf(*f);
      if (!value.ok())
        in = value.error();
      else
        PutValue(*in, *value);
    }
    *exit_code = Run(*f, "secret_create", in, PrintMeta);
  });

  cmd = Command(secret, f, "set",
                "A new version from stdin or --from-file; with --host, --label, --substitute or --header only, those "
                "change and the value stays unless --stdin or --from-file is given");
  cmd->add_option("--from-file", f->from_file, "Read the new value from this file, byte for byte");
  cmd->add_flag("--stdin", f->stdin_value, "Read the new value from stdin (the default without --host or --label)");
  cmd->add_flag("--no-hosts", f->clear_hosts, "It may be sent to no host (files only)");
  cmd->add_flag("--no-headers", f->clear_headers,
                "Swapped in the standard credential headers only again (the --header names given before go)");
  AddMetaOptions(cmd, f);
  AddSwapOptions(cmd, f);
  cmd->callback([f, exit_code] {
    Result<json> in = MetaInput(*f);
    const bool meta_only = !f->hosts.empty() || !f->labels.empty() || f->clear_hosts || !f->substitute.empty() ||
                           !f->headers.empty() || f->clear_headers;
    if (in.ok() && (!meta_only || f->stdin_value || !f->from_file.empty())) {
      Result<std::string> value = ValueOf(*f);
      if (!value.ok())
        in = value.error();
      else
        PutValue(*in, *value);
    }
    *exit_code = Run(*f, "secret_set", in, PrintMeta);
  });

  cmd = Command(secret, f, "import", "Import a file `age -r $(isb secret recipient)` encrypted");
  cmd->add_option("file", f->file, "The age file")->required();
  AddMetaOptions(cmd, f);
  cmd->callback([f, exit_code] {
    Result<json> in = MetaInput(*f);
    if (in.ok()) {
      Result<std::string> bytes = ReadFile(f->file);
      if (!bytes.ok())
        in = Error::Of(Code::kInvalidArgument, f->file + ": " + bytes.error().message);
      else
        (*in)["age_file_base64"] = Base64Encode(*bytes);
    }
    *exit_code = Run(*f, "secret_import", in, PrintMeta);
  });

  cmd = Command(secret, f, "rm", "Delete a secret, every version");
  cmd->callback([f, exit_code] {
    *exit_code = Run(*f, "secret_delete", json{{"name", f->name}},
                     [](const json& r) { std::printf("deleted %s\n", r.value("deleted", "").c_str()); });
  });

  cmd = Command(secret, f, "reencrypt", "Encrypt every secret again to the current recipients (platform admins)",
                /*named=*/false);
  cmd->callback([f, exit_code] {
    *exit_code = Run(*f, "secret_reencrypt", json::object(), [](const json& r) {
      std::printf("re-encrypted %lld files\n", static_cast<long long>(r.value("files", int64_t{0})));
    });
  });
}

void AddReads(CLI::App* secret, const std::shared_ptr<SecretFlags>& f, int* exit_code) {
  auto* cmd = Command(secret, f, "get", "Write a secret's value to stdout (audited)");
  cmd->add_option("--version", f->version, "A version (default: the latest)");
  cmd->callback([f, exit_code] {
    json in = {{"name", f->name}};
    if (f->version > 0) in["version"] = f->version;
    *exit_code = Run(*f, "secret_get", in, [exit_code](const json& r) {
      std::string value = r.value("value", "");
      if (r.contains("value_base64")) {
        Result<std::string> bytes = Base64Decode(r["value_base64"].get<std::string>());
        if (!bytes.ok()) {
          *exit_code = Report(Error::Of(Code::kInternal, "the daemon's value_base64 is not base64"));
          return;
        }
        value = std::move(*bytes);
      }
      std::fwrite(value.data(), 1, value.size(), stdout);
      if (::isatty(STDOUT_FILENO)) std::fputc('\n', stdout);
    });
  });

  cmd = Command(secret, f, "ls", "List the org's secrets (never values)", /*named=*/false);
  cmd->callback([f, exit_code] {
    *exit_code = Run(*f, "secret_list", json::object(), [](const json& r) {
      std::printf("%-32s %-8s %s\n", "NAME", "VERSION", "HOSTS");
      for (const json& s : r.value("secrets", json::array())) {
        std::string hosts;
        for (const json& h : s.value("hosts", json::array()))
          hosts += (hosts.empty() ? "" : ",") + h.get<std::string>();
        std::printf("%-32s %-8lld %s\n", s.value("name", "").c_str(),
                    static_cast<long long>(s.value("version", int64_t{0})), hosts.c_str());
      }
    });
  });

  cmd = Command(secret, f, "inspect", "A secret's versions, hosts and labels (never its value)");
  cmd->callback([f, exit_code] { *exit_code = Run(*f, "secret_inspect", json{{"name", f->name}}, Print); });

  cmd = Command(secret, f, "recipient", "The daemon's age recipient, for `age -r`", /*named=*/false);
  cmd->callback([f, exit_code] {
    *exit_code = Run(*f, "secret_recipient", json::object(),
                     [](const json& r) { std::printf("%s\n", r.value("recipient", "").c_str()); });
  });
}

}  // namespace

std::string ValueFromStdin(std::string bytes) {
  if (bytes.ends_with("\r\n"))
    bytes.resize(bytes.size() - 2);
  else if (bytes.ends_with('\n'))
    bytes.pop_back();
  return bytes;
}

void AddSecretCommands(CLI::App& app, int* exit_code) {
  auto* secret = app.add_subcommand("secret", "An org's secrets: values sandboxes use but never see");
  secret->require_subcommand(1);
  auto f = std::make_shared<SecretFlags>();
  AddWrites(secret, f, exit_code);
  AddReads(secret, f, exit_code);
}

}  // namespace isb::cli
