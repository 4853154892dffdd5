// Registry: lookup, input validation before every handler, and the one description all surfaces publish.
#include "api/registry.h"

#include "api/json_schema.h"

namespace isb::api {

using json = nlohmann::json;

int HttpStatusFor(Code code) {
  switch (code) {
    case Code::kInvalidArgument: return 400;
    case Code::kUnauthenticated: return 401;
    case Code::kForbidden: return 403;
    case Code::kNotFound: return 404;
    case Code::kConflict: return 409;
    case Code::kTooLarge: return 413;
    case Code::kTimeout: return 504;
    case Code::kUnavailable: return 503;
    case Code::kInternal: break;
  }
  return 500;
}

Status Registry::Add(Tool tool) {
  if (tool.name.empty() || !tool.handler || !tool.input_schema.is_object() || !tool.output_schema.is_object()) {
    return Error::Of(Code::kInternal, "tool '" + tool.name + "' needs a name, a handler and object schemas");
  }
  std::lock_guard lock(mu_);
  if (tools_.count(tool.name) != 0) return Error::Of(Code::kInternal, "tool '" + tool.name + "' registered twice");
  std::string name = tool.name;
  tools_.emplace(std::move(name), std::make_unique<Tool>(std::move(tool)));
  return {};
}

const Tool* Registry::Find(std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = tools_.find(name);
  return it == tools_.end() ? nullptr : it->second.get();
}

std::vector<const Tool*> Registry::List() const {
  std::lock_guard lock(mu_);
  std::vector<const Tool*> out;
  for (const auto& [name, tool] : tools_) out.push_back(tool.get());
  return out;
}

Status Registry::ValidateInput(const Tool& tool, const json& input) const {
  if (!input.is_object()) {
    return Error::Of(Code::kInvalidArgument,
                     std::string("input: expected object, got ") + JsonTypeName(input));
  }
  return Validate(tool.input_schema, input);
}

Result<json> Registry::Call(std::string_view name, const json& input, const CallContext& ctx) const {
  const Tool* tool = Find(name);
  Result<json> result = Run(tool, name, input, ctx);
  if (observer_) observer_(name, tool, input, ctx, result);
  return result;
}

Result<json> Registry::Run(const Tool* tool, std::string_view name, const json& input, const CallContext& ctx) const {
  if (tool == nullptr) return Error::Of(Code::kNotFound, "unknown tool '" + std::string(name) + "'");
  ISB_TRY(ValidateInput(*tool, input));
  try {
    return tool->handler(input, ctx);
  } catch (const std::exception& e) {
    return Error::Of(Code::kInternal, "tool " + tool->name + " failed: " + e.what());
  }
}

json Registry::Describe(const Tool& tool) {
  const ToolAnnotations& a = tool.annotations;
  json annotations = {{"title", tool.title},
                      {"readOnlyHint", a.read_only},
                      {"destructiveHint", !a.read_only && a.destructive},
                      {"idempotentHint", a.idempotent},
                      {"openWorldHint", a.open_world}};
  return {{"name", tool.name},
          {"title", tool.title},
          {"description", tool.description},
          {"inputSchema", tool.input_schema},
          {"outputSchema", tool.output_schema},
          {"annotations", std::move(annotations)}};
}

}  // namespace isb::api
