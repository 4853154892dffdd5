// Fuzzes the DNS responder's parser and builders: any packet gets a response or a drop without reading past it,
// a response always fits a 512-byte UDP answer, echoes the query's id, and is itself never answered.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "net/dns_message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> packet(data, size);
  auto listed = [](std::string_view name) { return name.size() % 2 == 0; };  // both branches, either way
  isb::net::DnsParse parsed = isb::net::ParseDnsQuery(packet);
  auto response = isb::net::Respond(packet, listed, {192, 0, 2, 1});
  if (parsed.kind == isb::net::DnsParse::kDrop) {
    if (response) std::abort();
    return 0;
  }
  if (!response || response->size() < 12 || response->size() > 512) std::abort();
  if ((*response)[0] != data[0] || (*response)[1] != data[1] || ((*response)[2] & 0x80) == 0) std::abort();
  if (isb::net::ParseDnsQuery(*response).kind != isb::net::DnsParse::kDrop) std::abort();
  if (parsed.kind == isb::net::DnsParse::kQuery && parsed.query.question.size() > 255 + 4) std::abort();
  return 0;
}
