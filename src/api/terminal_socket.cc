// TerminalSocket: the opening handshake, then one exec's output out and its input in over a WebSocketSession.
#include "api/terminal_socket.h"

#include <algorithm>
#include <thread>

#include "api/json_util.h"
#include "api/rest.h"
#include "api/router.h"
#include "api/sandboxes.h"
#include "api/sandbox_tools.h"
#include "api/websocket_session.h"
#include "base/base64.h"
#include "base/random.h"
#include "net/websocket_handshake.h"
#include "spec/exec_request.h"

namespace isb::api {
namespace {

using json = nlohmann::json;
namespace op = net::ws_opcode;

// The shell a terminal starts: bash where the image has it.
const char kShell[] = "if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi";

uint16_t SizeParam(const Request& req, std::string_view name, uint16_t fallback) {
  std::string text = req.QueryParam(name);
  if (text.empty() || text.size() > 4 || text.find_first_not_of("0123456789") != std::string::npos) return fallback;
  int value = std::stoi(text);
  return value >= 1 && value <= kMaxTerminalSide ? static_cast<uint16_t>(value) : fallback;
}

// A limit in seconds the query may shorten (never lengthen) from the server's.
int64_t ShorterParam(const Request& req, std::string_view name, std::chrono::seconds server) {
  std::string text = req.QueryParam(name);
  if (text.empty() || text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos)
    return server.count();
  return std::clamp<int64_t>(std::stoll(text), 1, server.count());
}

// One terminal: the exec on a thread of its own, the client's messages on the calling one.
class TerminalRun {
 public:
  // `exec_ctx`: the caller's context with the exec's start recorded (Registry::Begin); `ctx`: as it came, for the
  // input and resize calls.
  TerminalRun(const Registry& registry, const Tool& exec, json input, CallContext exec_ctx, CallContext ctx)
      : registry_(registry), exec_(exec), input_(std::move(input)), exec_ctx_(std::move(exec_ctx)),
        ctx_(std::move(ctx)) {}

  void Run(int fd, std::string_view pending, const std::function<bool()>& stopping) {
    WebSocketSession ws(fd, pending, stopping);
    std::atomic<bool> gone{false};
    CallContext exec_ctx = exec_ctx_;
    exec_ctx.progress = [&](std::string_view stream, std::string_view chunk) {
      if (stream == "session") {
        {
          MutexLock lock(mu_);
          session_ = std::string(chunk);
        }
        (void)ws.Send(op::kText, Dump({{"type", "session"}, {"session", std::string(chunk)}}));
      } else {
        (void)ws.Send(op::kBinary, chunk);
      }
    };
    exec_ctx.cancelled = [&] { return gone.load() || stopping(); };
    std::thread exec([&] {
      Result<json> result = registry_.Run(exec_, input_, exec_ctx);
      json end = result.ok() ? json{{"type", "exit"}, {"exit_code", result->value("exit_code", -1)}}
                             : json{{"type", "error"}, {"error", CodeName(result.error().code)},
                                    {"message", result.error().message}};
      (void)ws.Send(op::kText, Dump(end));
      ws.Close(net::ws_close::kNormal, "the command ended");
    });
    while (std::optional<WebSocketSession::Message> message = ws.Read()) {
      Status done = Forward(*message);
      if (!done.ok()) {
        (void)ws.Send(op::kText, Dump({{"type", "error"}, {"error", CodeName(done.error().code)},
                                      {"message", done.error().message}}));
      }
    }
    // The server stops, or the caller's credential or access changed (the HTTP server asks again as it runs): the
    // client is told why, and the command is cancelled below.
    if (stopping() && !ws.broken()) ws.Close(net::ws_close::kPolicy, kTerminalStoppedReason);
    gone = true;
    exec.join();
  }

 private:
  // A client message as the sandbox_exec_input or sandbox_exec_resize call it stands for.
  Status Forward(const WebSocketSession::Message& message) {
    std::string session;
    {
      MutexLock lock(mu_);
      session = session_;
    }
    if (session.empty()) {
      return Error::Of(Code::kConflict, "the terminal has not started yet; wait for its session message");
    }
    json call = {{"sandbox", input_["sandbox"]}, {"session", session}};
    if (message.opcode == op::kBinary) return Input(call, message.data, /*text=*/false);
    ISB_ASSIGN_OR_RETURN(json control, ParseJson(message.data));
    const std::string type = control.is_object() ? control.value("type", "") : "";
    if (type == "input" && control.contains("data") && control["data"].is_string())
      return Input(call, control["data"].get<std::string>(), /*text=*/true);
    if (type == "resize" && control.contains("rows") && control.contains("cols")) {
      call["rows"] = control["rows"];
      call["cols"] = control["cols"];
      ISB_ASSIGN_OR_RETURN(json ignored, registry_.Call("sandbox_exec_resize", call, ctx_));
      (void)ignored;
      return {};
    }
    return Error::Of(Code::kInvalidArgument, "a text message is {\"type\":\"input\",\"data\":...} or "
                                             "{\"type\":\"resize\",\"rows\":R,\"cols\":C}");
  }

