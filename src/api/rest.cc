// REST routing and the OpenAPI document, both derived from the registry.
#include "api/rest.h"

#include <cctype>

#include "api/json_util.h"
#include "base/mutex.h"

namespace isb::api {
Response MethodNotAllowed(std::string allow) {
  Response r = ErrorResponse(Error::Of(Code::kInvalidArgument, "method not allowed; use " + allow));
  r.status = 405;
  r.body = Dump({{"error", "method_not_allowed"}, {"message", "method not allowed; use " + allow}});
  r.headers.Set("Allow", std::move(allow));
  return r;
}

namespace {

constexpr std::string_view kToolsPrefix = "/api/v1/tools/";

bool WantsStream(const Request& req) {
  std::string s = req.QueryParam("stream");
  return s == "1" || s == "true" || req.headers.Get("Accept").find("text/event-stream") != std::string::npos;
}

json ErrorSchema() {
  return {{"type", "object"},
          {"required", {"error", "message"}},
          {"properties",
           {{"error",
             {{"type", "string"},
              {"enum",
               {"invalid_argument", "unauthenticated", "forbidden", "not_found", "conflict", "too_large", "timeout",
                "unavailable", "rate_limited", "internal", "method_not_allowed"}}}},
            {"message", {{"type", "string"}}}}}};
}

// A call's 200 body: {"result": ...}, and "audit_unrecorded" saying why when the call took effect but the audit log
// could not record its outcome.
json ResultBody(const json& result, const std::string& unrecorded) {
  json body = {{"result", result}};
  if (!unrecorded.empty()) body["audit_unrecorded"] = unrecorded;
  return body;
}

json ErrorRef(const char* description) {
  return {{"description", description},
          {"content", {{"application/json", {{"schema", {{"$ref", "#/components/schemas/Error"}}}}}}}};
}

}  // namespace

Response ErrorResponse(const Error& error) {
  return JsonResponse(HttpStatusFor(error.code), Dump({{"error", CodeName(error.code)}, {"message", error.message}}));
}

Response NoRouteResponse(std::string_view path) {
  return ErrorResponse(Error::Of(
      Code::kNotFound, "no route for " + SanitizeUtf8(path.substr(0, 200)) + "; see GET /api/v1/openapi.json"));
}

RestApi::RestApi(const Registry& registry, std::string version, size_t max_body_bytes)
    : registry_(registry), version_(std::move(version)), max_body_bytes_(max_body_bytes) {}

std::string RestApi::RequestId(const Request& req) const {
  std::string id = req.headers.Get("X-Request-Id");
  bool sane = !id.empty() && id.size() <= 64;
  for (char c : id) sane = sane && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
  return sane ? id : "req-" + std::to_string(next_id_.fetch_add(1));
}

CallContext RestApi::Context(const Request& req, const Identity& identity) const {
  CallContext ctx;
  ctx.surface = req.via_unix_socket ? "unix" : "rest";
  ctx.request_id = RequestId(req);
  ctx.identity = identity;
  // The org the call acts in: the X-Isb-Org header, else ?org=, else "default".
  std::string org = req.headers.Get("X-Isb-Org");
  if (org.empty()) org = req.QueryParam("org");
  if (!org.empty()) ctx.org = SanitizeUtf8(std::string_view(org).substr(0, 64));
  ctx.ip = req.remote_address;
  ctx.user_agent = SanitizeUtf8(std::string_view(req.headers.Get("User-Agent")).substr(0, 256));
  return ctx;
}

Response RestApi::Handle(const Request& req, const Identity& identity) const {
  std::string_view path = req.Path();
  bool get = req.method == "GET" || req.method == "HEAD";
  if (path == "/healthz") return get ? JsonResponse(200, R"({"ok":true})") : MethodNotAllowed("GET");
  if (path == "/api/v1/tools") {
    if (!get) return MethodNotAllowed("GET");
    json tools = json::array();
    for (const Tool* t : registry_.Visible(identity)) tools.push_back(Registry::Describe(*t));
    return JsonResponse(200, Dump({{"tools", std::move(tools)}}));
  }
  if (path.starts_with("/api/v1/auth/") && auth_routes_ && !req.via_unix_socket) return auth_routes_(req);
  if (path == "/api/v1/openapi.json") return get ? JsonResponse(200, Dump(OpenApi(identity))) : MethodNotAllowed("GET");
  if (path.starts_with(kToolsPrefix)) {
    if (req.method != "POST") return MethodNotAllowed("POST");
    Response r = CallTool(req, path.substr(kToolsPrefix.size()), identity);
    return r;
  }
  return NoRouteResponse(path);
}

Response RestApi::CallTool(const Request& req, std::string_view name, const Identity& identity) const {
  CallContext ctx = Context(req, identity);
  auto refuse = [&](const Error& error) {
    registry_.Refuse(name, ctx, error);
    Response r = ErrorResponse(error);
    r.headers.Set("X-Request-Id", ctx.request_id);
    return r;
  };
  if (req.body.size() > max_body_bytes_) {
    return refuse(
        Error::Of(Code::kTooLarge, "request body is larger than " + std::to_string(max_body_bytes_) + " bytes"));
  }
  json input = json::object();
  if (req.body.find_first_not_of(" \t\r\n") != std::string::npos) {
    auto parsed = ParseJson(req.body);
    if (!parsed.ok()) return refuse(parsed.error());
    input = std::move(*parsed);
  }
  auto admitted = registry_.Admit(name, input, ctx);
  if (!admitted.ok()) {
    Response r = ErrorResponse(admitted.error());
    r.headers.Set("X-Request-Id", ctx.request_id);
    return r;
  }
  const Tool* tool = *admitted;

  if (!tool->streams || !WantsStream(req)) {
    std::string unrecorded;
    auto result = registry_.Run(*tool, input, ctx, &unrecorded);
    Response r = result.ok() ? JsonResponse(200, Dump(ResultBody(*result, unrecorded))) : ErrorResponse(result.error());
    r.headers.Set("X-Request-Id", ctx.request_id);
    return r;
  }

  if (Status checked = registry_.Begin(*tool, input, ctx); !checked.ok()) {
    Response r = ErrorResponse(checked.error());
    r.headers.Set("X-Request-Id", ctx.request_id);
    return r;
  }
  Response r;
  r.headers.Set("Content-Type", "text/event-stream");
  r.headers.Set("Cache-Control", "no-cache");
  r.headers.Set("X-Request-Id", ctx.request_id);
  const Registry& registry = registry_;
  r.stream = [&registry, tool, input = std::move(input), ctx](const ChunkWriter& write) mutable {
    Mutex mu;  // output may arrive from the stdout and the stderr reader at once
    bool client_gone = false;
    auto send = [&](std::string_view event, const json& data) {
      MutexLock lock(mu);
      if (!client_gone) client_gone = !write(SseEvent(event, Dump(data)));
    };
    ctx.progress = [&](std::string_view stream, std::string_view chunk) {
      if (stream == "session")
        send(stream, {{"session", std::string(chunk)}});
      else
        send(stream, {{"data", std::string(chunk)}});
    };
    // An SSE comment is ignored by clients; writing one is how a silent command learns its caller has gone.
    ctx.cancelled = [&] {
      MutexLock lock(mu);
      if (!client_gone) client_gone = !write(": keep-alive\n\n");
      return client_gone;
    };
    std::string unrecorded;
    auto result = registry.Run(*tool, input, ctx, &unrecorded);
    if (result.ok())
      send("result", ResultBody(*result, unrecorded));
    else
      send("error", {{"error", CodeName(result.error().code)}, {"message", result.error().message}});
  };
  return r;
}

json RestApi::OpenApi(const Identity& identity) const {
  json paths = json::object();
  for (const Tool* t : registry_.Visible(identity)) {
    json ok_schema = {{"type", "object"}, {"required", {"result"}}, {"properties", {{"result", t->output_schema}}}};
    json responses = {
        {"200",
         {{"description", "The tool's result."},
          {"content", {{"application/json", {{"schema", std::move(ok_schema)}}}}}}},
        {"400", ErrorRef("Invalid JSON or input that does not match the schema; the message names the field.")},
        {"401", ErrorRef("Missing or invalid bearer token.")},
        {"403", ErrorRef("The caller may not use this tool.")},
        {"404", ErrorRef("Unknown tool, or the sandbox does not exist.")},
        {"409", ErrorRef("Conflict: a name in use or a sandbox in the wrong state.")},
        {"413", ErrorRef("Request body or result too large.")},
        {"429", ErrorRef("Too many requests: a limit on the caller; Retry-After says when to try again.")},
        {"500", ErrorRef("Internal error.")},
        {"503", ErrorRef("Unavailable: a service the call needs is not running or is busy (egress, a sandbox's init), "
                         "or the audit log cannot record the call, which then did not run.")},
        {"504", ErrorRef("Timed out.")}};
    if (t->streams) {
      responses["200"]["content"]["text/event-stream"] = {
          {"schema",
           {{"type", "string"},
            {"description",
             "With ?stream=1: with tty first a session event (data {\"session\": id}); "
             "events stdout/stderr (data {\"data\": text}), then result "
             "(data {\"result\": ...}) or error."}}}};
    }
    json op = {
        {"operationId", t->name},
        {"summary", t->title},
        {"description", t->description},
        {"requestBody", {{"required", true}, {"content", {{"application/json", {{"schema", t->input_schema}}}}}}},
        {"responses", std::move(responses)},
        {"x-isb-annotations", Registry::Describe(*t)["annotations"]}};
    if (t->streams) {
      op["parameters"] = json::array({{{"name", "stream"},
                                       {"in", "query"},
                                       {"required", false},
                                       {"description", "1: stream output as Server-Sent Events."},
                                       {"schema", {{"type", "string"}, {"enum", {"0", "1"}}}}}});
    }
    paths["/api/v1/tools/" + t->name] = {{"post", std::move(op)}};
  }
  paths["/api/v1/tools"] = {{"get",
                             {{"operationId", "list_tools"},
                              {"summary", "The tool registry"},
                              {"responses", {{"200", {{"description", "Every tool with its schemas."}}}}}}}};
  paths["/healthz"] = {{"get",
                        {{"operationId", "healthz"},
                         {"summary", "Liveness"},
                         {"security", json::array()},
                         {"responses", {{"200", {{"description", "{\"ok\": true}"}}}}}}}};
  return {{"openapi", "3.1.0"},
          {"info",
           {{"title", "isb"},
            {"version", version_},
            {"description", "Every isb operation is a tool; each is a POST of its input as JSON."}}},
          {"servers", json::array({{{"url", "/"}}})},
          {"paths", std::move(paths)},
          {"components",
           {{"schemas", {{"Error", ErrorSchema()}}},
            {"securitySchemes", {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}}}}}},
          {"security", json::array({{{"bearer", json::array()}}})}};
}

}  // namespace isb::api
