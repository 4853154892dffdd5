// Parse errors in isb's words. CLI11 knows which command it was parsing but reports an unknown flag as arguments
// "not expected" (or, at the top level, as a missing subcommand); the command line itself says what went wrong.
#include "cli/parse_errors.h"

#include <algorithm>

namespace isb::cli {
namespace {

// The deepest command CLI11 entered: `app` itself when it got no further.
CLI::App* Deepest(CLI::App* app) {
  for (;;) {
    auto subs = app->get_subcommands();
    if (subs.empty()) return app;
    app = subs.back();
  }
}

// "isb", "isb create", "isb user create".
std::string CommandPath(const CLI::App* cmd) {
  std::vector<std::string> names;
  for (const CLI::App* c = cmd; c != nullptr; c = c->get_parent())
    names.push_back(c->get_parent() ? c->get_name() : "isb");
  std::string out;
  for (auto it = names.rbegin(); it != names.rend(); ++it) out += (out.empty() ? "" : " ") + *it;
  return out;
}

std::vector<std::string> SubcommandNames(CLI::App* cmd) {
  std::vector<std::string> out;
  for (CLI::App* sub : cmd->get_subcommands([](CLI::App*) { return true; })) out.push_back(sub->get_name());
  return out;
}

// Every "--long" and "-s" flag `cmd` takes, its own and those it inherits from the commands above it.
std::vector<std::string> FlagNames(CLI::App* cmd) {
  std::vector<std::string> out;
  for (CLI::App* c = cmd; c != nullptr; c = c->get_parent()) {
    for (const CLI::Option* o : c->get_options()) {
      for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
      for (const std::string& s : o->get_snames()) out.push_back("-" + s);
    }
  }
  return out;
}

bool Takes(const std::vector<std::string>& flags, std::string_view flag) {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

// The commands beside `cmd` (under the same parent) that take `flag`.
std::vector<std::string> SiblingsTaking(CLI::App* cmd, const std::string& flag) {
  std::vector<std::string> out;
  CLI::App* parent = cmd->get_parent();
  if (parent == nullptr) return out;
  for (CLI::App* sib : parent->get_subcommands([](CLI::App*) { return true; })) {
    if (sib == cmd) continue;
    for (const CLI::Option* o : sib->get_options()) {
      for (const std::string& l : o->get_lnames())
        if ("--" + l == flag) out.push_back(sib->get_name());
    }
  }
  return out;
}

// The first word of `args` that names `cmd` or a command below it: where its own arguments start.
size_t ArgsOf(CLI::App* cmd, const std::vector<std::string>& args) {
  std::vector<std::string> path;
  for (const CLI::App* c = cmd; c->get_parent() != nullptr; c = c->get_parent()) path.push_back(c->get_name());
  std::reverse(path.begin(), path.end());
  size_t at = 0;
  for (const std::string& word : path) {
    while (at < args.size() && args[at] != word && args[at] != "--") ++at;
    if (at < args.size() && args[at] == word) ++at;
  }
  return at;
}

// The first word at or after `at` that is neither a flag nor a flag's value.
size_t FirstWord(CLI::App* cmd, const std::vector<std::string>& args, size_t at) {
  while (at < args.size() && args[at].starts_with("-") && args[at] != "--") {
    const std::string& a = args[at++];
    if (a.find('=') != std::string::npos) continue;
    const CLI::Option* o = cmd->get_option_no_throw(a);
    if (o != nullptr && o->get_type_size() > 0) ++at;
  }
  return at;
}

// The first flag among `cmd`'s arguments (before "--") that it does not take, or "".
std::string UnknownFlag(CLI::App* cmd, const std::vector<std::string>& args) {
  const std::vector<std::string> flags = FlagNames(cmd);
  for (size_t i = ArgsOf(cmd, args); i < args.size() && args[i] != "--"; ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-' || a == "-") continue;
    std::string name = a.substr(0, a.find('='));
    if (name.size() > 2 && name[1] != '-') name = name.substr(0, 2);  // -it: the first of a cluster of short flags
    if (!Takes(flags, name)) return name;
  }
  return "";
}

std::string UnknownFlagMessage(CLI::App* cmd, const std::string& flag) {
  const std::string where = CommandPath(cmd);
  std::string msg = where + ": unknown flag " + flag;
  const std::string near = Nearest(flag, FlagNames(cmd));
  if (!near.empty()) return msg + "; did you mean " + near + "?";
  const std::vector<std::string> others = SiblingsTaking(cmd, flag);
  if (!others.empty()) {
    std::string names;
    for (const std::string& o : others) names += (names.empty() ? "isb " : ", isb ") + o;
    return msg + " (" + names + " take" + (others.size() == 1 ? "s" : "") + " it; " + where + " does not)";
  }
  return msg + " (" + where + " --help lists its flags)";
}

}  // namespace

size_t EditDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein with a swap of two neighbours as one edit ("--nmae" is one from "--name").
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string Nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string_view bare = word;
  while (bare.starts_with("-")) bare.remove_prefix(1);
  const size_t allowed = std::max<size_t>(1, bare.size() / 3);
  std::string best;
  size_t best_distance = allowed + 1;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d > 0 && d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string ParseErrorMessage(CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args) {
  const std::string kind = e.get_name();
  if (kind == "CallForHelp" || kind == "CallForAllHelp" || kind == "CallForVersion") return "";
  CLI::App* cmd = Deepest(&app);
  if (std::string flag = UnknownFlag(cmd, args); !flag.empty()) return UnknownFlagMessage(cmd, flag);
  // A command with subcommands that got none it knows: the word it got instead, if any.
  const std::vector<std::string> subs = SubcommandNames(cmd);
  if ((kind == "RequiredError" || kind == "ExtrasError") && !subs.empty()) {
    const size_t at = FirstWord(cmd, args, ArgsOf(cmd, args));
    const std::string where = CommandPath(cmd);
    if (at >= args.size()) return where + ": a command is required (" + where + " --help lists them)";
    std::string msg = where + ": unknown command '" + args[at] + "'";
    const std::string near = Nearest(args[at], subs);
    return msg + (near.empty() ? "" : "; did you mean '" + near + "'?") + " (" + where + " --help lists them)";
  }
  std::string what = e.what();
  // CLI11 writes "The following argument was not expected: x"; isb's messages start in lower case and name the
  // command.
  if (!what.empty()) what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
  return CommandPath(cmd) + ": " + what + " (" + CommandPath(cmd) + " --help)";
}

}  // namespace isb::cli
