// The REST surface: POST /api/v1/tools/<tool>, GET /api/v1/tools, GET /api/v1/openapi.json, GET /healthz.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/http_message.h"
#include "api/registry.h"

namespace isb::api {

// Routes:
//   POST /api/v1/tools/<tool>  body: the tool's input (JSON object; empty body = {}) -> 200 {"result": ...}
//       ?stream=1 or "Accept: text/event-stream" on a streaming tool: text/event-stream with events
//       "stdout"/"stderr" (data {"data": "..."}), then "result" (data {"result": ...}) or "error" (data
//       {"error": CODE, "message": ...}); a terminal exec first sends "session" (data {"session": ID}).
//   GET /api/v1/tools          -> {"tools": [Registry::Describe...]}
//   GET /api/v1/openapi.json   -> OpenAPI 3.1 generated from the registry
//   GET /healthz               -> {"ok": true}
// Errors: {"error": CODE, "message": ...}, CODE and status from CodeName/HttpStatusFor (bad JSON and invalid input
// 400, unknown tool or path 404, wrong method 405, body too large 413).
// Thread-safe; the registry must outlive it and any streaming response it returned.
class RestApi {
 public:
  RestApi(const Registry& registry, std::string version, size_t max_body_bytes = 8 << 20);

  // The caller (the HTTP server) has authenticated `identity` already.
  Response Handle(const Request& req, const Identity& identity) const;
  // Serves /api/v1/auth/ (signing in: no credential needed). During wiring only.
  void SetAuthRoutes(std::function<Response(const Request&)> routes) { auth_routes_ = std::move(routes); }
  // The tools `identity` may see (a tool the operator's --deny-tools hides is absent, as from tools/list).
  nlohmann::json OpenApi(const Identity& identity) const;

 private:
  Response CallTool(const Request& req, std::string_view name, const Identity& identity) const;
  std::string RequestId(const Request& req) const;
  CallContext Context(const Request& req, const Identity& identity) const;

  const Registry& registry_;
  std::function<Response(const Request&)> auth_routes_;
  std::string version_;
  size_t max_body_bytes_;
  mutable std::atomic<uint64_t> next_id_{1};
};

// {"error": CodeName(code), "message": ...} with HttpStatusFor(code).
Response ErrorResponse(const Error& error);

// 405 {"error":"method_not_allowed"} with Allow: `allow`.
Response MethodNotAllowed(std::string allow);

// 404 for a path nothing serves, pointing at the OpenAPI document.
Response NoRouteResponse(std::string_view path);

}  // namespace isb::api
