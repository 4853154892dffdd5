// `isb egress show|set|log SANDBOX`: a sandbox's egress through sandbox_get and sandbox_egress_set, and its refused
// connections through audit_list (the egress proxy records each refusal as an egress_connect row).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {

void AddEgressCommand(CLI::App& app, int* exit_code);

// A spec's egress as `isb egress show` prints it: "none" or "open" alone; a list one host a line; the object form
// one "allow HOST", "block HOST", "judge HOST" or "secret NAME" a line.
std::string EgressText(const json& egress);

// What `isb egress set` sends, given the sandbox's egress now: the hosts given (`replace`), or the list now with
// `add` appended and `remove` taken out. The object form keeps its other keys (secrets, on_leak); only its allow
// list changes. Refused, naming what to do: --add/--rm on an egress with no list, an --rm not in the list, any change
// to an object with no allow list. --add/--rm read the list and write it back whole: a change someone else makes in
// between is overwritten (the tool replaces the list; it has no compare-and-set).
struct EgressChange {
  std::vector<std::string> replace{}, add{}, remove{};
};
Result<json> NextEgress(const std::string& sandbox, const json& now, const EgressChange& change);

// `isb egress log`'s table of egress_connect audit rows: TIME (UTC), TARGET, REASON.
std::string EgressLogTable(const json& records);

}  // namespace isb::cli
