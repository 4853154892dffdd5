// TerminalSocket: the opening handshake, then one exec's output out and its input in over a WebSocketSession.
#include "api/terminal_socket.h"

#include <algorithm>
#include <thread>

#include "api/json_util.h"
#include "api/rest.h"
#include "api/router.h"
#include "api/sandboxes.h"
#include "api/sandbox_tools.h"
#include "api/terminal_sessions.h"
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

// A limit in seconds the query may shorten (never lengthen) from the server's, to no less than `least`.
int64_t ShorterParam(const Request& req, std::string_view name, std::chrono::seconds server, int64_t least = 1) {
  std::string text = req.QueryParam(name);
  if (text.empty() || text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos)
    return server.count();
  return std::clamp<int64_t>(std::stoll(text), std::min<int64_t>(least, server.count()), server.count());
}

// The bytes of output a reattaching client already has (query seen=N); 0 when absent or not a number.
uint64_t SeenParam(const Request& req) {
  std::string text = req.QueryParam("seen");
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoull(text);
}

json ErrorMessage(const Error& error) {
  return {{"type", "error"}, {"error", CodeName(error.code)}, {"message", error.message}};
}

// A connection's WebSocket as its session sees it.
class SocketScreen : public TerminalScreen {
 public:
  explicit SocketScreen(WebSocketSession& ws) : ws_(ws) {}
  bool Text(std::string_view message) override { return ws_.Send(op::kText, message); }
  bool Output(std::string_view bytes) override { return ws_.Send(op::kBinary, bytes); }
  void Close(uint16_t code, std::string_view reason) override { ws_.Close(code, reason); }

 private:
  WebSocketSession& ws_;
};

// One connection to a terminal session: the client's messages, as the sandbox_exec_input and sandbox_exec_resize
// calls they stand for, made with the connection's own caller context.
constexpr char kTerminalMessageShape[] =
    "a text message is {\"type\":\"input\",\"data\":...} or {\"type\":\"resize\",\"rows\":R,\"cols\":C}";

class TerminalClient {
 public:
  TerminalClient(const Registry& registry, json sandbox, CallContext ctx)
      : registry_(registry), sandbox_(std::move(sandbox)), ctx_(std::move(ctx)) {}

  // Attached to `session` (by the caller), reads until the connection is over, then detaches: the shell ends with
  // it when the client closed normally (1000 or no code) or the server or the caller's access ended it, and waits
  // for a reattach otherwise (when its id reached a client).
  void Serve(WebSocketSession& ws, SocketScreen& screen, TerminalSession& session,
             const std::function<bool()>& stopping) {
    // However Serve ends, the session lets go of this connection's screen (it lives on this stack): on a throw the
    // shell ends with it.
    struct Detacher {
      TerminalSession& session;
      SocketScreen* screen;
      bool end = true;
      ~Detacher() { session.Detach(screen, end); }
    } detacher{session, &screen};
    while (std::optional<WebSocketSession::Message> message = ws.Read()) {
      Status done;
      try {
        done = Forward(session.id(), *message);
      } catch (const std::exception&) {  // a message no check foresaw: refused as one that is not understood
        done = Error::Of(Code::kInvalidArgument, kTerminalMessageShape);
      }
      if (!done.ok()) (void)ws.Send(op::kText, Dump(ErrorMessage(done.error())));
    }
    // The server stops, or the caller's credential or access changed (the HTTP server asks again as it runs): the
    // client is told why, and the shell ends.
    const bool stopped = stopping();
    if (stopped && !ws.broken()) ws.Close(net::ws_close::kPolicy, kTerminalStoppedReason);
    const uint16_t peer = ws.peer_close_code();
    detacher.end = stopped || peer == net::ws_close::kNormal || peer == net::ws_close::kNoStatus;
  }

  Status Resize(const std::string& session, uint16_t rows, uint16_t cols) {
    json call = {{"sandbox", sandbox_}, {"session", session}, {"rows", rows}, {"cols", cols}};
    ISB_ASSIGN_OR_RETURN(json ignored, registry_.Call("sandbox_exec_resize", call, ctx_));
    (void)ignored;
    return {};
  }

 private:
  // A client message as the sandbox_exec_input or sandbox_exec_resize call it stands for.
  Status Forward(const std::string& session, const WebSocketSession::Message& message) {
    if (session.empty()) {
      return Error::Of(Code::kConflict, "the terminal has not started yet; wait for its session message");
    }
    json call = {{"sandbox", sandbox_}, {"session", session}};
    if (message.opcode == op::kBinary) return Input(call, message.data, /*text=*/false);
    ISB_ASSIGN_OR_RETURN(json control, ParseJson(message.data));
    const std::string type = control.is_object() && control.contains("type") && control["type"].is_string()
                                 ? control["type"].get<std::string>()
                                 : "";
    if (type == "input" && control.contains("data") && control["data"].is_string())
      return Input(call, control["data"].get<std::string>(), /*text=*/true);
    if (type == "resize" && control.contains("rows") && control.contains("cols")) {
      call["rows"] = control["rows"];
      call["cols"] = control["cols"];
      ISB_ASSIGN_OR_RETURN(json ignored, registry_.Call("sandbox_exec_resize", call, ctx_));
      (void)ignored;
      return {};
    }
    return Error::Of(Code::kInvalidArgument, kTerminalMessageShape);
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
  const json sandbox_;
  const CallContext ctx_;
};

// The shell's exec, on its session's thread: its session id, output and end go to the session.
// `exec_ctx`: the caller's context with the exec's start recorded (Registry::Begin).
void RunShell(const Registry& registry, const Tool& exec, const json& input, CallContext exec_ctx,
              TerminalSessions& sessions, const std::shared_ptr<TerminalSession>& session) {
  exec_ctx.progress = [&sessions, session](std::string_view stream, std::string_view chunk) {
    if (stream == "session") {
      // Found by its id before anyone is told it.
      sessions.Add(std::string(chunk), session);
      session->Announce(std::string(chunk));
    } else {
      session->Output(chunk);
    }
  };
  exec_ctx.cancelled = [session] { return session->Over(); };
  Result<json> result = registry.Run(exec, input, exec_ctx);
  session->End(result.ok() ? json{{"type", "exit"}, {"exit_code", result->value("exit_code", -1)}}
                           : ErrorMessage(result.error()));
}

// The 101 that hands the connection to the response's `upgraded`.
Response Upgrade(const Request& req) {
  Response r;
  r.status = 101;
  r.headers.Set("Upgrade", "websocket");
  r.headers.Set("Connection", "Upgrade");
  r.headers.Set("Sec-WebSocket-Accept", net::WebSocketAccept(req.headers.Get("Sec-WebSocket-Key")));
  return r;
}

}  // namespace

