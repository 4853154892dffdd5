// Fuzzes the ClientHello parser: any bytes as a client's first flight, and every prefix of them, must give a result
// without reading past the input; a parsed hello's name is always a checked host name.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "egress/client_hello.h"
#include "net/host_name.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  isb::egress::HelloResult r = isb::egress::ParseClientHello(bytes);
  if (r.seen > size) std::abort();
  if (r.kind == isb::egress::HelloResult::kNeedMore && r.seen != size) std::abort();
  if (r.kind == isb::egress::HelloResult::kParsed && !r.hello.sni.empty()) {
    auto again = isb::net::CanonicalHostName(r.hello.sni);
    if (!again.ok() || *again != r.hello.sni) std::abort();
  }
  // A prefix of a parsed hello never parses to something else, and the hello alone parses the same.
  if (r.kind == isb::egress::HelloResult::kParsed) {
    isb::egress::HelloResult alone = isb::egress::ParseClientHello(bytes.first(r.seen));
    if (alone.kind != r.kind || alone.hello.sni != r.hello.sni || alone.hello.alpn != r.hello.alpn) std::abort();
    isb::egress::HelloResult cut = isb::egress::ParseClientHello(bytes.first(r.seen - 1));
    if (cut.kind != isb::egress::HelloResult::kNeedMore) std::abort();
  }
  return 0;
}
