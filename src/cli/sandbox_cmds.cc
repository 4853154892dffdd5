// The sandbox commands (create, exec, ls, inspect, rm, stop, start, extend, cp): clients of the daemon's REST tools.
#include "cli/sandbox_cmds.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <tuple>

#include "base/fd.h"
#include "base/file.h"
#include "base/units.h"
#include "cli/bind_spec.h"
#include "cli/exec_outcome.h"
#include "cli/sandbox_cmds_internal.h"
#include "cli/terminal_exec.h"
#include "engine/id_mapping.h"

namespace isb::cli {
namespace {

// A local file the user named could not be used: their mistake to fix, so a refusal (1), not isb failing.
Error Local(const std::string& context) {
  Error e = Error::Sys(context);
  e.code = Code::kInvalidArgument;
  return e;
}

}  // namespace

void Print(const json& j) {
  std::string out = Dump(j) + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void WriteOut(FILE* f, std::string_view data) {
  std::fwrite(data.data(), 1, data.size(), f);
  std::fflush(f);
}

namespace {

// Reads all of `fd` up to `max` bytes; more is an error naming `what`.
Result<std::string> ReadAllBounded(int fd, size_t max, const std::string& what) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Local("reading " + what);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max) {
      return Error::Of(Code::kTooLarge, what + " is larger than " + ShortBytes(max) + " (" + std::to_string(max) +
                                            " bytes), the most the daemon takes");
    }
  }
}

std::string BaseName(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// The daemon names schema fields ("mem_limit: must be at least 4 MiB (4194304 bytes)"); say which flag that was.
struct FieldFlag {
  const char* field;
  const char* flag;
  bool seconds = false;  // the daemon's numbers are seconds whatever unit the user typed
};
constexpr FieldFlag kCreateFlags[] = {{"name", "--name"},
                                      {"image", "--image"},
                                      {"cpus", "--cpus"},
                                      {"mem_limit", "--memory"},
                                      {"disk", "--disk"},
                                      {"pids", "--pids"},
                                      {"environment", "--env"},
                                      {"working_dir", "--workdir"},
                                      {"user", "--user"},
                                      {"labels", "--label"},
                                      {"expires", "--expires", true},
                                      {"idle_timeout", "--idle-timeout", true}};
constexpr FieldFlag kExecFlags[] = {{"argv", "the command"},
                                    {"env", "--env"},
                                    {"workdir", "--workdir"},
                                    {"timeout", "--timeout", true},
                                    {"stdin_base64", "-i"}};

template <size_t N>
Error NameTheFlag(Error e, const FieldFlag (&map)[N]) {
  for (const FieldFlag& f : map) {
    std::string_view field = f.field;
    if (e.message.size() > field.size() && e.message.starts_with(field) &&
        std::string_view(":.[").find(e.message[field.size()]) != std::string_view::npos) {
      e.message = std::string(f.flag) + " (" + std::string(field) + (f.seconds ? ", in seconds" : "") + ")" +
                  e.message.substr(field.size());
      break;
    }
  }
  return e;
}

bool StdinIsPipeOrFile() {
  struct stat st {};
  return ::isatty(STDIN_FILENO) == 0 && ::fstat(STDIN_FILENO, &st) == 0 &&
         (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode));
}

// Whether standard input, a pipe or a file, holds data, found without reading any and without waiting: a file
// with bytes past its offset, or a pipe with bytes waiting now.
bool StdinHoldsData() {
  if (!StdinIsPipeOrFile()) return false;
  struct stat st {};
  if (::fstat(STDIN_FILENO, &st) != 0) return false;
  if (S_ISREG(st.st_mode)) {
    const off_t at = ::lseek(STDIN_FILENO, 0, SEEK_CUR);
    return at >= 0 && st.st_size > at;
  }
  struct pollfd p {
    STDIN_FILENO, POLLIN, 0
  };
  int waiting = 0;
  return ::poll(&p, 1, 0) == 1 && ::ioctl(STDIN_FILENO, FIONREAD, &waiting) == 0 && waiting > 0;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

}  // namespace

int Report(const Error& e) {
  std::fprintf(stderr, "isb: %s\n", e.message.c_str());
  return ExitCodeFor(e);
}

