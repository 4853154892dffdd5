// `isb mcp`: a stdio MCP server for local clients, each JSON-RPC message passed to the daemon's Streamable HTTP
// endpoint (over the unix socket, or --url with a token) and each message of its answer passed back, one per line.
#pragma once

#include <CLI/CLI.hpp>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>

#include "base/mutex.h"
#include "base/result.h"
#include "cli/client.h"

namespace isb::cli {

void AddMcpCommand(CLI::App& app, int* exit_code);

// The most one line on stdin may carry: the largest tool input the daemon takes (a file write) with room to spare.
inline constexpr size_t kMaxMcpLineBytes = 16u << 20;

// Requests sent to the daemon at once; the client's further requests wait in line for one to be answered.
inline constexpr int kMaxMcpInflight = 16;
// Requests waiting in line, and their bytes; past either, stdin is read no further until the line shortens.
inline constexpr size_t kMaxMcpQueued = 1024;
inline constexpr size_t kMaxMcpQueuedBytes = 64u << 20;

// Thread-safe: requests are sent on threads of their own (at most `max_inflight` at once), so that a call waiting
// for the person's approval does not hold back the client's answer to the question; responses and notifications
// go at once from the reader, never behind queued requests.
class McpBridge {
 public:
  // `token` goes as a bearer header over TCP only; `org` non-empty: the org's own endpoint (/orgs/ORG/mcp).
  McpBridge(HttpClient http, std::string token, std::string org, int max_inflight = kMaxMcpInflight);

  // Serves the client on `in` (newline-delimited JSON-RPC) and `out` until `in` ends, then waits for the requests
  // still being answered and ends the daemon's session. Returns 0, or 125 when `in` could not be read.
  int Run(int in, int out);

  // The JSON-RPC error answer to `message` (a request) that could not be delivered; null for a notification or a
  // response, which have no answer.
  static nlohmann::json Undeliverable(const nlohmann::json& message, const std::string& why);

 private:
  void Forward(const std::string& line);
  // Queues a request line, starting a sender if fewer than max_inflight_ run.
  void Enqueue(std::string line, nlohmann::json id);
  // Takes the request `id` out of the line if it has not been sent (the client cancelled it): it is never sent.
  void Cancel(const nlohmann::json& id);
  // A sender: forwards queued requests until the queue is empty.
  void Send();
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
  const int max_inflight_;
  struct Queued {
    std::string line;
    nlohmann::json id;
  };
  std::deque<Queued> queued_ ISB_GUARDED_BY(mu_);  // requests not yet sent
  size_t queued_bytes_ ISB_GUARDED_BY(mu_) = 0;
  int senders_ ISB_GUARDED_BY(mu_) = 0;  // threads sending requests, each one at a time
  CondVar answered_;
};

}  // namespace isb::cli
