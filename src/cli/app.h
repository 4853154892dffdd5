// The isb command line as one CLI11 app: every command and its flags, for main.cc to parse and isb_docs to describe.
#pragma once

#include <string_view>
#include <vector>

// Declared, not included: main.cc includes this header, and each file that includes CLI11 constructs its own copies
// of CLI11's validators before main.
namespace CLI {
class App;
}

namespace isb::cli {

// The app's description, as `isb --help` prints it.
inline constexpr const char* kAppDescription =
    "isb: run other people's and agents' code in sandboxes on your own Linux machines";

// The commands one adder puts on the app, by their names.
struct CommandGroup {
  void (*add)(CLI::App& app, int* exit_code);
  std::vector<std::string_view> names;
};
// Every adder, in the order `isb --help` lists their commands.
const std::vector<CommandGroup>& CommandGroups();

// Adds every command to `app` (made with kAppDescription). A command that runs sets *exit_code. With `command`,
// the name of one of them (a process's first argument), only its group is added: a process runs one command, and
// building the other commands' flags and help took 2 ms of each `isb run` and `isb exec`. Anything else (an
// option, a misspelt command, nothing) gets every command, for help and errors that name them all.
void BuildApp(CLI::App& app, int* exit_code, std::string_view command = {});

// The isb binary's main: parses argv with the app built for argv[1]'s command, and on a usage error (not help)
// with the whole app, which accepts what it always accepted and names, in its refusal, the other commands that
// take a flag; then runs the command. Returns the process's exit code (125 for a usage error of `isb run`, 2 for
// any other).
int RunCommandLine(int argc, char** argv);

}  // namespace isb::cli
