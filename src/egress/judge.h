// The egress judge: decides the requests a policy leaves to it by asking an LLM through an OpenAI-compatible
// chat-completions endpoint. Verdicts are cached per (org, policy, host:port, method, path); identical concurrent
// questions share one call; a circuit breaker per policy stops asking a judge that keeps failing. Anything but a
// clear verdict denies.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "egress/breaker.h"
#include "egress/dialer.h"
#include "egress/http_client.h"
#include "egress/judge_verdict.h"
#include "egress/pin.h"
#include "egress/stream.h"
#include "egress/verdict_cache.h"

namespace isb::egress {

struct JudgeOptions {
  std::string url;  // the chat-completions endpoint, http:// or https://
  std::string model;
  std::string key_file;  // holds the API key (sent as a bearer token); never logged, never in an error or a reason
  std::string ca_file;   // extra CA certificates for an https judge; the system's roots are trusted too
  std::chrono::milliseconds timeout{8000};  // for the whole call: connect, TLS, request and response
  std::vector<Pin> pins;                    // the daemon's pins: the judge is dialled like any other egress
  Resolver resolver = ResolveSystem;
  size_t cache_capacity = 10000;
  std::chrono::milliseconds cache_ttl = std::chrono::minutes(5);
  int breaker_threshold = 5;  // consecutive failures that open a policy's breaker
  std::chrono::milliseconds breaker_open_for = std::chrono::seconds(30);
  SteadyClock clock = [] { return std::chrono::steady_clock::now(); };  // for the cache and the breakers
};

// The reason given while a policy's breaker is open.
inline constexpr const char* kJudgeCircuitOpen = "judge unavailable (circuit open)";

class Judge {
 public:
  // Reads the key, checks the URL and the model, loads the CA file for https. Errors (kInvalidArgument) name the
  // option and the file, never the key.
  static Result<std::unique_ptr<Judge>> Create(JudgeOptions options);
  ~Judge();

  // Thread-safe; blocks for at most the timeout (plus name resolution), or while waiting for an identical question
  // already being asked. The reason is one line: the judge's own for a verdict ("judge denied: ..."), or why there
  // was none ("judge failed (HTTP 500)", "judge failed (timed out after 8000 ms)", kJudgeCircuitOpen).
  JudgeVerdict Decide(const JudgeQuestion& q);

  uint64_t calls() const { return calls_; }            // requests sent to the endpoint
  size_t waiting() const { return cache_.waiting(); }  // questions waiting for an identical one's answer
  CircuitBreaker::State breaker_state(const std::string& policy);
  // Breakers open or half-open now (their policies' questions are refused without a call).
  size_t OpenBreakers();

 private:
  Judge(JudgeOptions options, HttpUrl url, std::string key, Dialer dialer, std::shared_ptr<const TlsTrust> trust);
  VerdictCache::Answer Ask(const JudgeQuestion& q);
  // One call to the endpoint: the verdict, or the reason it gave none.
  Result<JudgeVerdict> Call(const JudgeQuestion& q);
  std::shared_ptr<CircuitBreaker> BreakerOf(const std::string& policy);
  std::string Redacted(std::string text) const;

  const JudgeOptions options_;
  const HttpUrl url_;
  std::string key_;
  const Dialer dialer_;
  const std::shared_ptr<const TlsTrust> trust_;
  VerdictCache cache_;
  std::atomic<uint64_t> calls_{0};
  Mutex breakers_mu_;
  std::unordered_map<std::string, std::shared_ptr<CircuitBreaker>> breakers_ ISB_GUARDED_BY(breakers_mu_);
  static constexpr size_t kMaxBreakers = 10000;
};

}  // namespace isb::egress
