// The sandbox tools: each declared once (name, schemas, annotations) with its named handler (sandbox_handlers.h).
#include "api/sandbox_tools.h"
#include "api/usage_tool.h"

#include <memory>
#include <string>

#include "api/sandbox_handlers.h"
#include "api/schema.h"

namespace isb::api {
namespace {

using nlohmann::json;

json SandboxRef() { return Str("The sandbox: its id (\"sb-\" and 16 hex digits) or its name.", 128, 1); }

json EncodingField(const char* what, const char* dflt) {
  return {{"type", "string"},
          {"enum", {"utf-8", "base64"}},
          {"default", dflt},
          {"description", std::string("How ") + what +
                              " is carried in JSON: \"base64\" (field *_base64, any bytes) or \"utf-8\" (plain "
                              "text; invalid UTF-8 is replaced by U+FFFD)."}};
}

json EgressSchema() {
  return {{"type", json::array({"string", "array", "object"})},
          {"default", "none"},
          {"description",
           "Where the sandbox may connect. \"none\" (the default): loopback only. A list of \"host[:port]\" "
           "(port 443 unless given; \"*.example.com\" means names below example.com): only those, through isb's "
           "proxy. {\"allow\": [...]} the same; {\"block\": [...]}: every public host but those. \"open\": any "
           "public address, never the host, the LAN or other sandboxes."}};
}

json MountsSchema() {
  return {{"type", "array"},
          {"maxItems", 32},
          {"description",
           "Host paths bound into the sandbox. A remote caller's sources must lie under a --bind-root of the daemon, "
           "judged by their real path."},
          {"items", Object({{"source", Str("Absolute host path (a directory or a file).", 4096, 1)},
                            {"target", Str("Absolute path inside the sandbox; not /, /proc, /sys or /dev.", 4096, 1)},
                            {"read_only", Bool("Bound read-only (the default) or writable.")}},
                           {"source", "target"})}};
}

json SecretFilesSchema() {
  // A name alone, or the object: one schema for both (the string checks apply to a string, the rest to an object).
  json file = Object({{"name", Str("The org secret's name.", 128, 1)},
                      {"target", Str("A file directly in /run/secrets; default /run/secrets/NAME.", 4096, 1)},
                      {"mode", Str("Octal file mode; default \"0400\".", 4, 1)}},
                     {"name"});
  file["type"] = json::array({"string", "object"});
  file["maxLength"] = 128;
  file["minLength"] = 1;
  return {{"type", "array"},
          {"maxItems", spec::kMaxSecretFiles},
          {"description",
           "Org secrets given as files on a tmpfs at /run/secrets owned by the sandbox's root (never in its layer "
           "or image), rewritten within 2 s of a new version: \"NAME\" or {name, target, mode}. A sandbox with "
           "files is created cold. For a secret the sandbox uses but never sees, list it in egress.secrets."},
          {"items", std::move(file)}};
}

json PortsSchema() {
  return {{"type", "array"},
          {"maxItems", 16},
          {"description",
           "TCP ports inside the sandbox published on the host while it runs: host_address:host_port reaches "
           "127.0.0.1:sandbox_port inside. host_address defaults to 127.0.0.2; never 127.0.0.1, ::1, 0.0.0.0, :: "
           "or the daemon's own address (a browser signed in to isb there would send the sandbox its session "
           "cookie); a remote caller needs the daemon's --publish-address for any address but loopback."},
          {"items", Object({{"sandbox_port", Int("The port inside the sandbox (on its loopback).", 1, 65535)},
                            {"host_port", Int("The port on the host.", 1, 65535)},
                            {"host_address", Str("An IP address of the host; default 127.0.0.2.", 64, 1)}},
                           {"sandbox_port", "host_port"})}};
}

json IdMapSchema() {
  json entry =
      Object({{"kind",
               {{"type", "string"}, {"enum", {"uid", "gid", "both"}}, {"description", "Which ids: uid, gid or both."}}},
              {"host", Int("The first host id mapped in.", 0, 4294967294)},
              {"sandbox", Int("The id it appears as inside (0-65535).", 0, 65535)},
              {"count", Int("How many consecutive ids; default 1.", 1, 65536)}},
             {"kind", "host", "sandbox"});
  return {{"type", json::array({"string", "array"})},
          {"default", "auto"},
          {"maxItems", engine::kMaxIdMapLines},
          {"items", std::move(entry)},
          {"description",
           "The sandbox's user namespace: \"auto\" (the default) or \"none\", its own 65536 ids and no host id; "
           "or a list of host ids mapped in, e.g. [{\"kind\": \"both\", \"host\": 1000, \"sandbox\": 1000}], "
           "the rest of 0-65535 staying its own. A remote caller needs the daemon's --allow-raw for a list. Not "
           "with privileged."}};
}

json SpecSchema() {
  json schema = Object(
      {{"name",
        Str("Optional name, unique in the org (other orgs may use it too), and the sandbox's host name: 1 to 63 "
            "letters, digits and inner hyphens; not starting with \"sb-\".",
            spec::kMaxNameLength)},
       {"image", Str("An image of the org (\"python:3.12\", \"127.0.0.1:5000/team/app@sha256:...\", an image id; see "
                     "image_list) or a directory on the host (an absolute path) used as the root filesystem; empty "
                     "or absent: the default view of the host.",
                     4096)},
       {"cpus",
        {{"type", "number"},
         {"minimum", spec::kMinCpus},
         {"maximum", spec::kMaxCpus},
         {"default", spec::kDefaultCpus},
         {"description", "CPU quota in cores, e.g. 0.5 or 2."}}},
       {"mem_limit",
        {{"type", {"integer", "string"}},
         {"default", spec::kDefaultMemLimit},
         {"description",
          "Memory limit, swap included: bytes (integer, at least 4194304) or a size "
          "such as \"512M\" or \"2G\"."}}},
       {"disk",
        {{"type", {"integer", "string"}},
         {"default", spec::kDefaultDisk},
         {"description",
          "Size of the filesystem the sandbox writes to (its root outside /tmp and the "
          "mounts); writing beyond it fails with ENOSPC: bytes (integer, 16 MiB to 1 TiB) or "
          "a size such as \"64M\" or \"10G\"; default 2G. Counts toward the org's disk "
          "quota."}}},
       {"pids", Int("Maximum number of processes (at most the host's bound).", spec::kMinPids, 65536)},
       {"environment", StringMap("Environment variables of every process in the sandbox.", 256)},
       {"working_dir", Str("Absolute working directory inside the sandbox; default \"/\".", 4096)},
       {"user", Str("UID[:GID] inside the sandbox, e.g. \"1000:1000\"; default \"0:0\".", 32)},
       {"labels", StringMap("Free-form labels; sandbox_list can filter on them.", 64)},
       {"mounts", MountsSchema()},
       {"ports", PortsSchema()},
       {"secrets", SecretFilesSchema()},
       {"egress", EgressSchema()},
       {"privileged", Bool("No user namespace of its own: the sandbox's root is the host's root, its ids the host's "
                           "(still its own mount, pid, network, uts and ipc namespaces, cgroup, capabilities and "
                           "seccomp). Default false; a remote caller needs the daemon's --allow-privileged.")},
       {"idmap", IdMapSchema()},
       {"expires",
        Int("Lifetime in seconds from creation; default 86400 (24h), at most 2592000 (30d).", 1, kMaxExpiresS)},
       {"idle_timeout", Int("Seconds without exec and under 2% of one core after which the sandbox is removed; "
                            "default 7200 (2h).",
                            1, kMaxExpiresS)}},
      {});
  schema["properties"]["pids"]["default"] = spec::kDefaultPids;
  schema["properties"]["expires"]["default"] = kDefaultExpiresS;
  schema["properties"]["idle_timeout"]["default"] = kDefaultIdleTimeoutS;
  return schema;
}

// sandbox_create's input: a spec and the vars its ${NAME}s are filled from.
json CreateSchema() {
  json create = SpecSchema();
  create["properties"]["vars"] = StringMap(
      "Values for ${NAME} in name, image, working_dir, user and the values of environment and labels; \"$$\" is "
      "a literal \"$\". Only these fill a ${NAME} (never the daemon's environment); a remote caller's ${NAME} "
      "missing from vars is refused.",
      256);
  return create;
}

json InfoSchema() {
  json spec = SpecSchema();
  spec.erase("additionalProperties");
  spec["properties"]["mem_limit"] = {{"type", "integer"}, {"description", "Memory limit in bytes."}};
  spec["properties"]["disk"] = {{"type", "integer"},
                                {"description", "Size of the writable layer's filesystem, bytes."}};
  // What a caller may send is bounded; what the daemon returns also holds what it adds (the isb.org and isb.owner
  // labels, the proxy and trust-store variables of a sandbox with egress).
  for (const char* added : {"labels", "environment"}) spec["properties"][added].erase("maxProperties");
  json usage = {{"type", "object"},
                {"properties",
                 {{"cpu_usec", {{"type", "integer"}, {"description", "CPU time used, microseconds."}}},
                  {"memory_bytes", {{"type", "integer"}}},
                  {"pids", {{"type", "integer"}}}}}};
  return {{"type", "object"},
          {"required", {"id", "state", "spec", "created_at", "expires_at"}},
          {"properties",
           {{"id", {{"type", "string"}}},
            {"name", {{"type", "string"}}},
            {"state", {{"type", "string"}, {"enum", {"running", "stopped"}}}},
            {"spec", std::move(spec)},
            {"created_at", {{"type", "integer"}, {"description", "Unix seconds."}}},
            {"expires_at", {{"type", "integer"}, {"description", "Unix seconds."}}},
            {"last_active_at", {{"type", "integer"}, {"description", "Unix seconds."}}},
            {"usage", std::move(usage)},
            {"timing",
             {{"type", "object"},
              {"description", "In a create's result only: how it was served."},
              {"properties",
               {{"path",
                 {{"type", "string"},
                  {"enum", {"pool", "cold"}},
                  {"description",
                   "pool: a sandbox launched ahead, fitted to the spec; cold: launched for "
                   "the call (another image, mounts, a disk size, larger limits than the "
                   "defaults, open egress, or an empty pool)."}}},
                {"create_ms", {{"type", "number"}, {"description", "The create's time in the daemon."}}}}}}}}}};
}

using Handlers = std::shared_ptr<SandboxHandlers>;

// A tool's handler: `method` of the handlers the registry keeps alive with it.
ToolHandler Handle(const Handlers& h, Result<json> (SandboxHandlers::*method)(const json&, const CallContext&)) {
  return [h, method](const json& in, const CallContext& ctx) { return ((*h).*method)(in, ctx); };
}

Status AddLifecycleTools(Registry& reg, const Handlers& h) {
  json info = InfoSchema();
  json ref_only = Object({{"sandbox", SandboxRef()}}, {"sandbox"});

  ISB_TRY(reg.Add(Tool{
      "sandbox_get", "Get a sandbox", "State, spec, limits and usage (cpu, memory, pids) of one sandbox.", ref_only,
      info, ToolAnnotations{.read_only = true, .idempotent = true}, false, Handle(h, &SandboxHandlers::Get)}));

  ISB_TRY(reg.Add(Tool{"sandbox_list",
                       "List sandboxes",
                       "All sandboxes, optionally only those carrying every given label.",
                       Object({{"labels", StringMap("Only sandboxes whose labels include all of these.", 64)}}, {}),
                       {{"type", "object"},
                        {"required", {"sandboxes"}},
                        {"properties", {{"sandboxes", {{"type", "array"}, {"items", info}}}}}},
                       ToolAnnotations{.read_only = true, .idempotent = true},
                       false,
                       Handle(h, &SandboxHandlers::List)}));

  ISB_TRY(reg.Add(Tool{
      "sandbox_stop", "Stop a sandbox",
      "Stops every process in the sandbox; its files are kept (except /tmp, a tmpfs) and sandbox_start runs it again.",
      ref_only, info, ToolAnnotations{.destructive = true, .idempotent = true}, false,
      Handle(h, &SandboxHandlers::Stop)}));

  ISB_TRY(
      reg.Add(Tool{"sandbox_start", "Start a stopped sandbox", "Starts a sandbox that sandbox_stop stopped.", ref_only,
                   info, ToolAnnotations{.idempotent = true}, false, Handle(h, &SandboxHandlers::Start)}));

  ISB_TRY(reg.Add(
      Tool{"sandbox_egress_set", "Change a sandbox's egress",
           "Replaces the hosts a running sandbox may reach; new connections follow the new list at once. Lists change "
           "to lists; a sandbox created with none or open keeps that.",
           Object({{"sandbox", SandboxRef()}, {"egress", EgressSchema()}}, {"sandbox", "egress"}), info,
           ToolAnnotations{.idempotent = true}, false, Handle(h, &SandboxHandlers::SetEgress)}));

  ISB_TRY(reg.Add(Tool{
      "sandbox_extend", "Extend a sandbox's lifetime",
      "Moves the sandbox's expiry later by `by` seconds; the lifetime stays at most 30 days.",
      Object({{"sandbox", SandboxRef()}, {"by", Int("Seconds to add to the expiry (1 to 2592000).", 1, kMaxExpiresS)}},
             {"sandbox", "by"}),
      info, ToolAnnotations{}, false, Handle(h, &SandboxHandlers::Extend)}));

  return reg.Add(Tool{"sandbox_remove",
                      "Remove a sandbox",
                      "Kills every process in the sandbox and deletes it with its files. Cannot be undone.",
                      ref_only,
                      {{"type", "object"},
                       {"required", {"sandbox", "removed"}},
                       {"properties", {{"sandbox", {{"type", "string"}}}, {"removed", {{"type", "boolean"}}}}}},
                      ToolAnnotations{.destructive = true, .idempotent = true},
                      false,
                      Handle(h, &SandboxHandlers::Remove)});
}

Status AddCreateAndExec(Registry& reg, const Handlers& h) {
  ISB_TRY(reg.Add(
      Tool{"sandbox_create", "Create a sandbox",
           "Creates a long-lived sandbox and returns once it is ready. Every field is optional. Durations are whole "
           "seconds; expires defaults to 86400 (24h, at most 30 days) and idle_timeout to 7200 (2h).",
           CreateSchema(), InfoSchema(), ToolAnnotations{}, false, Handle(h, &SandboxHandlers::Create)}));

  json exec_in = Object(
      {{"sandbox", SandboxRef()},
       {"argv",
        {{"type", "array"},
         {"minItems", 1},
         {"maxItems", 4096},
         {"items", {{"type", "string"}, {"maxLength", 131072}}},
         {"description",
          "The program and its arguments; never run through a shell. Use "
          "[\"sh\", \"-c\", \"...\"] for shell syntax."}}},
       {"stdin", Str("Standard input as UTF-8 text (at most 1 MiB).", kMaxStdinBytes)},
       {"stdin_base64",
        Str("Standard input as base64 (at most 1 MiB decoded); instead of stdin.", kMaxStdinBytes / 3 * 4 + 4)},
       {"env", StringMap("Extra environment variables for this command.", 256)},
       {"workdir", Str("Absolute working directory; default: the sandbox's working_dir.", 4096)},
       {"timeout", Int("Seconds before the command is killed, at most 900 (15 minutes); default 60, and with "
                       "detach none (a detached command runs until it exits or the sandbox stops unless given one).",
                       1, kMaxExecTimeoutS)},
       {"encoding", EncodingField("output", "utf-8")},
       {"tty",
        {{"type", "boolean"},
         {"default", false},
         {"description",
          "Run the command on a terminal (a pty inside the sandbox): stderr merges into "
          "stdout. Streaming calls only; the first event names the session that "
          "sandbox_exec_input and sandbox_exec_resize act on."}}},
       {"detach",
        {{"type", "boolean"},
         {"default", false},
         {"description",
          "Start the command and return at once with its log_id; it runs until it exits, "
          "the sandbox stops or its timeout (if given) passes, its stdin /dev/null, its "
          "output and exit code going to the sandbox's log (sandbox_logs). At most 16 run "
          "at once per sandbox. Not with stdin or tty."}}},
       {"rows", Int("With tty: the terminal's height; default 24.", 1, kMaxTerminalSide)},
       {"cols", Int("With tty: the terminal's width; default 80.", 1, kMaxTerminalSide)}},
      {"sandbox", "argv"});
  // timeout states no default in the schema: it is 60 s, or none with detach, and a client that fills in defaults
  // must not bound its detached commands to a minute.
  exec_in["properties"]["rows"]["default"] = kDefaultRows;
  exec_in["properties"]["cols"]["default"] = kDefaultCols;
  json exec_out = {
      {"type", "object"},
      // A command waited for, or one detached.
      {"anyOf", {{{"required", {"exit_code", "timed_out", "duration_ms"}}}, {{"required", {"detached", "log_id"}}}}},
      {"properties",
       {{"detached", {{"type", "boolean"}, {"description", "With detach: true; the command runs on."}}},
        {"log_id",
         {{"type", "integer"},
          {"description", "With detach: the command's tag on its output and exit in sandbox_logs."}}},
        {"exit_code",
         {{"type", "integer"}, {"description", "The command's exit status; 128+N when killed by signal N."}}},
        {"signal", {{"type", "integer"}, {"description", "The signal that killed it, or 0."}}},
        {"timed_out", {{"type", "boolean"}}},
        {"oom_killed",
         {{"type", "boolean"},
          {"description",
           "Killed by the OOM killer: the sandbox reached its "
           "memory limit (exit_code 137)."}}},
        {"stdout", {{"type", "string"}}},
        {"stderr", {{"type", "string"}}},
        {"stdout_base64", {{"type", "string"}}},
        {"stderr_base64", {{"type", "string"}}},
        {"stdout_truncated", {{"type", "boolean"}, {"description", "stdout exceeded 256 KiB and was cut."}}},
        {"stderr_truncated", {{"type", "boolean"}, {"description", "stderr exceeded 256 KiB and was cut."}}},
        {"duration_ms", {{"type", "number"}}},
        {"session", {{"type", "string"}, {"description", "With tty: the terminal session's id."}}}}}};
  Tool exec{"sandbox_exec",
            "Run a command in a sandbox",
            "Runs argv in the sandbox and returns its exit code, stdout and stderr (each capped at 256 KiB, with a "
            "truncated flag) and duration. timeout is in seconds (default 60, none with detach; at most 900). "
            "Streaming callers (REST "
            "?stream=1, MCP with a progressToken) also receive output as it is produced. With tty (streaming only) the "
            "command runs on a terminal: a \"session\" event (REST) or a progress notification with _meta "
            "isb/stream \"session\" (MCP) names the session first; send keystrokes with sandbox_exec_input and window "
            "sizes with sandbox_exec_resize while it runs. The session ends with the command or when the caller goes "
            "away. With detach the call returns at once with {\"detached\": true, \"log_id\": N} and the output is "
            "read with sandbox_logs.",
            std::move(exec_in),
            std::move(exec_out),
            ToolAnnotations{.destructive = true},
            true,
            Handle(h, &SandboxHandlers::Exec)};
  exec.precheck = [h](const json& in, const CallContext& ctx) { return h->ExecFindsSandbox(in, ctx); };
  return reg.Add(std::move(exec));
}

Status AddLogsTool(Registry& reg, const Handlers& h) {
  json chunk = {
      {"type", "object"},
      {"required", {"cursor", "log_id", "stream"}},
      {"properties",
       {{"cursor", {{"type", "integer"}, {"description", "The position of its first byte in the log."}}},
        {"log_id", {{"type", "integer"}, {"description", "The detached command's, as sandbox_exec returned it."}}},
        {"stream", {{"type", "string"}, {"enum", {"stdout", "stderr", "exit"}}}},
        {"data", {{"type", "string"}}},
        {"data_base64", {{"type", "string"}}},
        {"exit_code",
         {{"type", "integer"},
          {"description",
           "An exit's status (128+N when killed by signal N); -1 with error when the "
           "command ended without one (it could not start, or the sandbox stopped)."}}},
        {"signal", {{"type", "integer"}}},
        {"error", {{"type", "string"}}},
        {"timed_out",
         {{"type", "boolean"},
          {"description",
           "An exit: present and true when the command was killed at its timeout "
           "(exit_code 124, signal 9)."}}}}}};
  return reg.Add(Tool{
      "sandbox_logs",
      "Read a sandbox's log",
      "The output (stdout and stderr) and exits of the commands started in the sandbox with sandbox_exec detach, "
      "in order, after the cursor `after` (default 0, the start). The daemon keeps the last 1 MiB per sandbox, in "
      "memory (a daemon restart ends them and empties it); `dropped` says how many positions between `after` and "
      "the oldest kept were lost (each output byte is one position, each exit one more). Read on from `next`; "
      "`running` counts the commands still running. With encoding \"utf-8\" a command's consecutive output on one "
      "stream comes as one chunk and no character is split: one still incomplete at the end of the read is left "
      "to the next read.",
      Object({{"sandbox", SandboxRef()},
              {"after",
               Int("The cursor to read after: 0 (the default) or a `next` of an earlier read.", 0, int64_t{1} << 53)},
              {"limit_bytes",
               Int("At most this much output in the answer; default and most 1048576.", 1, kMaxLogReadBytes)},
              {"encoding", EncodingField("output", "utf-8")}},
             {"sandbox"}),
      {{"type", "object"},
       {"required", {"chunks", "next", "start", "end", "dropped", "running"}},
       {"properties",
        {{"chunks", {{"type", "array"}, {"items", std::move(chunk)}}},
         {"next", {{"type", "integer"}, {"description", "The cursor to read after next."}}},
         {"start", {{"type", "integer"}, {"description", "The oldest position the log still holds."}}},
         {"end", {{"type", "integer"}, {"description", "The position the log's next byte will take."}}},
         {"dropped", {{"type", "integer"}, {"description", "Positions after `after` lost to the log's bound."}}},
         {"running", {{"type", "integer"}, {"description", "Detached commands still running."}}}}}},
      ToolAnnotations{.read_only = true, .idempotent = true},
      false,
      Handle(h, &SandboxHandlers::Logs)});
}

Status AddTerminalTools(Registry& reg, const Handlers& h) {
  json session = Str("The terminal session's id, as the streaming sandbox_exec with tty announced it.", 64, 1);
  ISB_TRY(reg.Add(Tool{
      "sandbox_exec_input",
      "Type into a terminal session",
      "Sends input to a running sandbox_exec with tty, as keystrokes: data as UTF-8 text or data_base64 (at most "
      "64 KiB per call). eof then types the terminal's end-of-file character (Ctrl-D). Only the caller that "
      "started the session may use it.",
      Object(
          {{"sandbox", SandboxRef()},
           {"session", session},
           {"data", Str("Input as UTF-8 text (at most 64 KiB).", kMaxTerminalInputBytes)},
           {"data_base64",
            Str("Input as base64 (at most 64 KiB decoded); instead of data.", kMaxTerminalInputBytes / 3 * 4 + 4)},
           {"eof",
            {{"type", "boolean"}, {"default", false}, {"description", "After the data, type end-of-file (Ctrl-D)."}}}},
          {"sandbox", "session"}),
      {{"type", "object"},
       {"required", {"session", "written"}},
       {"properties",
        {{"session", {{"type", "string"}}}, {"written", {{"type", "integer"}}}, {"eof", {{"type", "boolean"}}}}}},
      ToolAnnotations{.destructive = true},
      false,
      Handle(h, &SandboxHandlers::ExecInput)}));

  return reg.Add(
      Tool{"sandbox_exec_resize",
           "Resize a terminal session",
           "Sets the window size of a running sandbox_exec with tty; the command receives SIGWINCH. Only the caller "
           "that started the session may use it.",
           Object({{"sandbox", SandboxRef()},
                   {"session", session},
                   {"rows", Int("Height in rows.", 1, kMaxTerminalSide)},
                   {"cols", Int("Width in columns.", 1, kMaxTerminalSide)}},
                  {"sandbox", "session", "rows", "cols"}),
           {{"type", "object"},
            {"required", {"session", "rows", "cols"}},
            {"properties",
             {{"session", {{"type", "string"}}}, {"rows", {{"type", "integer"}}}, {"cols", {{"type", "integer"}}}}}},
           ToolAnnotations{.idempotent = true},
           false,
           Handle(h, &SandboxHandlers::ExecResize)});
}

Status AddFileTools(Registry& reg, const Handlers& h) {
  json path = Str("Absolute path inside the sandbox; /proc, /sys and /dev are refused.", 4096, 1);
  ISB_TRY(reg.Add(
      Tool{"sandbox_file_read",
           "Read a file from a sandbox",
           "Returns a file's content (at most 4 MiB) as content_base64, or as content when encoding is \"utf-8\" "
           "(refused if the file is not valid UTF-8). Symlinks resolve inside the sandbox.",
           Object({{"sandbox", SandboxRef()}, {"path", path}, {"encoding", EncodingField("the content", "base64")}},
                  {"sandbox", "path"}),
           {{"type", "object"},
            {"required", {"path", "size", "mode"}},
            {"properties",
             {{"path", {{"type", "string"}}},
              {"size", {{"type", "integer"}}},
              {"mode", {{"type", "string"}, {"description", "Permission bits in octal, e.g. \"0644\"."}}},
              {"content", {{"type", "string"}}},
              {"content_base64", {{"type", "string"}}}}}},
           ToolAnnotations{.read_only = true, .idempotent = true},
           false,
           Handle(h, &SandboxHandlers::FileRead)}));

  return reg.Add(Tool{
      "sandbox_file_write",
      "Write a file into a sandbox",
      "Creates or replaces a file (at most 2 MiB) from content_base64, or from content as UTF-8 text. mode is "
      "octal in a string (\"0755\") or an integer (default 0644). Symlinks resolve inside the sandbox.",
      Object({{"sandbox", SandboxRef()},
              {"path", path},
              {"content", Str("The content as UTF-8 text.", kMaxFileWriteBytes)},
              {"content_base64", Str("The content as base64; instead of content.", kMaxFileWriteBytes / 3 * 4 + 4)},
              {"mode",
               {{"type", {"string", "integer"}},
                {"minimum", 0},
                {"maximum", 0777},
                {"description", "Permission bits: \"0644\" (octal string) or an integer; default 0644."}}}},
             {"sandbox", "path"}),
      {{"type", "object"},
       {"required", {"path", "size", "mode"}},
       {"properties",
        {{"path", {{"type", "string"}}}, {"size", {{"type", "integer"}}}, {"mode", {{"type", "string"}}}}}},
      ToolAnnotations{.destructive = true, .idempotent = true},
      false,
      Handle(h, &SandboxHandlers::FileWrite)});
}

}  // namespace

Status AddSandboxTools(Registry& registry, Sandboxes& sandboxes, SandboxToolOptions options) {
  auto h = std::make_shared<SandboxHandlers>(sandboxes, options, CreateSchema());
  ISB_TRY(AddCreateAndExec(registry, h));
  ISB_TRY(AddTerminalTools(registry, h));
  ISB_TRY(AddLogsTool(registry, h));
  ISB_TRY(AddFileTools(registry, h));
  ISB_TRY(AddUsageTool(registry, sandboxes, options.usage));
  return AddLifecycleTools(registry, h);
}

}  // namespace isb::api
