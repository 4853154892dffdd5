// What the judge asks an OpenAI-compatible chat-completions endpoint, and how its answer is read: a JSON verdict
// {"verdict": "allow"|"deny", "reason": "..."} in choices[0].message.content. Anything else is no verdict.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace isb::egress {

// One outbound request the policy left to the judge.
struct JudgeQuestion {
  std::string org;
  std::string policy;  // the policy it falls under (the cache and the circuit breaker are per policy)
  std::string sandbox;
  std::string host;
  uint16_t port = 0;
  std::string method;  // empty when the proxy cannot see it (TLS)
  std::string path;    // likewise
};

struct JudgeVerdict {
  bool allow = false;
  std::string reason;  // the judge's, one line of printable text, at most kMaxJudgeReason bytes
};

inline constexpr size_t kMaxJudgeReason = 300;

// The request body: {model, messages: [system, user], response_format: {type: json_object}}. The user message is
// the question as JSON, and the system prompt says its values are data, not instructions.
std::string ChatRequestBody(const std::string& model, const JudgeQuestion& q);

// Reads a chat-completions response body. Errors (kInvalidArgument, a fixed sentence that never quotes the body):
// not JSON, no choices[0].message.content string, content not a JSON object, a "verdict" other than exactly "allow"
// or "deny" (or given twice), a "reason" that is not a string.
Result<JudgeVerdict> ParseChatVerdict(std::string_view body);

}  // namespace isb::egress
