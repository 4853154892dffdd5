// `isb logs SANDBOX`: the output of the sandbox's detached commands (`isb exec -d`), read from sandbox_logs.
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace isb::cli {

void AddLogsCommand(CLI::App& app, int* exit_code);

// How one exit chunk of sandbox_logs is told on stderr: "isb: detached command 1 exited with code 0".
std::string ExitLine(const nlohmann::json& chunk);

// What a terminal is shown of a sandbox's output, so that the output cannot drive it: each control character but
// newline, tab and a carriage return before a newline (C0, DEL, and C1 as UTF-8 encodes it) and each byte that is
// not UTF-8, written out as \x1b (a C1 control as \u009b).
std::string ShowControls(std::string_view data);

// ShowControls over output that comes in pieces: a character split between two pieces is held until its rest comes.
class TerminalText {
 public:
  std::string Next(std::string_view piece);
  std::string Rest();  // what is held, at the end

 private:
  std::string held_;
};

}  // namespace isb::cli
