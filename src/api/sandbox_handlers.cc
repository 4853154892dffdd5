// The sandbox tools' handlers: each input read (what the schema cannot say is refused here, naming the field),
// the call made on the caller's org's sandboxes, and the answer put into JSON.
#include "api/sandbox_handlers.h"

#include <cstdio>
#include <string>
#include <vector>

#include "api/json_schema.h"
#include "api/json_util.h"
#include "api/org_sandboxes.h"
#include "api/spec_policy.h"
#include "base/metric_families.h"
#include "base/utf8.h"

namespace isb::api {
namespace {

using nlohmann::json;

Error Invalid(const std::string& msg) { return Error::Of(Code::kInvalidArgument, msg); }

// The "sandbox" field every per-sandbox tool requires (the schema guarantees a string).
std::string Ref(const json& in) { return in["sandbox"].get<std::string>(); }

// Who a terminal session belongs to: only the same org and identity may drive it.
std::string Caller(const CallContext& ctx) { return ctx.org + "/" + ctx.identity.Subject(); }

// A call's outcome as its metrics label it: "ok", or its error's code name.
template <class T>
std::string Outcome(const Result<T>& r) {
  return r.ok() ? "ok" : std::string(CodeName(r.error().code));
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Result<json> InfoResult(Result<SandboxInfo> r) {
  if (!r.ok()) return r.error();
  return SandboxInfoJson(*r);
}

// A map of strings the schema let through (an object of strings), or empty when absent.
std::map<std::string, std::string> StringMapField(const json& in, const char* field) {
  std::map<std::string, std::string> out;
  if (auto it = in.find(field); it != in.end())
    for (auto e = it->begin(); e != it->end(); ++e) out[e.key()] = e.value().get<std::string>();
  return out;
}

// The text or base64 field of an input, decoded; exactly one of them may be present.
Result<std::string> BytesField(const json& in, const std::string& text_field, const std::string& b64_field,
                               size_t max_bytes) {
  bool has_text = in.contains(text_field), has_b64 = in.contains(b64_field);
  if (has_text && has_b64) return Invalid("give either " + text_field + " or " + b64_field + ", not both");
  std::string data;
  if (has_b64) {
    auto decoded = Base64Decode(in[b64_field].get<std::string>());
    if (!decoded.ok()) return Invalid(b64_field + ": " + decoded.error().message);
    data = std::move(*decoded);
  } else if (has_text) {
    data = in[text_field].get<std::string>();
  }
  if (data.size() > max_bytes) {
    return Invalid((has_b64 ? b64_field : text_field) + ": at most " + std::to_string(max_bytes) + " bytes, got " +
                   std::to_string(data.size()));
  }
  return data;
}

// Puts `data` under `field` (utf-8) or `field`_base64.
void PutBytes(json& out, const std::string& field, const std::string& data, bool base64) {
  if (base64)
    out[field + "_base64"] = Base64Encode(data);
  else
    out[field] = SanitizeUtf8(data);
}

Result<uint32_t> FileMode(const json& in) {
  auto it = in.find("mode");
  if (it == in.end()) return 0644u;
  uint64_t mode = 0;
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (s.empty() || s.size() > 5) return Invalid("mode: expected octal digits such as \"0644\"");
    for (char c : s) {
      if (c < '0' || c > '7') return Invalid("mode: expected octal digits such as \"0644\"");
      mode = mode * 8 + static_cast<uint64_t>(c - '0');
    }
  } else {
    mode = it->get<uint64_t>();
  }
  if (mode > 0777) return Invalid("mode: must be at most 0777 (permission bits only)");
  return static_cast<uint32_t>(mode);
}

std::string ModeString(uint32_t mode) {
  char buf[8];
  snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

// Forwards exec output to the progress callback, holding back an incomplete UTF-8 sequence at a chunk's end so
// each forwarded piece is whole characters.
class Utf8Forwarder {
 public:
  explicit Utf8Forwarder(const ProgressFn& progress) : progress_(progress) {}
  void operator()(int stream, std::string_view data) {
    std::string& carry = carry_[stream == 2 ? 1 : 0];
    std::string text = carry + std::string(data);
    size_t keep = Utf8IncompleteTail(text);
    carry = text.substr(text.size() - keep);
    text.resize(text.size() - keep);
    if (!text.empty()) progress_(stream == 2 ? "stderr" : "stdout", text);
  }
  void Flush() {
    for (int i = 0; i < 2; ++i) {
      if (!carry_[i].empty()) progress_(i == 1 ? "stderr" : "stdout", carry_[i]);
      carry_[i].clear();
    }
  }

 private:
  const ProgressFn& progress_;
  std::string carry_[2];
};

// A log read for "utf-8" text, whose characters must each be decoded whole: the ring keeps a stream's output in
// records of at most 64 KiB, and a read stops at its limit or at the log's end, both anywhere in a character.
// Consecutive output of one command's stream becomes one chunk, and an incomplete character that ends the read is
// left to the next read (`next` is moved back to it), unless it is all the read holds at its limit (a next read
// could hold no more, so it is given as it is).
void JoinWholeCharacters(LogRead& read, size_t limit_bytes) {
  std::vector<LogChunk> joined;
  for (LogChunk& c : read.chunks) {
    LogChunk* last = joined.empty() ? nullptr : &joined.back();
    if (last != nullptr && c.kind != LogChunk::Kind::kExit && last->kind == c.kind && last->log_id == c.log_id &&
        last->cursor + last->data.size() == c.cursor) {
      last->data += c.data;
      continue;
    }
    joined.push_back(std::move(c));
  }
  read.chunks = std::move(joined);
  if (read.chunks.empty() || read.chunks.back().kind == LogChunk::Kind::kExit) return;
  LogChunk& last = read.chunks.back();
  const size_t tail = Utf8IncompleteTail(last.data);
  if (tail == 0 || (read.chunks.size() == 1 && tail == last.data.size() && last.data.size() >= limit_bytes)) return;
  last.data.resize(last.data.size() - tail);
  read.next -= tail;
  if (last.data.empty()) read.chunks.pop_back();
}

Result<ExecRequest> ExecFromJson(const json& in) {
  ExecRequest req;
  const json& argv = in["argv"];
  for (size_t i = 0; i < argv.size(); ++i) {
    req.argv.push_back(argv[i].get<std::string>());
  }
  ISB_ASSIGN_OR_RETURN(req.stdin_data, BytesField(in, "stdin", "stdin_base64", kMaxStdinBytes));
  req.env = StringMapField(in, "env");
  if (in.contains("workdir")) {
    ISB_ASSIGN_OR_RETURN(req.workdir, spec::NormalizeInsidePath("workdir", in["workdir"].get<std::string>()));
  }
  req.timeout = std::chrono::seconds(in.value("timeout", int64_t{kDefaultExecTimeoutS}));
  req.tty = in.value("tty", false);
  for (const char* field : {"rows", "cols"}) {
    if (in.contains(field) && !req.tty) return Invalid(std::string(field) + ": only with \"tty\": true");
  }
  req.rows = static_cast<uint16_t>(in.value("rows", spec::kDefaultRows));
  req.cols = static_cast<uint16_t>(in.value("cols", spec::kDefaultCols));
  ISB_TRY(spec::Validate(req));
  return req;
}

json ExecResultJson(ExecResult r, bool base64) {
  // The engine caps output; cap again so a misbehaving implementation cannot blow up a response.
  for (auto [data, flag] : {std::pair{&r.stdout_data, &r.stdout_truncated}, {&r.stderr_data, &r.stderr_truncated}}) {
    if (data->size() > kMaxOutputBytes) {
      data->resize(kMaxOutputBytes);
      *flag = true;
    }
  }
  json out = {{"exit_code", r.exit_code},
              {"signal", r.signal},
              {"timed_out", r.timed_out},
              {"oom_killed", r.oom_killed},
              {"stdout_truncated", r.stdout_truncated},
              {"stderr_truncated", r.stderr_truncated},
              {"duration_ms", r.duration_ms}};
  PutBytes(out, "stdout", r.stdout_data, base64);
  PutBytes(out, "stderr", r.stderr_data, base64);
  return out;
}

// A remote caller's spec holds only what the operator's flags allow, and its image and mounts by the real paths
// that were checked, not the ones sent.
Status ApplyRemotePolicy(SandboxSpec& spec, const RemoteSpecPolicy& remote, const std::string& org) {
  ISB_TRY(CheckRemoteSpec(spec, remote, org));
  if (!spec.image.empty() && !spec::IsImageReference(spec.image)) {
    ISB_ASSIGN_OR_RETURN(spec.image, ResolveUnderBindRoot("image", spec.image, remote, org));
  }
  for (size_t i = 0; i < spec.mounts.size(); ++i) {
    ISB_ASSIGN_OR_RETURN(spec.mounts[i].source, ResolveUnderBindRoot("mounts[" + std::to_string(i) + "].source",
                                                                     spec.mounts[i].source, remote, org));
  }
  spec.paths_checked = true;
  return {};
}

}  // namespace

Status SandboxHandlers::ApplyImage(SandboxSpec& spec, const json& given, const std::string& org,
                                   const std::function<Status(uint64_t)>& may_flatten) const {
  if (!options_.resolve_image)
    return Error::Of(Code::kInvalidArgument, "image: this daemon has no image store; give a host directory");
  ISB_ASSIGN_OR_RETURN(ResolvedImage image, options_.resolve_image(org, spec.image, may_flatten));
  spec.image = image.name;
  spec.image_digest = image.digest;
  spec.image_layers = std::move(image.layers);
  spec.image_idmapped = true;
  // The image's config fills what the caller left out; the caller's values win.
  for (const std::string& entry : image.env) {
    const size_t eq = entry.find('=');
    if (eq == 0 || eq == std::string::npos) continue;
    spec.environment.try_emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  if (!given.contains("working_dir") && !image.working_dir.empty()) spec.working_dir = image.working_dir;
  if (!given.contains("user") && !image.user.empty()) spec.user = image.user;
  return {};
}

Result<json> SandboxHandlers::Create(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  // ${NAME} comes from the caller's vars alone: always for a remote caller, for the host when it sends vars.
  // What was filled is judged by the schema again (a field's length).
  json filled = in;
  if (!ctx.identity.superadmin || in.contains("vars")) {
    std::map<std::string, std::string> vars;
    if (auto it = in.find("vars"); it != in.end()) vars = it->get<std::map<std::string, std::string>>();
    ISB_ASSIGN_OR_RETURN(filled, ExpandSpecVars(in, vars));
    ISB_TRY(Validate(create_schema_, filled));
  }
  ISB_ASSIGN_OR_RETURN(SandboxSpec spec, spec::FromCallerJson(filled));
  if (options_.remote != nullptr && !ctx.identity.superadmin)
    ISB_TRY(ApplyRemotePolicy(spec, *options_.remote, ctx.org));
  if (!spec.secrets.empty()) {
    Status may = options_.may_read_secrets ? options_.may_read_secrets(ctx)
                                           : Error::Of(Code::kForbidden, "this daemon gives no secret files");
    if (!may.ok())
      return Error::Of(Code::kForbidden,
                       "secrets: whoever execs in the sandbox reads its secret files, so giving "
                       "them takes what secret_get takes: " +
                           may.error().message);
  }
  // An image the host chose is seen through the sandbox's id mapping: its root's files are the sandbox root's. A
  // remote caller's image is a directory below a bind root, whose files it may see only as others. An image of the
  // org's is the sandbox's own, whoever asks.
  spec.image_idmapped = !spec.image.empty() && !spec.paths_checked;
  // An image of the org's is resolved after the quota check and within it: resolving may flatten its lowest
  // layers, which the org's disk quota must have room for.
  QuotaGate::Prepare image;
  if (spec::IsImageReference(spec.image)) {
    image = [&](SandboxSpec& s, const QuotaGate::DiskCheck& may_write) {
      return ApplyImage(s, filled, ctx.org, may_write);
    };
  }
  const auto start = std::chrono::steady_clock::now();
  Result<SandboxInfo> made = Error::Msg("not made");
  if (options_.quotas != nullptr) {
    made = options_.quotas->Create(sb, ctx.org, spec, image);
  } else if (Status applied = image ? image(spec, nullptr) : Status(); !applied.ok()) {
    made = applied.error();
  } else {
    made = sb.Create(spec);
  }
  const std::string outcome = Outcome(made);
  metrics::SandboxCreates().With({outcome, made.ok() ? made->create_path : ""}).Inc();
  metrics::SandboxCreateSeconds().With({outcome}).Observe(SecondsSince(start));
  return InfoResult(std::move(made));
}

Result<json> SandboxHandlers::Get(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  return InfoResult(sb.Get(Ref(in)));
}

Result<json> SandboxHandlers::List(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  ISB_ASSIGN_OR_RETURN(auto listed, sb.List());
  auto want = StringMapField(in, "labels");
  json list = json::array();
  for (const SandboxInfo& s : listed) {
    bool match = true;
    for (const auto& [k, v] : want) {
      auto it = s.spec.labels.find(k);
      match = match && it != s.spec.labels.end() && it->second == v;
    }
    if (match) list.push_back(SandboxInfoJson(s));
  }
  return json{{"sandboxes", std::move(list)}};
}

Result<json> SandboxHandlers::Stop(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  return InfoResult(sb.Stop(Ref(in)));
}

Result<json> SandboxHandlers::Start(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  return InfoResult(sb.Start(Ref(in)));
}

Result<json> SandboxHandlers::SetEgress(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  return InfoResult(sb.SetEgress(Ref(in), in["egress"]));
}

Result<json> SandboxHandlers::Extend(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  return InfoResult(sb.Extend(Ref(in), std::chrono::seconds(in["by"].get<int64_t>())));
}

Result<json> SandboxHandlers::Remove(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  std::string ref = Ref(in);
  ISB_TRY(sb.Remove(ref));
  return json{{"sandbox", ref}, {"removed", true}};
}

Result<json> SandboxHandlers::Exec(const json& in, const CallContext& ctx) {
  const auto start = std::chrono::steady_clock::now();
  Result<json> out = ExecUntimed(in, ctx);
  const std::string outcome = Outcome(out);
  metrics::SandboxExecs().With({outcome}).Inc();
  metrics::SandboxExecSeconds().With({outcome}).Observe(SecondsSince(start));
  return out;
}

Result<json> SandboxHandlers::ExecUntimed(const json& in, const CallContext& ctx) {
  if (in.value("detach", false)) return ExecDetached(in, ctx);
  OrgSandboxes sb(all_, ctx);
  ISB_ASSIGN_OR_RETURN(ExecRequest req, ExecFromJson(in));
  if (ctx.interactive && req.tty) {
    // The server's own terminal: its limits come from the context, never from the input.
    req.idle_timeout = ctx.interactive->idle_timeout;
    req.timeout = ctx.interactive->timeout;
    ISB_TRY(spec::Validate(req));
  }
  bool base64 = in.value("encoding", "utf-8") == "base64";
  if (req.tty && !ctx.progress) {
    return Invalid(
        "tty: needs a streaming call (REST ?stream=1 or Accept: text/event-stream; MCP with a "
        "progressToken), which announces the session to send input to");
  }
  req.cancelled = ctx.cancelled;  // the caller's cancel (MCP's notifications/cancelled), or its going away
  if (!ctx.progress) {
    ISB_ASSIGN_OR_RETURN(ExecResult r, sb.Exec(Ref(in), req, nullptr));
    return ExecResultJson(std::move(r), base64);
  }
  Utf8Forwarder forward(ctx.progress);
  std::string session;
  if (req.tty) {
    req.caller = Caller(ctx);
    req.on_session = [&](const std::string& id) {
      session = id;
      ctx.progress("session", id);
    };
  }
  auto result = sb.Exec(Ref(in), req, [&forward](int stream, std::string_view data) { forward(stream, data); });
  forward.Flush();
  if (!result.ok()) return result.error();
  json out = ExecResultJson(std::move(*result), base64);
  if (!session.empty()) out["session"] = session;
  return out;
}

Result<json> SandboxHandlers::ExecDetached(const json& in, const CallContext& ctx) {
  // What a command nobody waits for cannot have, refused rather than ignored.
  if (in.value("tty", false)) return Invalid("tty: not with detach (a detached command has no terminal)");
  if (in.contains("stdin") || in.contains("stdin_base64"))
    return Invalid("stdin: not with detach (a detached command's stdin is /dev/null)");
  ISB_ASSIGN_OR_RETURN(ExecRequest req, ExecFromJson(in));
  req.detach = true;
  if (!in.contains("timeout")) req.timeout = {};  // none: it runs until it exits or its sandbox stops
  OrgSandboxes sb(all_, ctx);
  ISB_ASSIGN_OR_RETURN(DetachedExec started, sb.ExecDetached(Ref(in), req));
  return json{{"detached", true}, {"log_id", started.log_id}};
}

Result<json> SandboxHandlers::Logs(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  const bool base64 = in.value("encoding", "utf-8") == "base64";
  const size_t limit_bytes = in.value("limit_bytes", size_t{kMaxLogReadBytes});
  ISB_ASSIGN_OR_RETURN(LogRead read, sb.Logs(Ref(in), in.value("after", uint64_t{0}), limit_bytes));
  if (!base64) JoinWholeCharacters(read, limit_bytes);
  json chunks = json::array();
  for (const LogChunk& c : read.chunks) {
    json chunk = {{"cursor", c.cursor}, {"log_id", c.log_id}};
    if (c.kind == LogChunk::Kind::kExit) {
      chunk["stream"] = "exit";
      chunk["exit_code"] = c.exit_code;
      chunk["signal"] = c.signal;
      if (!c.error.empty()) chunk["error"] = c.error;
      if (c.timed_out) chunk["timed_out"] = true;
    } else {
      chunk["stream"] = c.kind == LogChunk::Kind::kStderr ? "stderr" : "stdout";
      PutBytes(chunk, "data", c.data, base64);
    }
    chunks.push_back(std::move(chunk));
  }
  return json{{"chunks", std::move(chunks)}, {"next", read.next},      {"start", read.start}, {"end", read.end},
              {"dropped", read.dropped},     {"running", read.running}};
}

Status SandboxHandlers::ExecFindsSandbox(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  if (auto found = sb.Get(Ref(in)); !found.ok()) return found.error();
  return {};
}

Result<json> SandboxHandlers::ExecInput(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  ISB_ASSIGN_OR_RETURN(std::string data, BytesField(in, "data", "data_base64", kMaxTerminalInputBytes));
  bool eof = in.value("eof", false);
  std::string id = in["session"].get<std::string>();
  ISB_TRY(sb.ExecInput(Ref(in), id, Caller(ctx), data, eof));
  return json{{"session", id}, {"written", data.size()}, {"eof", eof}};
}

Result<json> SandboxHandlers::ExecResize(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  std::string id = in["session"].get<std::string>();
  auto rows = in["rows"].get<uint16_t>(), cols = in["cols"].get<uint16_t>();
  ISB_TRY(sb.ExecResize(Ref(in), id, Caller(ctx), rows, cols));
  return json{{"session", id}, {"rows", rows}, {"cols", cols}};
}

Result<json> SandboxHandlers::FileRead(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  ISB_ASSIGN_OR_RETURN(std::string p, spec::NormalizeInsidePath("path", in["path"].get<std::string>()));
  ISB_ASSIGN_OR_RETURN(FileData data, sb.ReadFile(Ref(in), p));
  if (data.content.size() > kMaxFileReadBytes) {
    return Error::Of(Code::kTooLarge, "file " + p + " is " + std::to_string(data.content.size()) +
                                          " bytes; sandbox_file_read returns at most 4 MiB (4194304)");
  }
  bool base64 = in.value("encoding", "base64") == "base64";
  if (!base64 && !IsValidUtf8(data.content)) {
    return Invalid("file " + p + " is not valid UTF-8; read it with encoding \"base64\"");
  }
  json out = {{"path", p}, {"size", data.content.size()}, {"mode", ModeString(data.mode)}};
  PutBytes(out, "content", data.content, base64);
  return out;
}

Result<json> SandboxHandlers::FileWrite(const json& in, const CallContext& ctx) {
  OrgSandboxes sb(all_, ctx);
  ISB_ASSIGN_OR_RETURN(std::string p, spec::NormalizeInsidePath("path", in["path"].get<std::string>()));
  if (!in.contains("content") && !in.contains("content_base64")) {
    return Invalid("missing required field 'content_base64' (or 'content')");
  }
  FileData data;
  ISB_ASSIGN_OR_RETURN(data.content, BytesField(in, "content", "content_base64", kMaxFileWriteBytes));
  ISB_ASSIGN_OR_RETURN(data.mode, FileMode(in));
  ISB_TRY(sb.WriteFile(Ref(in), p, data));
  return json{{"path", p}, {"size", data.content.size()}, {"mode", ModeString(data.mode)}};
}

json SandboxInfoJson(const SandboxInfo& info) {
  json out = {
      {"id", info.id},
      {"name", info.name},
      {"state", info.state},
      {"spec", spec::ToJson(info.spec)},
      {"created_at", info.created_at},
      {"expires_at", info.expires_at},
      {"last_active_at", info.last_active_at},
      {"usage",
       {{"cpu_usec", info.usage.cpu_usec}, {"memory_bytes", info.usage.memory_bytes}, {"pids", info.usage.pids}}}};
  if (!info.create_path.empty()) out["timing"] = {{"path", info.create_path}, {"create_ms", info.create_ms}};
  if (!info.secrets.empty()) {
    json use = json::object();
    for (const auto& [name, u] : info.secrets)
      use[name] = {{"swapped", u.swapped}, {"scrubbed", u.scrubbed}, {"held", u.held}};
    out["secrets"] = std::move(use);
  }
  return out;
}

}  // namespace isb::api
