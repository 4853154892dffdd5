// Fuzzes what the judge reads from its endpoint: the HTTP response parser, then the verdict parser on the body (and
// on the raw bytes). Any bytes must give a result; a parsed body keeps within its limit; a closed connection never
// needs more; a verdict's reason is one bounded line of printable text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "egress/client_response.h"
#include "egress/judge_verdict.h"

namespace {

void CheckVerdict(std::string_view body) {
  isb::Result<isb::egress::JudgeVerdict> v = isb::egress::ParseChatVerdict(body);
  if (!v.ok()) {
    if (v.error().message.empty()) std::abort();
    return;
  }
  if (v->reason.size() > isb::egress::kMaxJudgeReason) std::abort();
  for (char c : v->reason) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  constexpr size_t kMax = 4096;
  for (bool eof : {false, true}) {
    isb::egress::ResponseResult r = isb::egress::ParseHttpResponse(bytes, eof, kMax);
    if (eof && r.kind == isb::egress::ResponseResult::kNeedMore) std::abort();
    if (r.kind == isb::egress::ResponseResult::kMalformed && r.reason.empty()) std::abort();
    if (r.kind != isb::egress::ResponseResult::kDone) continue;
    if (r.body.size() > kMax || r.status < 200 || r.status > 599) std::abort();
    CheckVerdict(r.body);
  }
  CheckVerdict(bytes);
  return 0;
}
