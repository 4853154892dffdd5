// Fuzzes the substitution engine: needles and replacements from the input, a stream with the needles inserted at the
// input's marks, cut at points the input picks; the streamed output must equal a plain leftmost-longest scan of the
// whole, and no more than the longest needle less one byte may be kept back between pieces.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "secrets/stream_replace.h"

namespace {

using isb::secrets::Replacement;

// The next `n` bytes of the input (fewer at its end).
std::string_view Next(std::string_view& in, size_t n) {
  std::string_view part = in.substr(0, n);
  in.remove_prefix(part.size());
  return part;
}

uint8_t Byte(std::string_view& in) { return in.empty() ? 0 : static_cast<uint8_t>(Next(in, 1)[0]); }

std::string Reference(const std::vector<Replacement>& pairs, std::string_view text) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    const Replacement* best = nullptr;
    for (const Replacement& p : pairs)
      if (!p.needle.empty() && text.substr(at).starts_with(p.needle) &&
          (!best || p.needle.size() > best->needle.size()))
        best = &p;
    if (best) {
      out += best->replacement;
      at += best->needle.size();
    } else {
      out += text[at++];
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t count = Byte(in) % 4 + 1;
  std::vector<Replacement> pairs, unique;
  for (size_t i = 0; i < count; ++i) {
    std::string needle(Next(in, Byte(in) % 12));
    std::string replacement(Next(in, Byte(in) % 8));
    pairs.push_back({needle, replacement});
    bool seen = false;
    for (const Replacement& u : unique) seen = seen || u.needle == needle;
    if (!seen) unique.push_back(pairs.back());
  }
  // The rest is the stream: a 0xFF byte followed by k stands for needle k.
  std::string text;
  while (!in.empty()) {
    const uint8_t b = Byte(in);
    if (b == 0xFF && !in.empty()) {
      text += pairs[Byte(in) % count].needle;
    } else {
      text += static_cast<char>(b);
    }
  }
  auto set = std::make_shared<const isb::secrets::ReplaceSet>(pairs);
  isb::secrets::StreamReplacer stream(set);
  std::string out;
  // Cuts from the text's own bytes, so each input always cuts the same way.
  uint32_t cut = 2166136261u;
  for (size_t at = 0; at < text.size();) {
    cut = (cut ^ static_cast<uint8_t>(text[at])) * 16777619u;
    const size_t piece = cut % 17 + 1;
    stream.Take(std::string_view(text).substr(at, piece), out);
    if (set->longest() > 0 && stream.kept() >= set->longest()) std::abort();
    at += piece;
  }
  stream.Finish(out);
  if (out != Reference(unique, text)) std::abort();
  if (set->ReplaceAll(text) != out) std::abort();
  return 0;
}
