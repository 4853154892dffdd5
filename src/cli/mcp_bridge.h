// `isb mcp`: a stdio MCP server for local clients, each JSON-RPC message passed to the daemon's Streamable HTTP
// endpoint (over the unix socket, or --url with a token) and each message of its answer passed back, one per line.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "base/mutex.h"
#include "base/result.h"
#include "cli/client.h"

namespace isb::cli {

void AddMcpCommand(CLI::App& app, int* exit_code);

// The most one line on stdin may carry: the largest tool input the daemon takes (a file write) with room to spare.
inline constexpr size_t kMaxMcpLineBytes = 16u << 20;

// Thread-safe: each request is sent on a thread of its own, so that a call waiting for the person's approval does
// not hold back the client's answer to the question.
class McpBridge {
 public:
  // `token` goes as a bearer header over TCP only; `org` non-empty: the org's own endpoint (/orgs/ORG/mcp).
  McpBridge(HttpClient http, std::string token, std::string org);

  // Serves the client on `in` (newline-delimited JSON-RPC) and `out` until `in` ends, then waits for the requests
  // still being answered and ends the daemon's session. Returns 0, or 125 when `in` could not be read.
  int Run(int in, int out);

  // The JSON-RPC error answer to `message` (a request) that could not be delivered; null for a notification or a
  // response, which have no answer.
  static nlohmann::json Undeliverable(const nlohmann::json& message, const std::string& why);

 private:
  void Forward(const std::string& line);
  HttpRequest Post(const nlohmann::json& message);
  void WriteLine(const nlohmann::json& message);
  void Say(const std::string& text);
  void EndSession();

  HttpClient http_;
  std::string token_, path_;
  int out_ = -1;
  Mutex out_mu_;  // whole lines on out_
  Mutex mu_;
  std::string session_ ISB_GUARDED_BY(mu_);
  std::string protocol_version_ ISB_GUARDED_BY(mu_);
  int inflight_ ISB_GUARDED_BY(mu_) = 0;  // requests on threads of their own, not yet answered
  CondVar answered_;
};

}  // namespace isb::cli
