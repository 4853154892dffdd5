// JSON and text helpers for the surfaces: a depth-limited parser, UTF-8 checks and base64.
// (Candidates for src/base once another subsystem needs them.)
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/base64.h"
#include "base/result.h"

namespace isb::api {

using json = nlohmann::json;

// Nesting deeper than this is refused before parsing, so no recursive walk over input can exhaust the stack.
inline constexpr int kMaxJsonDepth = 64;

// Arrays, objects and their elements past this many are refused before parsing (what any tool takes is far less:
// an egress list of kMaxEgressEntries hosts is some tens of thousands).
inline constexpr size_t kMaxJsonValues = size_t{1} << 18;

// Parses untrusted text. Errors (Code::kInvalidArgument) say where the text stopped being JSON, or which limit it
// is over.
Result<json> ParseJson(std::string_view text, int max_depth = kMaxJsonDepth);

// Serialises without throwing: invalid UTF-8 inside strings becomes U+FFFD.
std::string Dump(const json& value, int indent = -1);

bool IsValidUtf8(std::string_view s);
// Replaces each invalid UTF-8 sequence with U+FFFD.
std::string SanitizeUtf8(std::string_view s);
// Number of code points in valid UTF-8 (each invalid byte counts as one).
size_t Utf8Length(std::string_view s);

}  // namespace isb::api