int ReportUsage(const Error& e) {
  std::fprintf(stderr, "isb: %s\n", e.message.c_str());
  return kExitUsage;
}

namespace {
// A value that goes into a request header: no control characters (a token pasted from a file with its CR LF).
// The error names where the value came from, never the value.
Status HeaderSafe(std::string_view value, const char* from) {
  for (char ch : value) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f)
      return Usage(std::string(from) + " holds a control character (a line break?); remove it");
  }
  return {};
}
}  // namespace

// Fails only when --url, --socket or the environment say something unusable: a usage error.
Result<ToolClient> Connect(const ConnectFlags& flags) {
  ISB_ASSIGN_OR_RETURN(Endpoint ep, ChooseEndpoint(flags, std::getenv("ISB_URL"), std::getenv("ISB_SOCKET")));
  const std::string token = Env("ISB_TOKEN");
  const std::string org = flags.org.empty() ? Env("ISB_ORG") : flags.org;
  ISB_TRY(HeaderSafe(token, "ISB_TOKEN"));
  ISB_TRY(HeaderSafe(org, flags.org.empty() ? "ISB_ORG" : "--org"));
  return ToolClient(HttpClient(std::move(ep)), token, org);
}

namespace {

// ---- the commands ----

struct Common {
  std::shared_ptr<ConnectFlags> connect;
  bool json = false;
};

int RunCreate(const Common& c, const CreateFlags& f) {
  auto input = CreateInput(f);
  if (!input.ok()) return ReportUsage(input.error());
  auto client = Connect(*c.connect);
  if (!client.ok()) return ReportUsage(client.error());
  auto r = client->Call("sandbox_create", *input);
  if (!r.ok()) return Report(NameTheFlag(r.error(), kCreateFlags));
  if (c.json)
    Print(*r);
  else
    std::printf("%s\n", r->value("id", "").c_str());
  return kExitOk;
}

// `isb exec -d`: the command started; its log id printed (the whole answer with --json).
int RunDetached(const Common& c, const ToolClient& client, const json& input) {
  auto r = client.Call("sandbox_exec", input);
  if (!r.ok()) return Report(NameTheFlag(r.error(), kExecFlags));
  if (!r->contains("log_id") || !(*r)["log_id"].is_number_integer())
    return Report(Error::Of(Code::kInternal, "the isb daemon's detached exec answer has no log_id: " + Dump(*r, -1)));
  if (c.json)
    Print(*r);
  else
    std::printf("%d\n", (*r)["log_id"].get<int>());
  return kExitOk;
}

int RunExec(const Common& c, const ExecFlags& f) {
  if (f.tty && c.json) return ReportUsage(Usage("--json cannot be combined with -t: a terminal's output is live"));
  // Flags and the daemon's address are checked before standard input is read: a usage error is reported at once,
  // not after the user has typed Ctrl-D.
  auto input = ExecInput(f, "");
  if (!input.ok()) return ReportUsage(input.error());
  // Piped input is the command's without -d; a detached command's stdin is /dev/null, so data seen waiting is said
  // to stay behind (not refused: a shell loop reading its own input, `while read h; do isb exec -d ...`, leaves
  // the rest of it on every command's stdin).
  if (f.detach && StdinHoldsData())
    std::fputs(
        "isb: standard input is not passed to a detached command (its stdin is /dev/null); copy data into "
        "the sandbox with isb cp\n",
        stderr);
  auto client = Connect(*c.connect);
  if (!client.ok()) return ReportUsage(client.error());
  if (f.detach) return RunDetached(c, *client, *input);
  // Input piped or redirected from a file goes to the command without -i, as a shell's would; a terminal's, only
  // with -i (the command would otherwise wait for a Ctrl-D nobody knows to type).
  if ((f.interactive || StdinIsPipeOrFile()) && !f.tty) {
    auto in = ReadAllBounded(STDIN_FILENO, kMaxStdinBytes, "standard input");
    if (!in.ok()) return Report(in.error());
    if (f.interactive || !in->empty()) (*input)["stdin_base64"] = Base64Encode(*in);
  }

  bool wrote_stderr = false;
  Result<json> r = f.tty ? RunTerminalExec(*client, *input, f.interactive)
                   : c.json
                       ? client->Call("sandbox_exec", *input)
                       : client->CallStreaming("sandbox_exec", *input,
                                               [&wrote_stderr](const std::string& stream, const std::string& data) {
                                                 wrote_stderr = wrote_stderr || (stream == "stderr" && !data.empty());
                                                 WriteOut(stream == "stderr" ? stderr : stdout, data);
                                               });
  if (!r.ok()) return Report(NameTheFlag(r.error(), kExecFlags));
  if (!r->contains("exit_code") || !(*r)["exit_code"].is_number_integer()) {
    return Report(Error::Of(Code::kInternal, "the isb daemon's exec result has no exit_code: " + Dump(*r, -1)));
  }
  if (c.json) {
    Print(*r);
  } else {
    if (r->value("timed_out", false)) {
      // The timeout sent: --timeout's, a terminal's 15 minutes, or the daemon's default of 60 s.
      const std::string t =
          input->contains("timeout") ? std::to_string((*input)["timeout"].get<int64_t>()) + "s" : "60s";
      std::fprintf(stderr, "isb: the command timed out after %s and was killed (--timeout)\n", t.c_str());
    }
    // The daemon keeps (and streams) at most 256 KiB per stream; without this note a cut looks like the end.
    for (const char* stream : {"stdout", "stderr"}) {
      if (r->value(std::string(stream) + "_truncated", false)) {
        std::fprintf(stderr, "isb: the command's %s was cut at the daemon's limit (256 KiB per stream)\n", stream);
      }
    }
    if (!f.tty) WriteOut(stderr, ExplainExitCode(*r, f.command, wrote_stderr));
  }
  return (*r)["exit_code"].get<int>();
}

int RunList(const Common& c, const std::vector<std::string>& labels) {
  json input = json::object();
  for (const auto& l : labels) {
    auto kv = ParseKeyValue("--label", l);
    if (!kv.ok()) return ReportUsage(kv.error());
    input["labels"][kv->first] = kv->second;
  }
  auto client = Connect(*c.connect);
  if (!client.ok()) return ReportUsage(client.error());
  auto r = client->Call("sandbox_list", input);
  if (!r.ok()) return Report(r.error());
  if (c.json) {
    Print(*r);
  } else {
    std::string table = ListTable(*r, static_cast<int64_t>(std::time(nullptr)));
    WriteOut(stdout, table);
  }
  return kExitOk;
}

// inspect, stop, start: one sandbox in, its info out.
int RunOnOne(const Common& c, const std::string& tool, const std::string& sandbox, bool always_json) {
  auto client = Connect(*c.connect);
  if (!client.ok()) return ReportUsage(client.error());
  auto r = client->Call(tool, {{"sandbox", sandbox}});
  if (!r.ok()) return Report(r.error());
  if (c.json || always_json)
    Print(*r);
  else
    std::printf("%s\n", r->value("id", sandbox).c_str());
  return kExitOk;
}

// Removes each in turn, reporting each failure; the exit code is the worst of them. With --json, one object:
// {"removed": [the names given], "failed": [{"sandbox", "error", "message"}]}.
int RunRemove(const Common& c, const std::vector<std::string>& sandboxes) {
  auto client = Connect(*c.connect);
  if (!client.ok()) return ReportUsage(client.error());
  int rc = kExitOk;
  json removed = json::array(), failed = json::array();
  for (const auto& s : sandboxes) {
    auto r = client->Call("sandbox_remove", {{"sandbox", s}});
    if (!r.ok()) {
      rc = std::max(rc, Report(r.error()));
      failed.push_back({{"sandbox", s}, {"error", CodeName(r.error().code)}, {"message", r.error().message}});
      continue;
    }
    removed.push_back(s);
    if (!c.json) std::printf("%s\n", s.c_str());
  }
  if (c.json) Print({{"removed", removed}, {"failed", failed}});
  return rc;
}

int RunExtend(const Common& c, const std::string& sandbox, const std::string& duration) {
  auto input = ExtendInput(sandbox, duration);
  if (!input.ok()) return ReportUsage(input.error());
  auto client = Connect(*c.connect);
  if (!client.ok()) return ReportUsage(client.error());
  auto r = client->Call("sandbox_extend", *input);
  if (!r.ok()) {
    // The daemon speaks of its field "by" in seconds; the user gave a duration in units of their own.
    Error e = r.error();
    if (e.message.starts_with("by: ")) e.message = "extend " + duration + ": " + e.message.substr(4);
    return Report(e);
  }
  if (c.json) {
    Print(*r);
  } else {
    int64_t left = r->value("expires_at", int64_t{0}) - static_cast<int64_t>(std::time(nullptr));
    std::printf("%s expires in %s\n", r->value("id", sandbox).c_str(), ShortDuration(left).c_str());
  }
  return kExitOk;
}

int CopyIn(const Common& c, const ToolClient& client, const CpPlan& plan) {
  std::string content;
  uint32_t mode = 0644;
  if (plan.src.path == "-") {
    auto in = ReadAllBounded(STDIN_FILENO, kMaxFileWriteBytes, "standard input");
    if (!in.ok()) return Report(in.error());
    content = std::move(*in);
  } else {
    Fd fd(::open(plan.src.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return Report(Local("cannot open " + plan.src.path));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return Report(Local("stat " + plan.src.path));
    if (S_ISDIR(st.st_mode)) return ReportUsage(Usage(plan.src.path + " is a directory; isb cp copies single files"));
    if (!S_ISREG(st.st_mode)) return ReportUsage(Usage(plan.src.path + " is not a regular file"));
    mode = st.st_mode & 0777;  // set-id and sticky bits stay behind, as cp(1) leaves them
    auto data = ReadAllBounded(fd.get(), kMaxFileWriteBytes, plan.src.path);
    if (!data.ok()) return Report(data.error());
    content = std::move(*data);
  }
  std::string path = plan.dst.path;
  if (path.ends_with("/")) {
    if (plan.src.path == "-")
      return ReportUsage(Usage("copying from stdin needs a file name, not a directory: " + path));
    path += BaseName(plan.src.path);
  }
  char mode_text[8];
  std::snprintf(mode_text, sizeof mode_text, "%04o", mode);
  auto r = client.Call(
      "sandbox_file_write",
      {{"sandbox", plan.dst.sandbox}, {"path", path}, {"content_base64", Base64Encode(content)}, {"mode", mode_text}});
  if (!r.ok()) return Report(r.error());
  if (c.json) Print(*r);
  return kExitOk;
}

int CopyOut(const Common& c, const ToolClient& client, const CpPlan& plan) {
  auto r = client.Call("sandbox_file_read",
                       {{"sandbox", plan.src.sandbox}, {"path", plan.src.path}, {"encoding", "base64"}});
  if (!r.ok()) return Report(r.error());
  if (!r->contains("content_base64") || !(*r)["content_base64"].is_string()) {
    return Report(Error::Of(Code::kInternal, "the isb daemon's file_read result has no content_base64"));
  }
  if (plan.dst.path == "-" && c.json) {
    Print(*r);
    return kExitOk;
  }
  auto content = Base64Decode((*r)["content_base64"].get<std::string>(), Base64Padding::kRequired);
  if (!content.ok())
    return Report(Error::Of(Code::kInternal, "the isb daemon sent bad base64: " + content.error().message));
  if (plan.dst.path == "-") {
    WriteOut(stdout, *content);
    return kExitOk;
  }
  std::string path = plan.dst.path;
  struct stat st {};
  if (path.ends_with("/") || (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))) {
    if (!path.ends_with("/")) path += "/";
    path += BaseName(plan.src.path);
  }
  // Permission bits only: a set-id bit chosen inside the sandbox would make what it wrote a set-id program here.
  int mode = static_cast<int>(std::strtol(r->value("mode", "0644").c_str(), nullptr, 8)) & 0777;
  if (Status s = WriteFile(path, *content, mode); !s.ok()) {
    Error e = s.error();
    e.code = Code::kInvalidArgument;
    return Report(e);
  }
  if (c.json) {
    json shown = *r;
    shown.erase("content_base64");
    Print(shown);
  }
  return kExitOk;
}

int RunCopy(const Common& c, const std::string& src, const std::string& dst) {
  auto plan = ParseCpArgs(src, dst);
  if (!plan.ok()) return ReportUsage(plan.error());
  auto client = Connect(*c.connect);
  if (!client.ok()) return ReportUsage(client.error());
  return plan->dst.remote() ? CopyIn(c, *client, *plan) : CopyOut(c, *client, *plan);
}

}  // namespace

std::shared_ptr<ConnectFlags> SharedConnectFlags() {
  static const std::shared_ptr<ConnectFlags> flags = std::make_shared<ConnectFlags>();
  return flags;
}

void AddConnectOptions(CLI::App* cmd, const std::shared_ptr<ConnectFlags>& connect) {
  cmd->add_option("--url", connect->url, "The daemon's HTTP URL (env ISB_URL; token from ISB_TOKEN)");
  cmd->add_option("--socket", connect->socket,
                  std::string("The daemon's unix socket (env ISB_SOCKET; default ") + kDefaultSocket + ")");
  cmd->add_option("--org", connect->org, "The org to act in (env ISB_ORG; default: default)");
}

namespace {

// ---- registration ----

CLI::App* AddCommand(CLI::App& app, const std::shared_ptr<Common>& common, const char* name, const char* help) {
  auto* cmd = app.add_subcommand(name, help);
  AddConnectOptions(cmd, common->connect);
  cmd->add_flag("--json", common->json, "Print the tool's result as JSON");
  return cmd;
}

}  // namespace

void AddSandboxCommands(CLI::App& app, int* exit_code) {
  auto common = std::make_shared<Common>();
  common->connect = SharedConnectFlags();
  // A new command line starts from no flags (a process that parses more than one, as the tests do, keeps none).
  *common->connect = ConnectFlags{};
  AddConnectOptions(&app, common->connect);

  auto create = std::make_shared<CreateFlags>();
  auto* cmd = AddCommand(app, common, "create", "Create a long-lived sandbox and print its id");
  cmd->add_option("--name", create->name, "A unique name to refer to it by");
  cmd->add_option("--image", create->image,
                  "An image of the org (isb image ls) or a host directory, read-only under the sandbox's layer "
                  "(default: a view of the host)");
  cmd->add_option("--cpus", create->cpus, "CPU quota in cores, e.g. 0.5 (default 2)");
  cmd->add_option("--memory", create->memory, "Memory limit, swap included, e.g. 512M (default 512M)");
  cmd->add_option("--disk", create->disk, "Size of the filesystem it writes to, e.g. 10G (default 2G)");
  cmd->add_option("--pids", create->pids, "Most processes at once (default 64)");
  // Repeatable options take one value per occurrence, so that "--" and positionals after them are left alone.
  cmd->add_option("--env", create->env, "K=V in every process's environment (repeatable)")->allow_extra_args(false);
  cmd->add_option("--workdir", create->workdir, "Working directory inside (default /)");
  cmd->add_option("--user", create->user, "UID[:GID] inside (default 0:0)");
  cmd->add_option("--label", create->labels, "K=V label (repeatable)")->allow_extra_args(false);
  cmd->add_option("--mount", create->mounts,
                  "A path on the daemon's host into the sandbox: SRC[:DST][:ro|:rw] (default ro; repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("-p,--publish", create->publish,
                  "Publish a port while it runs: [ADDR:]HOSTPORT:PORT (ADDR default 127.0.0.2; repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--egress", create->egress,
                  "Where it may connect: none (default), open, or HOST[:PORT] entries (repeatable or comma-separated)")
      ->allow_extra_args(false);
  cmd->add_option("--secret", create->secrets,
                  "An org secret as a placeholder: NAME or NAME=ENV (the variable; default from the name); isb's proxy "
                  "swaps in the value on the way to the secret's hosts, which join the egress list (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--privileged", create->privileged,
                "No user namespace: the sandbox's root is the host's root (remote: the daemon's --allow-privileged)");
  cmd->add_option("--idmap", create->idmap,
                  "Map host ids in: uid|gid|both:HOST:SANDBOX[:COUNT] (repeatable; remote: the daemon's --allow-raw)")
      ->allow_extra_args(false);
  cmd->add_option("--expires", create->expires, "Lifetime, e.g. 24h (default 24h, at most 30d)");
  cmd->add_option("--idle-timeout", create->idle_timeout, "Removed after this long idle, e.g. 2h (default 2h)");
  cmd->callback([common, create, exit_code] { *exit_code = RunCreate(*common, *create); });

  auto exec = std::make_shared<ExecFlags>();
  cmd = AddCommand(app, common, "exec", "Run a command in a sandbox; output is live, the exit code is the command's");
  cmd->add_flag("-i,--interactive", exec->interactive,
                "Send this process's stdin to the command (without -t: at most 1 MiB, read before it starts)");
  cmd->add_flag("-t,--tty", exec->tty,
                "Run the command on a terminal of this terminal's size; with -i, keys go to it in raw mode "
                "(default --timeout 15m)");
  cmd->add_flag("-d,--detach", exec->detach,
                "Start the command and return; it runs until it exits, the sandbox stops or its --timeout (if "
                "given) passes, its output kept for isb logs (prints its log id)");
  cmd->add_option("--env", exec->env, "K=V for this command (repeatable)")->allow_extra_args(false);
  cmd->add_option("--workdir", exec->workdir, "Working directory (default: the sandbox's)");
  cmd->add_option("--timeout", exec->timeout,
                  "Kill the command after this long, e.g. 60s (default 60s, with -d none; at most 15m)");
  cmd->add_option("sandbox", exec->sandbox, "The sandbox's id or name")->required();
  cmd->add_option("command", exec->command, "The command and its arguments, after --")->required();
  cmd->callback([common, exec, exit_code] {
    exec->json = common->json;
    *exit_code = RunExec(*common, *exec);
  });

  auto labels = std::make_shared<std::vector<std::string>>();
  cmd = AddCommand(app, common, "ls", "List sandboxes");
  cmd->add_option("--label", *labels, "Only sandboxes with this K=V label (repeatable)")->allow_extra_args(false);
  cmd->callback([common, labels, exit_code] { *exit_code = RunList(*common, *labels); });

  auto one = std::make_shared<std::string>();
  cmd = AddCommand(app, common, "inspect", "Show a sandbox's state, spec and usage as JSON");
  cmd->add_option("sandbox", *one, "The sandbox's id or name")->required();
  cmd->callback([common, one, exit_code] { *exit_code = RunOnOne(*common, "sandbox_get", *one, true); });

  auto many = std::make_shared<std::vector<std::string>>();
  cmd = AddCommand(app, common, "rm", "Remove sandboxes with their files (cannot be undone)");
  cmd->add_option("sandboxes", *many, "Ids or names")->required();
  cmd->callback([common, many, exit_code] { *exit_code = RunRemove(*common, *many); });

  cmd = AddCommand(app, common, "stop", "Stop every process in a sandbox; its files are kept");
  cmd->add_option("sandbox", *one, "The sandbox's id or name")->required();
  cmd->callback([common, one, exit_code] { *exit_code = RunOnOne(*common, "sandbox_stop", *one, false); });

  cmd = AddCommand(app, common, "start", "Start a stopped sandbox");
  cmd->add_option("sandbox", *one, "The sandbox's id or name")->required();
  cmd->callback([common, one, exit_code] { *exit_code = RunOnOne(*common, "sandbox_start", *one, false); });

  auto by = std::make_shared<std::string>();
  cmd = AddCommand(app, common, "extend", "Move a sandbox's expiry later, e.g. `isb extend SANDBOX 24h`");
  cmd->add_option("sandbox", *one, "The sandbox's id or name")->required();
  cmd->add_option("duration", *by, "How much later, e.g. 2h (at least 1m; the lifetime stays at most 30d)")->required();
  cmd->callback([common, one, by, exit_code] { *exit_code = RunExtend(*common, *one, *by); });

  auto cp = std::make_shared<std::pair<std::string, std::string>>();
  cmd = AddCommand(app, common, "cp", "Copy a file into or out of a sandbox: isb cp SRC DST, one side SANDBOX:/path");
  cmd->add_option("src", cp->first, "Local path, '-' for stdin, or SANDBOX:/path")->required();
  cmd->add_option("dst", cp->second, "Local path, '-' for stdout, or SANDBOX:/path")->required();
  cmd->callback([common, cp, exit_code] { *exit_code = RunCopy(*common, cp->first, cp->second); });
}

}  // namespace isb::cli
