// Fuzzes an age file as `isb secret import` receives it: the header parser, the store's binding stanza, then the
// whole decryption with a fixed test identity (the seeds in fuzz/corpus/age_header are real age files encrypted to it,
// so mutations reach the stanzas, the MAC and the payload).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "secrets/age.h"
#include "secrets/secret_file_binding.h"

using namespace isb::secrets;

namespace {

// A key made for this target only; it protects nothing. Its recipient:
// age1h8sdk04hesw3rwfd5clat98ff2ayvanc8rg2x7x73rmcglyy7d0qmjaxr3
constexpr std::string_view kFuzzIdentity = "AGE-SECRET-KEY-1AUWM0W0W8NNT04C7FJ8GSTHSQDLTEJ0SG7UJJNMZR79M4P88UWEQ0TPY5X";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const AgeIdentity identity = *AgeIdentity::Parse(kFuzzIdentity);
  std::string_view file(reinterpret_cast<const char*>(data), size);
  auto header = ParseAgeHeader(file);
  if (header.ok()) {
    // What parses is exactly what its stanzas format back to, and the MAC line and payload follow it.
    if (FormatAgeHeaderForMac(header->stanzas) != file.substr(0, header->mac_input_size)) abort();
    if (header->mac.size() != 32 || header->payload_offset > size || header->stanzas.empty()) abort();
    for (const AgeStanza& stanza : header->stanzas) {
      if (stanza.args.empty()) abort();
    }
  } else if (header.error().code != isb::Code::kInvalidArgument) {
    abort();
  }
  // The binding is read from any header that parses; one that does not parse has none to read.
  auto binding = BindingOf(file);
  if (binding.ok() && !header.ok()) abort();
  if (!binding.ok() && binding.error().code != isb::Code::kInvalidArgument) abort();
  if (binding.ok() && *binding && (binding->value().org.empty() || binding->value().name.empty())) abort();
  auto value = AgeDecrypt(file, identity);
  if (value.ok() && !header.ok()) abort();
  if (!value.ok() && value.error().code != isb::Code::kInvalidArgument && value.error().code != isb::Code::kForbidden) {
    abort();
  }
  return 0;
}
