// The isb binary: every command of the CLI.
#include <unistd.h>

#include <cstdio>

#if defined(__SANITIZE_ADDRESS__)
#define ISB_LEAK_CHECK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ISB_LEAK_CHECK 1
#endif
#endif
#ifdef ISB_LEAK_CHECK
#include <sanitizer/lsan_interface.h>
#endif

#include "cli/app.h"
#include "engine/contain.h"

int main(int argc, char** argv) {
  isb::engine::RememberProcessArgs(argc, argv);
  const int code = isb::cli::RunCommandLine(argc, argv);
  // Every command has finished its work, closed what it opened and written its output by now: what is left is the
  // destructors of the binary's static objects (every linked library's), a third of a millisecond of each `isb run`
  // that no one waits for. The output is flushed, and the process goes.
  std::fflush(nullptr);
#ifdef ISB_LEAK_CHECK
  // The sanitizer build's leak check runs at exit, which _exit skips: run here, it fails the run as before (23).
  __lsan_do_leak_check();
#endif
  ::_exit(code);
}
