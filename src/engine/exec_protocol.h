// The control protocol between the daemon and a service sandbox's init (SOCK_SEQPACKET, one message each): the
// messages, and how each side reads what the other sent. The daemon writes requests (EncodeExecRequest,
// exec_client.h) and reads events (DecodeExecEvent); init reads requests (DecodeExecRequest) and writes events.
// The readers allocate nothing and have internal linkage (static): each file that calls them has its own copy, built
// with its own flags, so init's (init.cc, where no allocator and no sanitizer runtime may run) is never exchanged by
// the linker for an instrumented one from a test or the fuzz target (fuzz/exec_message_fuzz.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

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

// argv or env entries a request may hold; init's arrays hold one more (the NULL that ends them).
inline constexpr size_t kExecMaxStrings = 4095;

// Splits `count` NUL-terminated strings from *p (bounded by `end`) into out[0..count) and sets out[count] to NULL,
// leaving *p after the last. False when one has no NUL before `end` or `count` strings and the NULL exceed `cap`.
static inline bool SplitExecStrings(char** p, const char* end, uint32_t count, char** out, size_t cap) {
  if (count >= cap) return false;  // never count + 1: a count of 2^32 - 1 would wrap it to 0
  for (uint32_t i = 0; i < count; ++i) {
    char* s = *p;
    void* nul = std::memchr(s, '\0', static_cast<size_t>(end - s));
    if (nul == nullptr) return false;
    out[i] = s;
    *p = static_cast<char*>(nul) + 1;
  }
  out[count] = nullptr;
  return true;
}

// A request as init takes it. argv and envp point into the message, which keeps its bytes.
struct ExecRequestParts {
  ExecRequestHeader header;
  bool tty;
  ExecTtySize size;  // tty only
  const char* workdir;
};

// Reads the `n` bytes of a request that came with `nfds` descriptors: a known magic with its descriptors (three for
// stdio, none for a terminal), at least one argument, strings_len exactly the rest of the message, uid and gid
// below 65536, a terminal of at least one row and column, argc and envc strings that fit `cap` (each array is
// `cap` long) and then the working directory, ending the message. argv and envp end with NULL. False for anything
// else; `out` and the arrays are then unspecified.
static inline bool DecodeExecRequest(char* message, size_t n, int nfds, ExecRequestParts* out, char** argv, char** envp,
                                     size_t cap) {
  ExecRequestHeader& h = out->header;
  if (n < sizeof h) return false;
  std::memcpy(&h, message, sizeof h);
  out->tty = h.magic == kExecMagicTty;
  const size_t extra = out->tty ? sizeof(ExecTtySize) : 0;
  if (!((h.magic == kExecMagic && nfds == 3) || (out->tty && nfds == 0))) return false;
  if (h.argc == 0 || n < sizeof h + extra || sizeof h + extra + h.strings_len != n) return false;
  if (h.uid >= 65536 || h.gid >= 65536) return false;
  out->size = ExecTtySize{0, 0};
  if (out->tty) {
    std::memcpy(&out->size, message + sizeof h, sizeof out->size);
    if (out->size.rows == 0 || out->size.cols == 0) return false;
  }
  char* p = message + sizeof h + extra;
  const char* end = message + n;
  char* workdir[2] = {nullptr, nullptr};
  if (!SplitExecStrings(&p, end, h.argc, argv, cap) || !SplitExecStrings(&p, end, h.envc, envp, cap) ||
      !SplitExecStrings(&p, end, 1, workdir, 2) || p != end)
    return false;
  out->workdir = workdir[0];
  return true;
}

// Reads an event of `n` bytes: exactly one ExecEvent of a known kind. False for anything else.
static inline bool DecodeExecEvent(const void* data, size_t n, ExecEvent* out) {
  if (n != sizeof *out) return false;
  std::memcpy(out, data, sizeof *out);
  return out->kind == ExecEventKind::kStarted || out->kind == ExecEventKind::kExited ||
         out->kind == ExecEventKind::kFailed;
}

}  // namespace isb::engine
