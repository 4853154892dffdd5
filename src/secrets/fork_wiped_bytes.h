// Bytes a forked child never gets: kept in pages marked MADV_WIPEONFORK (a child sees them zeroed) and
// MADV_DONTDUMP, for the daemon's age key between reading it from the environment and the spawner's fork.
//
//   ForkWipedBytes key = ForkWipedBytes::TakeEnv("ISB_AGE_KEY");   // the variable wiped and unset
//   spawner.Start(...);                                             // the spawner's copy of the pages is zeroes
//   std::string text = key.Take();                                  // the pages wiped and unmapped
#pragma once

#include <cstddef>
#include <string>

#include "base/result.h"

namespace isb::secrets {

class ForkWipedBytes {
 public:
  ForkWipedBytes() = default;
  ~ForkWipedBytes();
  ForkWipedBytes(ForkWipedBytes&& other) noexcept;
  ForkWipedBytes& operator=(ForkWipedBytes&& other) noexcept;
  ForkWipedBytes(const ForkWipedBytes&) = delete;
  ForkWipedBytes& operator=(const ForkWipedBytes&) = delete;

  // The value of environment variable `name`, moved into such pages: where it lay is overwritten and the variable
  // unset (a process forked later has it in neither its memory nor /proc/PID/environ); every entry of the name is
  // wiped, the first one's value taken (as getenv). Empty when it is not set.
  // Errors: the pages cannot be made (mmap, madvise: a kernel before 4.14 has no MADV_WIPEONFORK).
  static Result<ForkWipedBytes> TakeEnv(const char* name);

  bool empty() const { return size_ == 0; }
  // The bytes as a string (in ordinary memory: call it after the fork), the pages wiped and released.
  std::string Take();

 private:
  void Release();
  char* data_ = nullptr;
  size_t size_ = 0, mapped_ = 0;
};

}  // namespace isb::secrets
