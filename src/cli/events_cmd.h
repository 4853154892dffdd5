// `isb events`: follows GET /api/v1/events and prints one line per sandbox lifecycle event.
#pragma once

#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace isb::cli {

void AddEventsCommand(CLI::App& app, int* exit_code);

// "2026-12-05T16:52:54.123Z created acme/sb-0123456789abcdef (web) running" for an event's JSON; the name in
// parentheses only when it has one.
std::string EventLine(const nlohmann::json& event);

}  // namespace isb::cli
