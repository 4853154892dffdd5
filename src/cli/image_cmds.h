// `isb image pull|ls|inspect|rm|import|export` and `isb snapshot`: an org's images through the daemon's image tools.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include <nlohmann/json.hpp>

namespace isb::cli {

void AddImageCommands(CLI::App& app, int* exit_code);

// One line of a pull's progress ({"phase", "layer", "done", "total"}) as the CLI draws it: "sha256:0123456789ab
// [#########           ]  45% 12.0M/26.5M"; "" for what it does not draw.
std::string ProgressLine(const nlohmann::json& progress);

}  // namespace isb::cli
