// The tool registry: every operation declared once (name, schemas, annotations, handler) and served by every surface.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace isb::api {

// Who is calling. The unix socket is always the superadmin; TCP callers are whoever their token names.
struct Identity {
  std::string subject;     // e.g. "superadmin", "user:alice", "token:dev"
  bool superadmin = false;

  static Identity Superadmin() { return Identity{"superadmin", true}; }
};

// Output produced while a tool runs: stream is "stdout" or "stderr"; or "session" once, before any output, with
// the id of a terminal session as the chunk.
using ProgressFn = std::function<void(std::string_view stream, std::string_view chunk)>;

struct CallContext {
  std::string surface = "cli";  // "rest" | "mcp" | "unix" | "cli"
  std::string request_id;
  std::string org = "default";
  Identity identity;
  ProgressFn progress;            // empty: the caller does not stream
  // With `progress`: true once the streaming caller has gone away. Asked about once a second by long work.
  std::function<bool()> cancelled;
};

struct ToolAnnotations {
  bool read_only = false;    // readOnlyHint
  bool destructive = false;  // destructiveHint (meaningful only when !read_only)
  bool idempotent = false;   // idempotentHint
  bool open_world = false;   // openWorldHint
};

using ToolHandler = std::function<Result<nlohmann::json>(const nlohmann::json& input, const CallContext& ctx)>;

struct Tool {
  std::string name;         // [a-z_]+, unique
  std::string title;
  std::string description;
  nlohmann::json input_schema;   // an object schema
  nlohmann::json output_schema;  // an object schema
  ToolAnnotations annotations;
  bool streams = false;     // the handler reports output through ctx.progress when it is set
  ToolHandler handler;
};

// CodeName (base/result.h) names an error code as REST and MCP publish it: "invalid_argument", "not_found", ...
// The HTTP status a code maps to: 400, 401, 403, 404, 409, 413, 504, 503, 500.
int HttpStatusFor(Code code);

// Told of every call once it has an outcome: the tool (null when none has that name), its input as sent, the
// caller, and the result. The daemon's audit log listens here, so no surface can call a tool unrecorded.
using CallObserver = std::function<void(std::string_view name, const Tool* tool, const nlohmann::json& input,
                                        const CallContext& ctx, const Result<nlohmann::json>& result)>;

// Thread-safe after start-up: Add and SetObserver during wiring, then Find/Call from any thread.
class Registry {
 public:
  // REQUIRES: a unique name, object schemas and a handler. A duplicate is a wiring bug: returns kInternal.
  Status Add(Tool tool);
  // nullptr when no tool has that name.
  const Tool* Find(std::string_view name) const;
  // In name order.
  std::vector<const Tool*> List() const;

  // Validates `input` against the tool's input schema (kInvalidArgument naming the field), then runs the handler.
  // Unknown tool: kNotFound. Exceptions from a handler become kInternal, never escape.
  Result<nlohmann::json> Call(std::string_view name, const nlohmann::json& input, const CallContext& ctx) const;
  Status ValidateInput(const Tool& tool, const nlohmann::json& input) const;
  void SetObserver(CallObserver observer) { observer_ = std::move(observer); }
  // A surface that refuses a call before Call (an unknown tool, input failing the schema) reports it here, so the
  // observer sees refusals too.
  void Refused(std::string_view name, const Tool* tool, const nlohmann::json& input, const CallContext& ctx,
               const Error& error) const {
    if (observer_) observer_(name, tool, input, ctx, Result<nlohmann::json>(error));
  }

  // The tool as GET /api/v1/tools and MCP tools/list describe it (name, title, description, inputSchema,
  // outputSchema, annotations).
  static nlohmann::json Describe(const Tool& tool);

 private:
  Result<nlohmann::json> Run(const Tool* tool, std::string_view name, const nlohmann::json& input,
                             const CallContext& ctx) const;
  CallObserver observer_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Tool>, std::less<>> tools_;
};

}  // namespace isb::api
