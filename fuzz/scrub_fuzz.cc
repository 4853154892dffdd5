// Fuzzes the scrubber: a value from the input, a stream holding it in its wire forms (raw, percent-encoded, JSON
// forms, base64 runs) at the input's marks, cut at points the input picks. The streamed result must equal the one-shot
// one, and when the value shares no byte with what replaces it, the value is nowhere in what comes out.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "secrets/secret_forms.h"
#include "secrets/stream_replace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t value_size = static_cast<uint8_t>(in[0]) % 24 + 1;
  in.remove_prefix(1);
  const std::string value(in.substr(0, value_size));
  in.remove_prefix(value.size());
  const std::string placeholder = "isb_placeholder_Q7mK2xV9";
  const std::vector<isb::secrets::Replacement> pairs = isb::secrets::ScrubPairs(placeholder, value);
  // A 0xFF byte followed by k stands for the value's form k.
  std::string text;
  for (size_t i = 0; i < in.size(); ++i) {
    if (static_cast<uint8_t>(in[i]) == 0xFF && i + 1 < in.size()) {
      text += pairs[static_cast<uint8_t>(in[++i]) % pairs.size()].needle;
    } else {
      text += in[i];
    }
  }
  auto set = std::make_shared<const isb::secrets::ReplaceSet>(pairs);
  isb::secrets::StreamReplacer stream(set);
  std::string out;
  uint32_t cut = 2166136261u;
  for (size_t at = 0; at < text.size();) {
    cut = (cut ^ static_cast<uint8_t>(text[at])) * 16777619u;
    const size_t piece = cut % 23 + 1;
    stream.Take(std::string_view(text).substr(at, piece), out);
    if (stream.kept() >= set->longest()) std::abort();
    at += piece;
  }
  stream.Finish(out);
  if (out != set->ReplaceAll(text)) std::abort();
  // What replaces a form (the placeholder, or its base64 run) could spell the value with what surrounds it only if
  // they share a byte.
  bool disjoint = true;
  for (const isb::secrets::Replacement& pair : pairs)
    disjoint = disjoint && value.find_first_of(pair.replacement) == std::string::npos;
  if (disjoint && out.find(value) != std::string::npos) std::abort();
  return 0;
}
