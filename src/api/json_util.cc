// JSON parsing with depth and size limits, UTF-8 validation and base64, all total functions over untrusted bytes.
#include "api/json_util.h"

#include <array>

#include "base/utf8.h"

namespace isb::api {
namespace {

// Rejects nesting deeper than max_depth, and more than kMaxJsonValues values, with a scan that tracks strings: the
// parser never recurses too far, and a body of 8 MiB cannot become millions of values (an empty array costs the
// parser tens of bytes for every two bytes of input).
Status CheckDepth(std::string_view text, int max_depth) {
  int depth = 0;
  size_t values = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if ((c == '[' || c == '{' || c == ',') && ++values > kMaxJsonValues) {
      return Error::Of(Code::kInvalidArgument, "JSON has more than " + std::to_string(kMaxJsonValues) +
                                                   " values (at byte " + std::to_string(i) + ")");
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return Error::Of(Code::kInvalidArgument, "JSON nested deeper than " + std::to_string(max_depth) +
                                                     " levels at byte " + std::to_string(i));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return {};
}

}  // namespace

Result<json> ParseJson(std::string_view text, int max_depth) {
  ISB_TRY(CheckDepth(text, max_depth));
  // nlohmann reports the position only through its exception; it is caught here and goes no further.
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return Error::Of(Code::kInvalidArgument, "body is not valid JSON (byte " + std::to_string(e.byte) + ")");
  } catch (const std::exception& e) {
    return Error::Of(Code::kInvalidArgument, std::string("body is not valid JSON: ") + e.what());
  }
}

std::string Dump(const json& value, int indent) {
  return value.dump(indent, ' ', false, json::error_handler_t::replace);
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string SanitizeUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

size_t Utf8Length(std::string_view s) {
  size_t count = 0;
  for (size_t i = 0; i < s.size(); ++count) {
    size_t n = Utf8SequenceLength(s, i);
    i += n == 0 ? 1 : n;
  }
  return count;
}

}  // namespace isb::api
