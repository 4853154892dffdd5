// docs/tools.md: every tool of a registry in markdown, from its name, description, access and JSON Schemas.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "api/registry.h"

namespace isb::docs {

// The whole page: an index, then per tool who may call it, what it is, its input's fields and its result's.
std::string ToolsMarkdown(const api::Registry& registry);

// One row per field of an object schema (nested objects and arrays of objects as `a.b` and `a[].b`): field, type,
// required, description, limits. Exposed for the tests.
std::string FieldsTable(const nlohmann::json& object_schema);

// Who may call `tool`, in words: the role in the call's org (or the platform), the token scope that covers it.
std::string WhoMayCall(const api::Tool& tool);

}  // namespace isb::docs
