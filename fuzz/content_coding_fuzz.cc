// Fuzzes the content-coding decoders on arbitrary bytes, through RecodedBody as the proxy runs them (in pieces, under
// a small expansion limit): never a crash, and a body that is not refused comes out as a stream in the same coding
// that decodes to what the input decodes to.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "secrets/content_coding.h"
#include "secrets/stream_replace.h"

namespace {

using isb::secrets::Coding;

// `bytes` decoded at once, or false when the decoder refuses them or they are not a whole stream.
bool DecodeWhole(Coding coding, std::string_view bytes, std::string& out) {
  auto decoder = isb::secrets::Decoder::For(coding);
  decoder->Give(bytes);
  for (;;) {
    isb::Result<bool> more = decoder->Pull(out, 4096);
    if (!more.ok()) return false;
    if (out.size() > (4u << 20)) return false;
    if (!*more) break;
  }
  return decoder->ended();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const Coding coding = static_cast<Coding>(data[0] % 4);
  const size_t piece = data[1] % 64 + 1;
  std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);
  auto identity = std::make_shared<const isb::secrets::ReplaceSet>(std::vector<isb::secrets::Replacement>{});
  isb::secrets::RecodedBody body(coding, std::make_unique<isb::secrets::StreamReplacer>(identity), {1 << 20, 64});
  std::string out;
  for (size_t at = 0; at < bytes.size() && body.Refusal().empty(); at += piece) body.Take(bytes.substr(at, piece), out);
  if (body.Refusal().empty()) body.Finish(out);
  if (!body.Refusal().empty()) return 0;
  if (bytes.empty()) {
    if (!out.empty()) std::abort();
    return 0;
  }
  std::string expected, again;
  if (!DecodeWhole(coding, bytes, expected)) std::abort();
  if (!DecodeWhole(coding, out, again) || again != expected) std::abort();
  return 0;
}