Response TerminalSocket::Handle(const Request& req, const Identity& who) const {
  if (!AsksForWebSocket(req.headers)) {
    Response r =
        ErrorResponse(Error::Of(Code::kInvalidArgument, "a terminal is a WebSocket: send \"Upgrade: websocket\""));
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
  if (std::string org = req.QueryParam("org"); !org.empty())
    ctx.org = SanitizeUtf8(std::string_view(org).substr(0, 64));
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
  if (!req.QueryParam("session").empty()) return Reattach(req, who, sandbox, std::move(ctx), input);
  Result<const Tool*> tool = registry_.Admit("sandbox_exec", input, ctx);
  if (!tool.ok()) return ErrorResponse(tool.error());
  // Begin marks the context as recorded: the run below writes no second "started" row.
  CallContext run_ctx = ctx;
  if (Status begun = registry_.Begin(**tool, input, run_ctx); !begun.ok()) return ErrorResponse(begun.error());

  Response r = Upgrade(req);
  const TerminalOwner owner{who.Subject(), ctx.org, sandbox};
  const auto grace = std::chrono::seconds(ShorterParam(req, "reattach_grace", options_.reattach_grace, 0));
  TerminalClient client(registry_, sandbox, std::move(ctx));
  r.upgraded = [&registry = registry_, &sessions = *sessions_, &exec = **tool, input = std::move(input),
                run_ctx = std::move(run_ctx), owner, grace, client = std::move(client)](
                   int fd, std::string_view pending, const std::function<bool()>& stopping) mutable {
    WebSocketSession ws(fd, pending, stopping);
    SocketScreen screen(ws);
    auto session = std::make_shared<TerminalSession>(owner, grace);
    session->Attach(&screen, 0);
    sessions.Start(session, [&registry, &exec, input, run_ctx, &sessions, session] {
      RunShell(registry, exec, input, run_ctx, sessions, session);
    });
    client.Serve(ws, screen, *session, stopping);
    sessions.KeepDetachedWithin(owner.subject, kMaxDetachedTerminals);
  };
  return r;
}

Response TerminalSocket::Reattach(const Request& req, const Identity& who, const std::string& sandbox, CallContext ctx,
                                  const json& input) const {
  // Judged as a new shell would be (the caller may still run sandbox_exec there), then the session: only its own.
  const json attach = {{"sandbox", sandbox}};
  Status allowed = registry_.Recheck("sandbox_exec", input, ctx);
  Result<std::shared_ptr<TerminalSession>> found =
      allowed.ok() ? sessions_->Find(req.QueryParam("session"), TerminalOwner{who.Subject(), ctx.org, sandbox})
                   : Result<std::shared_ptr<TerminalSession>>(allowed.error());
  const Status outcome = found.ok() ? Status{} : Status(found.error());
  if (Status recorded = registry_.Record(kTerminalReattachAction, attach, ctx, outcome); !recorded.ok())
    return ErrorResponse(recorded.error());
  // Refused by the authorizer: the HTTP error REST would give. No such session of this caller's: told after the
  // upgrade, where a browser can read why.
  if (!allowed.ok()) return ErrorResponse(allowed.error());
  Response r = Upgrade(req);
  const bool sized = !req.QueryParam("rows").empty() && !req.QueryParam("cols").empty();
  const auto rows = input["rows"].get<uint16_t>(), cols = input["cols"].get<uint16_t>();
  TerminalClient client(registry_, sandbox, std::move(ctx));
  r.upgraded = [found = std::move(found), client = std::move(client), seen = SeenParam(req), sized, rows, cols,
                &sessions = *sessions_, subject = who.Subject()](int fd, std::string_view pending,
                                                                 const std::function<bool()>& stopping) mutable {
    WebSocketSession ws(fd, pending, stopping);
    if (!found.ok()) {
      (void)ws.Send(op::kText, Dump(ErrorMessage(found.error())));
      ws.Close(kTerminalNoSessionCode, kTerminalNoSessionReason);
      while (ws.Read()) {
      }
      return;
    }
    SocketScreen screen(ws);
    TerminalSession& session = **found;
    session.Attach(&screen, seen);
    if (sized) {
      if (Status resized = client.Resize(session.id(), rows, cols); !resized.ok())
        (void)ws.Send(op::kText, Dump(ErrorMessage(resized.error())));
    }
    client.Serve(ws, screen, session, stopping);
    sessions.KeepDetachedWithin(subject, kMaxDetachedTerminals);
  };
  return r;
}

}  // namespace isb::api
