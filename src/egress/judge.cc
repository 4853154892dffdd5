#include "egress/judge.h"

#include <openssl/crypto.h>

#include <algorithm>

#include "base/file.h"
#include "base/metric_families.h"

namespace isb::egress {
namespace {

Error Invalid(const std::string& what) { return Error::Of(Code::kInvalidArgument, "judge: " + what); }

// The key as the file holds it, without surrounding whitespace; only what an HTTP header can carry.
Result<std::string> ReadKey(const std::string& file) {
  if (file.empty()) return Invalid("--judge-key-file is required with --judge-url");
  Result<std::string> text = ReadFile(file);
  if (!text.ok()) return Invalid("cannot read the key file " + file + ": " + text.error().message);
  std::string key = std::move(*text);
  size_t begin = key.find_first_not_of(" \t\r\n");
  size_t end = key.find_last_not_of(" \t\r\n");
  std::string trimmed = begin == std::string::npos ? "" : key.substr(begin, end - begin + 1);
  OPENSSL_cleanse(key.data(), key.size());
  if (trimmed.empty()) return Invalid("the key file " + file + " is empty");
  for (char c : trimmed) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) {
      OPENSSL_cleanse(trimmed.data(), trimmed.size());
      return Invalid("the key file " + file +
                     " holds characters other than printable ASCII; it must hold the key alone");
    }
  }
  return trimmed;
}

// Fields joined so that no two questions share a key: each one's length before it.
std::string CacheKey(const JudgeQuestion& q) {
  std::string key;
  for (const std::string& part : {q.org, q.policy, q.host + ":" + std::to_string(q.port), q.method, q.path})
    key += std::to_string(part.size()) + ":" + part + ";";
  return key;
}

}  // namespace

Result<std::unique_ptr<Judge>> Judge::Create(JudgeOptions options) {
  Result<HttpUrl> url = ParseHttpUrl(options.url);
  if (!url.ok()) return Invalid("--judge-url: " + url.error().message);
  if (options.model.empty()) return Invalid("--judge-model is required with --judge-url");
  if (options.timeout.count() <= 0) return Invalid("the timeout must be positive");
  std::shared_ptr<const TlsTrust> trust;
  if (url->tls) {
    Result<std::shared_ptr<const TlsTrust>> loaded = TlsTrust::Create(options.ca_file);
    if (!loaded.ok()) return Invalid(loaded.error().message);
    trust = *loaded;
  }
  DialerOptions d;
  d.pins = options.pins;
  d.resolver = options.resolver;
  d.connect_timeout = options.timeout;
  ISB_ASSIGN_OR_RETURN(Dialer dialer, Dialer::Create(std::move(d)));
  ISB_ASSIGN_OR_RETURN(std::string key, ReadKey(options.key_file));
  return std::unique_ptr<Judge>(
      new Judge(std::move(options), std::move(*url), std::move(key), std::move(dialer), std::move(trust)));
}

Judge::Judge(JudgeOptions options, HttpUrl url, std::string key, Dialer dialer, std::shared_ptr<const TlsTrust> trust)
    : options_(std::move(options)),
      url_(std::move(url)),
      key_(std::move(key)),
      dialer_(std::move(dialer)),
      trust_(std::move(trust)),
      cache_(options_.cache_capacity, options_.cache_ttl, options_.clock) {}

Judge::~Judge() { OPENSSL_cleanse(key_.data(), key_.size()); }

JudgeVerdict Judge::Decide(const JudgeQuestion& q) {
  bool asked = false;
  JudgeVerdict verdict = cache_.Get(CacheKey(q), q.org, [&] {
    asked = true;
    return Ask(q);
  });
  metrics::JudgeCache().With({asked ? "miss" : "hit"}).Inc();
  return verdict;
}

VerdictCache::Answer Judge::Ask(const JudgeQuestion& q) {
  std::shared_ptr<CircuitBreaker> breaker = BreakerOf(q.policy);
  CircuitBreaker::Ticket ticket = breaker->Admit(options_.clock());
  if (!ticket.admitted) {
    metrics::JudgeVerdicts().With({"circuit_open"}).Inc();
    return {{false, kJudgeCircuitOpen}, false};
  }
  Result<JudgeVerdict> verdict = Call(q);
  breaker->Record(ticket, verdict.ok(), options_.clock());
  metrics::JudgeVerdicts().With({!verdict.ok() ? "error" : verdict->allow ? "allow" : "deny"}).Inc();
  metrics::JudgeBreakerOpen().Get().Set(static_cast<double>(OpenBreakers()));
  if (!verdict.ok()) return {{false, Redacted("judge failed (" + verdict.error().message + ")")}, false};
  std::string reason = verdict->reason.empty() ? "no reason given" : verdict->reason;
  reason = Redacted((verdict->allow ? "judge allowed: " : "judge denied: ") + reason);
  return {{verdict->allow, std::move(reason)}, true};
}

Result<JudgeVerdict> Judge::Call(const JudgeQuestion& q) {
  HttpPostRequest request;
  request.headers = {
      {"Authorization", "Bearer " + key_}, {"Content-Type", "application/json"}, {"Accept", "application/json"}};
  request.body = ChatRequestBody(options_.model, q);
  ++calls_;
  Result<HttpReply> reply =
      HttpPost(dialer_, trust_.get(), url_, request, std::chrono::steady_clock::now() + options_.timeout);
  if (!reply.ok()) {
    if (reply.error().code == Code::kTimeout)
      return Error::Of(Code::kTimeout, "timed out after " + std::to_string(options_.timeout.count()) + " ms");
    return reply.error();
  }
  if (reply->status != 200) return Error::Of(Code::kUnavailable, "HTTP " + std::to_string(reply->status));
  Result<JudgeVerdict> verdict = ParseChatVerdict(reply->body);
  if (!verdict.ok()) return Error::Of(Code::kUnavailable, "no verdict: " + verdict.error().message);
  return verdict;
}

std::shared_ptr<CircuitBreaker> Judge::BreakerOf(const std::string& policy) {
  MutexLock lock(breakers_mu_);
  // Policies come and go with sandboxes: past a bound, closed breakers nobody holds are forgotten (a closed
  // breaker's only state is a count of recent failures).
  if (breakers_.size() >= kMaxBreakers) {
    std::erase_if(breakers_, [](const auto& kv) {
      return kv.second.use_count() == 1 && kv.second->state() == CircuitBreaker::State::kClosed;
    });
  }
  auto& slot = breakers_[policy];
  if (!slot) slot = std::make_shared<CircuitBreaker>(options_.breaker_threshold, options_.breaker_open_for);
  return slot;
}

CircuitBreaker::State Judge::breaker_state(const std::string& policy) { return BreakerOf(policy)->state(); }

size_t Judge::OpenBreakers() {
  MutexLock lock(breakers_mu_);
  return static_cast<size_t>(std::count_if(breakers_.begin(), breakers_.end(), [](const auto& kv) {
    return kv.second->state() != CircuitBreaker::State::kClosed;
  }));
}

// The endpoint could echo the key back (in a reason or an error): it never leaves the judge.
std::string Judge::Redacted(std::string text) const {
  static constexpr std::string_view kRedacted = "[redacted]";
  if (key_.empty()) return text;
  // Searching on after the replacement: a key that is part of "[redacted]" itself would otherwise be found again
  // in it, for ever.
  for (size_t at = text.find(key_); at != std::string::npos; at = text.find(key_, at + kRedacted.size()))
    text.replace(at, key_.size(), kRedacted);
  return text;
}

}  // namespace isb::egress
