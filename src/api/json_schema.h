// A validator for the subset of JSON Schema the tools declare; it sees untrusted input and never throws.
#pragma once

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace isb::api {

// Keywords honoured: type (a name or an array of names; "integer" accepts integral numbers), properties, required,
// additionalProperties (false or a schema), items, enum, const, minimum, maximum, minLength, maxLength (code
// points), minItems, maxItems, maxProperties. Annotations (title, description, default, examples) are ignored;
// unknown keywords are ignored. Schemas nested deeper than 64 levels fail rather than recurse further.
//
// On failure the error (Code::kInvalidArgument) names the field by its path, e.g. "argv: expected array, got
// string", "env.HOME: expected string, got number", "argv[2]: expected string, got null", "cpus: must be >=
// 0.001", "unknown field 'foo'", "spec: unknown field 'foo'".
Status Validate(const nlohmann::json& schema, const nlohmann::json& value);

// "string", "integer", "number", "object", ... as the error messages name them.
const char* JsonTypeName(const nlohmann::json& value);

}  // namespace isb::api
