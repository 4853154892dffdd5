// Fuzzes the exec control messages: a request as a sandbox's init reads it and an event as the daemon reads it.
// Input: a first byte whose low bit says whether three descriptors came with the request, then the message (the
// same bytes are read as an event too).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/exec_client.h"
#include "engine/exec_protocol.h"

using namespace isb::engine;

namespace {
char* g_argv[kExecMaxStrings + 1];
char* g_envp[kExecMaxStrings + 1];
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size - 1 > kExecMaxMessage) return 0;
  ExecEvent event{};
  if (DecodeExecEvent(data + 1, size - 1, &event) && static_cast<uint32_t>(event.kind) - 1 > 2) abort();
  const int nfds = (data[0] & 1) != 0 ? 3 : 0;
  std::string message(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string original = message;
  ExecRequestParts parts{};
  if (!DecodeExecRequest(message.data(), message.size(), nfds, &parts, g_argv, g_envp, kExecMaxStrings + 1)) return 0;
  // What was read lies in the message, and is what the daemon would send for it: writing it again gives the same
  // bytes (an empty working directory aside, which the daemon writes as "/").
  const char* begin = message.data();
  const char* end = begin + message.size();
  ExecSpec spec;
  for (char** a = g_argv; *a != nullptr; ++a) {
    if (*a < begin || *a >= end) abort();
    spec.argv.emplace_back(*a);
  }
  for (char** e = g_envp; *e != nullptr; ++e) {
    if (*e < begin || *e >= end) abort();
    spec.env.emplace_back(*e);
  }
  if (spec.argv.size() != parts.header.argc || spec.env.size() != parts.header.envc || parts.workdir < begin ||
      parts.workdir >= end)
    abort();
  spec.workdir = parts.workdir;
  spec.uid = parts.header.uid;
  spec.gid = parts.header.gid;
  spec.tty = parts.tty;
  spec.rows = parts.size.rows;
  spec.cols = parts.size.cols;
  auto again = EncodeExecRequest(spec);
  if (again.ok() && !spec.workdir.empty() && *again != original) abort();
  return 0;
}
