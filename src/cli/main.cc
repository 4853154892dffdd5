// The isb binary: every command of the CLI.
#include "cli/app.h"
#include "engine/contain.h"

int main(int argc, char** argv) {
  isb::engine::RememberProcessArgs(argc, argv);
  return isb::cli::RunCommandLine(argc, argv);
}
