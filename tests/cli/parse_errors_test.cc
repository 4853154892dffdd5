// Parse errors in isb's words: the unknown command or flag named, and the nearest one offered.
#include "cli/parse_errors.h"

#include <gtest/gtest.h>

#include "cli/run_isb.h"
#include "cli/sandbox_cmds.h"

namespace isb::cli {
namespace {

// The message main() prints for `args` against the sandbox commands and a `run` that, like isb run's, has no
// --egress; "" when the line parses.
std::string MessageFor(std::vector<std::string> args) {
  CLI::App app{"isb"};
  app.require_subcommand(1);
  int exit_code = 0;
  AddSandboxCommands(app, &exit_code);
  auto* run = app.add_subcommand("run", "Run a command in a fresh sandbox");
  std::vector<std::string> command;
  run->add_option("--memory", command);
  run->add_option("command", command);
  auto* user = app.add_subcommand("user", "Accounts");
  user->require_subcommand(1);
  user->add_subcommand("create", "Create");
  user->add_subcommand("ls", "List");
  std::vector<std::string> argv_words = {"isb"};
  argv_words.insert(argv_words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_words) argv.push_back(a.data());
  try {
    // Parsing only: the callbacks of a line that parses would call a daemon.
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return ParseErrorMessage(app, e, args);
  }
  return "";
}

TEST(ParseErrorsTest, AnUnknownCommandIsNamedWithTheNearestOneIfAny) {
  EXPECT_EQ(MessageFor({"logs"}), "isb: unknown command 'logs' (isb --help lists them)");
  EXPECT_EQ(MessageFor({"exce", "web", "--", "true"}),
            "isb: unknown command 'exce'; did you mean 'exec'? (isb --help lists them)");
  EXPECT_EQ(MessageFor({"--org", "acme", "lss"}),
            "isb: unknown command 'lss'; did you mean 'ls'? (isb --help lists them)");
  EXPECT_EQ(MessageFor({}), "isb: a command is required (isb --help lists them)");
  EXPECT_EQ(MessageFor({"user", "craete", "bob"}),
            "isb user: unknown command 'craete'; did you mean 'create'? (isb user --help lists them)");
}

TEST(ParseErrorsTest, AMisspeltFlagIsNamedWithTheNearest) {
  EXPECT_EQ(MessageFor({"create", "--nmae", "web"}), "isb create: unknown flag --nmae; did you mean --name?");
  EXPECT_EQ(MessageFor({"create", "--memroy=1G"}), "isb create: unknown flag --memroy; did you mean --memory?");
  EXPECT_EQ(MessageFor({"ls", "--colour"}), "isb ls: unknown flag --colour (isb ls --help lists its flags)");
}

TEST(ParseErrorsTest, AFlagOfAnotherCommandSaysWhichTakesIt) {
  EXPECT_EQ(MessageFor({"run", "--egress", "pypi.org", "--", "true"}),
            "isb run: unknown flag --egress (isb create takes it; isb run does not)");
}

TEST(ParseErrorsTest, WhatFollowsDoubleDashIsTheCommandsNotIsbs) {
  EXPECT_EQ(MessageFor({"run", "--", "ls", "--nmae"}), "");
}

TEST(ParseErrorsTest, EditDistanceCountsASwapAsOneEdit) {
  EXPECT_EQ(EditDistance("--nmae", "--name"), 1u);
  EXPECT_EQ(EditDistance("logs", "ls"), 2u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(Nearest("logs", {"ls", "rm", "exec"}), "");
  EXPECT_EQ(Nearest("--nmae", {"--name", "--image"}), "--name");
}

}  // namespace
}  // namespace isb::cli