  // Input in calls of at most kMaxTerminalInputBytes each (a paste may be larger than one call takes); text is cut
  // between UTF-8 characters, never inside one.
  Status Input(json call, std::string_view data, bool text) {
    while (!data.empty()) {
      size_t n = std::min(data.size(), kMaxTerminalInputBytes);
      if (text) {
        while (n < data.size() && n > 1 && (static_cast<unsigned char>(data[n]) & 0xC0) == 0x80) --n;
        call["data"] = std::string(data.substr(0, n));
      } else {
        call["data_base64"] = Base64Encode(data.substr(0, n));
      }
      ISB_ASSIGN_OR_RETURN(json ignored, registry_.Call("sandbox_exec_input", call, ctx_));
      (void)ignored;
      data.remove_prefix(n);
    }
    return {};
  }

  const Registry& registry_;
  const Tool& exec_;
  const json input_;
  const CallContext exec_ctx_, ctx_;
  Mutex mu_;
  std::string session_ ISB_GUARDED_BY(mu_);
};

}  // namespace

Response TerminalSocket::Handle(const Request& req, const Identity& who) const {
  if (!AsksForWebSocket(req.headers)) {
    Response r = ErrorResponse(Error::Of(Code::kInvalidArgument, "a terminal is a WebSocket: send \"Upgrade: websocket\""));
    r.status = 426;
    r.headers.Set("Upgrade", "websocket");
    return r;
  }
  egress::HttpHead head;
  head.method = req.method;
  for (const auto& [name, value] : req.headers.fields()) head.headers.push_back({name, value});
  if (std::string why = net::WebSocketRequestRefusal(head); !why.empty()) {
    Response r = ErrorResponse(Error::Of(Code::kInvalidArgument, why));
    if (req.headers.Get("Sec-WebSocket-Version") != net::kWebSocketVersion) {
      r.status = 426;
      r.headers.Set("Sec-WebSocket-Version", net::kWebSocketVersion);
    }
    return r;
  }
  // "/api/v1/sandboxes/<id>/terminal": the route matched exactly these segments.
  std::string_view path = req.Path();
  path.remove_prefix(std::string_view("/api/v1/sandboxes/").size());
  const std::string sandbox(path.substr(0, path.find('/')));

  CallContext ctx;
  ctx.surface = "rest";
  Result<std::string> id = RandomHex(8);
  ctx.request_id = "ws-" + (id.ok() ? *id : std::string("terminal"));
  ctx.identity = who;
  if (std::string org = req.QueryParam("org"); !org.empty()) ctx.org = SanitizeUtf8(std::string_view(org).substr(0, 64));
  ctx.ip = req.remote_address;
  ctx.user_agent = SanitizeUtf8(std::string_view(req.headers.Get("User-Agent")).substr(0, 256));
  // Interactive limits go in the server-only context, not the input: sandbox_exec's public schema has neither.
  const int64_t timeout = ShorterParam(req, "timeout", options_.timeout);
  ctx.interactive = CallContext::Interactive{
      // An interactive command's idle limit is at most its timeout.
      std::chrono::seconds(std::min(ShorterParam(req, "idle_timeout", options_.idle_timeout), timeout)),
      std::chrono::seconds(timeout)};
  json input = {{"sandbox", sandbox},
                {"argv", {"/bin/sh", "-c", kShell}},
                {"env", {{"TERM", "xterm-256color"}}},
                {"tty", true},
                {"rows", SizeParam(req, "rows", spec::kDefaultRows)},
                {"cols", SizeParam(req, "cols", spec::kDefaultCols)}};
  Result<const Tool*> tool = registry_.Admit("sandbox_exec", input, ctx);
  if (!tool.ok()) return ErrorResponse(tool.error());
  // Begin marks the context as recorded: the run below writes no second "started" row.
  CallContext run_ctx = ctx;
  if (Status begun = registry_.Begin(**tool, input, run_ctx); !begun.ok()) return ErrorResponse(begun.error());

  Response r;
  r.status = 101;
  r.headers.Set("Upgrade", "websocket");
  r.headers.Set("Connection", "Upgrade");
  r.headers.Set("Sec-WebSocket-Accept", net::WebSocketAccept(req.headers.Get("Sec-WebSocket-Key")));
  auto run = std::make_shared<TerminalRun>(registry_, **tool, std::move(input), std::move(run_ctx),
                                            std::move(ctx));
  r.upgraded = [run](int fd, std::string_view pending, const std::function<bool()>& stopping) {
    run->Run(fd, pending, stopping);
  };
  return r;
}

}  // namespace isb::api
