// The control protocol between the daemon and a service sandbox's init (SOCK_SEQPACKET, one message each).
#pragma once

#include <cstddef>
#include <cstdint>

namespace isb::engine {

inline constexpr uint32_t kExecMagic = 0x31627369;  // "isb1"
inline constexpr size_t kExecMaxMessage = 256 * 1024;

// Request: this header, then `strings_len` bytes: argc NUL-terminated argv strings, envc NUL-terminated "K=V"
// strings, then the NUL-terminated working directory. Three descriptors ride along (SCM_RIGHTS): the command's
// stdin, stdout and stderr.
struct ExecRequestHeader {
  uint32_t magic;
  uint32_t uid;
  uint32_t gid;
  uint32_t argc;
  uint32_t envc;
  uint32_t strings_len;
};

enum class ExecEventKind : uint32_t {
  kStarted = 1,  // value: the command's pid inside the sandbox
  kExited = 2,   // value: wait status
  kFailed = 3,   // value: errno; detail: the failing step (contain.h Step)
};

struct ExecEvent {
  ExecEventKind kind;
  int32_t value;
  int32_t detail;
};

}  // namespace isb::engine
