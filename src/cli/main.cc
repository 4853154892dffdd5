// The isb binary: every command of the CLI.
#include <unistd.h>

#include <cstdio>

#include "cli/app.h"
#include "engine/contain.h"

int main(int argc, char** argv) {
  isb::engine::RememberProcessArgs(argc, argv);
  const int code = isb::cli::RunCommandLine(argc, argv);
  // Every command has finished its work, closed what it opened and written its output by now: what is left is the
  // destructors of the binary's static objects (every linked library's), a third of a millisecond of each `isb run`
  // that no one waits for. The output is flushed, and the process goes.
  std::fflush(nullptr);
  ::_exit(code);
}
