// The spellings of a secret's placeholder and value on the wire: percent-encoded, JSON-escaped and base64 forms,
// the pairs a stream replacer swaps or scrubs with, and the swaps in a request target and in header values (where a
// placeholder may come with any of its bytes percent-encoded, and inside `Authorization: Basic`).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "secrets/stream_replace.h"

namespace isb::secrets {

enum class HexCase { kUpper, kLower };

// Every byte outside RFC 3986's unreserved set (ALPHA DIGIT - . _ ~) as %XX.
std::string PercentEncode(std::string_view text, HexCase hex = HexCase::kUpper);
// Every byte as %XX.
std::string PercentEncodeAll(std::string_view text, HexCase hex);

// `text` as the content of a JSON string, the way most encoders write it: \" \\, \b \f \n \r \t, other control
// bytes as \u00xx, everything else as it is.
std::string JsonEscape(std::string_view text);
// The spellings a server's JSON encoder may give `text` inside a string: JsonEscape's, and its variants with \/,
// upper-case hex, non-ASCII as \uXXXX (UTF-16 surrogates beyond the BMP) and < > & as \u003c \u003e \u0026 (Go's
// HTML-safe escaping), each once.
std::vector<std::string> JsonForms(std::string_view text);

// The runs of base64 that `text` becomes inside any longer base64 text, whatever its offset there (one for each of
// the three alignments, standard and URL alphabets), each once; runs shorter than 8 characters are left out (they
// would be found by chance).
std::vector<std::string> Base64Runs(std::string_view text);

// How a request body carries a swapped value: as it is, JSON-escaped (application/json and +json), or
// percent-encoded (application/x-www-form-urlencoded).
enum class BodyKind { kRaw, kJson, kForm };
BodyKind BodyKindOf(const std::string* content_type);

// Request body: the placeholder (raw, and with every byte percent-encoded in either case) to the value, in the
// body's own syntax.
std::vector<Replacement> SwapPairs(std::string_view placeholder, std::string_view value, BodyKind kind);
// Response: the value (raw; percent-encoded in either case, with '+' for a space too; its JSON forms) to the
// placeholder; and the value's base64 runs (Base64Runs) to the placeholder's at the same offset. That last is not
// exact: the base64 characters that straddle the value's edges stay, so the text may no longer decode cleanly, but
// no more than four bits of the value's first and last bytes are left in it.
std::vector<Replacement> ScrubPairs(std::string_view placeholder, std::string_view value);
// The forms that count as the placeholder where it may not go: raw, fully percent-encoded in either case, and its
// base64 runs.
std::vector<std::string> PlaceholderForms(std::string_view placeholder);

// Where `placeholder` occurs in `text`, each of its bytes either as itself or as %XX (any case): the first
// occurrence at or after `from`.
struct FlexibleHit {
  size_t start = std::string_view::npos;  // npos: none
  size_t length = 0;
  bool encoded = false;  // some byte of it was percent-encoded
};
FlexibleHit FindFlexible(std::string_view text, std::string_view placeholder, size_t from = 0);

// Swaps every occurrence of `placeholder` (FindFlexible) in a request target for the value percent-encoded;
// returns how many.
size_t SwapInTarget(std::string& target, std::string_view placeholder, std::string_view value);
// Swaps every occurrence in a header value: the value as it is where the placeholder came raw and the value is a
// valid field value, else percent-encoded; `Authorization`/`Proxy-Authorization` Basic credentials are decoded,
// swapped and encoded again. Returns how many.
size_t SwapInHeader(std::string_view name, std::string& header_value, std::string_view placeholder,
                    std::string_view value);
// Whether a header value carries the placeholder in any form (FindFlexible, base64 runs, decoded Basic
// credentials).
bool HeaderCarries(std::string_view name, std::string_view header_value, std::string_view placeholder);

}  // namespace isb::secrets
