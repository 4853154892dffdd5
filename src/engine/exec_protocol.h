// The control protocol between the daemon and a service sandbox's init (SOCK_SEQPACKET, one message each).
#pragma once

#include <cstddef>
#include <cstdint>

namespace isb::engine {

inline constexpr uint32_t kExecMagic = 0x31627369;     // "isb1": the command's stdio rides along
inline constexpr uint32_t kExecMagicTty = 0x32627369;  // "isb2": init gives the command a terminal
inline constexpr size_t kExecMaxMessage = 256 * 1024;

// Request: this header, then `strings_len` bytes: argc NUL-terminated argv strings, envc NUL-terminated "K=V"
// strings, then the NUL-terminated working directory. Three descriptors ride along (SCM_RIGHTS): the command's
// stdin, stdout and stderr.
//
// A terminal request (kExecMagicTty) carries no descriptors and has an ExecTtySize between the header and the
// strings. Init allocates a pty in the sandbox's own devpts, makes its slave the command's controlling terminal and
// stdin/stdout/stderr, and passes the master back with the kStarted event (SCM_RIGHTS).
struct ExecRequestHeader {
  uint32_t magic;
  uint32_t uid;
  uint32_t gid;
  uint32_t argc;
  uint32_t envc;
  uint32_t strings_len;
};

struct ExecTtySize {
  uint16_t rows;
  uint16_t cols;
};

enum class ExecEventKind : uint32_t {
  kStarted = 1,  // terminal sessions only: value: the command's pid inside the sandbox; the pty master rides along
  kExited = 2,   // value: wait status
  kFailed = 3,   // value: errno; detail: the failing step (contain.h Step)
};

struct ExecEvent {
  ExecEventKind kind;
  int32_t value;
  int32_t detail;
};

}  // namespace isb::engine
