// RunIsb: a command line through CLI11 and the commands' callbacks, as main() runs it.
#include "cli/run_isb.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "base/fd.h"

#include "cli/sandbox_cmds.h"
#include "cli/sandbox_cmds_internal.h"

namespace isb::cli::testing {

CmdRun RunIsb(std::vector<std::string> args, const std::vector<AddCommands>& more, bool keep_stdin) {
  CLI::App app{"isb"};
  app.require_subcommand(1);
  CmdRun run;
  int exit_code = 0;
  AddSandboxCommands(app, &exit_code);
  for (const AddCommands& add : more) add(app, &exit_code);
  args.insert(args.begin(), "isb");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  // The commands read a piped stdin; the test runner's is not theirs to read.
  Fd saved_stdin(::dup(STDIN_FILENO));
  Fd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!keep_stdin) ::dup2(null.get(), STDIN_FILENO);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
    run.exit_code = exit_code;
  } catch (const CLI::ParseError& e) {
    run.exit_code = app.exit(e) == 0 ? 0 : kExitUsage;
  }
  std::fflush(stdout);
  run.out = ::testing::internal::GetCapturedStdout();
  run.err = ::testing::internal::GetCapturedStderr();
  ::dup2(saved_stdin.get(), STDIN_FILENO);
  return run;
}

std::string BodyOf(const SeenRequest& r) { return r.body; }

std::string PathOf(const SeenRequest& r) {
  size_t sp = r.head.find(' ');
  return r.head.substr(sp + 1, r.head.find(' ', sp + 1) - sp - 1);
}

}  // namespace isb::cli::testing
