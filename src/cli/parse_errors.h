// What isb says about a command line it could not parse: the command it got that far into, the word or flag it did
// not know and the nearest one it does, instead of CLI11's generic text.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace isb::cli {

// The number of single-character edits (insert, delete, replace, swap two neighbours) from `a` to `b`.
size_t EditDistance(std::string_view a, std::string_view b);
// The candidate nearest to `word` when it is near enough to be a slip of the keyboard (at most one edit, or one per
// three characters); "" when none is.
std::string Nearest(std::string_view word, const std::vector<std::string>& candidates);

// The message for `e` (which names the command: "isb create: ..."), thrown parsing `args` (argv without argv[0]) with
// `app`; "" when CLI11's own output is right
// (--help). The exit code stays main()'s to choose.
std::string ParseErrorMessage(CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args);

}  // namespace isb::cli
