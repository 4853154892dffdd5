// Each sandbox's secrets are compiled once per Set: a host matcher per secret (the egress policy's own), the
// scrubbing automaton, and request-body automata made on first use for each set of approved secrets and body syntax.
// A message's head is judged and edited here; its body goes through a CountingBody (a stream replacer that reports
// what it found), under content codings when the message has them.
#include "secrets/secrets_filter.h"

#include <optional>

#include "base/ascii.h"
#include "base/mutex.h"
#include "egress/http_body.h"
#include "secrets/content_coding.h"
#include "secrets/credential_headers.h"
#include "secrets/secret_forms.h"
#include "secrets/stream_replace.h"

namespace isb::secrets {

namespace filter_parts {

enum class Role { kSwap, kScrub, kLeak };

// An automaton and, for each of its pairs, the secret it belongs to and what a hit means.
struct OwnedSet {
  struct Owner {
    size_t binding;
    Role role;
  };
  std::shared_ptr<const ReplaceSet> set;
  std::vector<Owner> owners;
};

OwnedSet MakeSet(std::vector<Replacement> pairs, std::vector<OwnedSet::Owner> owners) {
  return {std::make_shared<const ReplaceSet>(std::move(pairs)), std::move(owners)};
}

// Per secret, what a message's head did with it: passed to its body's filter so a message counts once.
enum HeadMark : uint8_t { kNothing = 0, kHit = 1, kReported = 2 };

// The head just judged on this thread: the relay asks for the body's filter right after the head, on the same
// thread, with the same head object (message_relay.cc, PrepareRequest and PrepareResponse).
struct LastHead {
  const void* filter = nullptr;
  const void* head = nullptr;
  std::vector<uint8_t> marks;
};
thread_local LastHead last_head;

std::vector<uint8_t> TakeMarks(const void* filter, const void* head, size_t bindings) {
  std::vector<uint8_t> marks(bindings, kNothing);
  if (last_head.filter == filter && last_head.head == head && last_head.marks.size() == bindings)
    marks = last_head.marks;
  last_head = {};
  return marks;
}

}  // namespace filter_parts

using filter_parts::HeadMark;
using filter_parts::OwnedSet;
using filter_parts::Role;

struct SecretsFilter::Tally {
  Mutex mu;
  std::map<std::string, SecretCounters> by_secret;

  void Add(const std::string& secret, uint64_t SecretCounters::*field) {
    MutexLock lock(mu);
    ++(by_secret[secret].*field);
  }
};

struct SecretsFilter::Sandbox {
  secrets::OnLeak on_leak = secrets::OnLeak::kPass;
  std::vector<SecretBinding> bindings;
  std::vector<egress::EgressPolicy> hosts;  // per binding: a policy whose only secret is it
  std::shared_ptr<const OwnedSet> scrub;
  std::shared_ptr<Tally> tally;
  mutable Mutex cache_mu;
  mutable std::map<std::string, std::shared_ptr<const OwnedSet>> request_sets;  // by approved mask and body kind

  // Which secrets may be swapped on `exchange`: TLS the proxy terminated, to a host the secret is approved for.
  std::vector<bool> Approved(const egress::Exchange& exchange) const {
    std::vector<bool> approved(bindings.size(), false);
    if (!exchange.intercepted) return approved;
    for (size_t i = 0; i < bindings.size(); ++i)
      approved[i] = !bindings[i].retired && hosts[i].Intercepted(exchange.host, exchange.port);
    return approved;
  }

  // Approved secrets swapped, the others' placeholder forms found (and left as they are).
  std::shared_ptr<const OwnedSet> RequestSet(const std::vector<bool>& approved, BodyKind kind) const {
    std::string key(approved.begin(), approved.end());
    key += static_cast<char>(kind);
    MutexLock lock(cache_mu);
    std::shared_ptr<const OwnedSet>& cached = request_sets[key];
    if (cached) return cached;
    std::vector<Replacement> pairs;
    std::vector<OwnedSet::Owner> owners;
    for (size_t i = 0; i < bindings.size(); ++i) {
      if (bindings[i].retired) continue;
      if (approved[i] && !bindings[i].swap.body) continue;  // the placeholder goes on as it is (SwapParts)
      if (approved[i]) {
        for (Replacement& pair : SwapPairs(bindings[i].placeholder, bindings[i].value, kind)) {
          pairs.push_back(std::move(pair));
          owners.push_back({i, Role::kSwap});
        }
        continue;
      }
      for (std::string& form : PlaceholderForms(bindings[i].placeholder)) {
        pairs.push_back({form, form});
        owners.push_back({i, Role::kLeak});
      }
    }
    cached = std::make_shared<const OwnedSet>(filter_parts::MakeSet(std::move(pairs), std::move(owners)));
    return cached;
  }
};

namespace {

// Where a message is going, for the reports of its leaks and uses and for its refusal.
struct LeakContext {
  egress::Exchange exchange;
  std::shared_ptr<const SecretsFilter::Hooks> hooks;  // null: nothing is reported (a response)
};

// Counts one message for secret `binding`; a swap is also reported as a use.
void Count(const SecretsFilter::Sandbox& box, size_t binding, uint64_t SecretCounters::*counter,
           const LeakContext& context) {
  const SecretBinding& secret = box.bindings[binding];
  box.tally->Add(secret.name, counter);
  if (counter != &SecretCounters::swapped || !context.hooks || !context.hooks->use) return;
  const egress::Exchange& ex = context.exchange;
  context.hooks->use(UseEvent{ex.sandbox, secret.name, ex.host, ex.port});
}

std::string LeakRefusal(const SecretBinding& binding, const egress::Exchange& exchange, bool approved_host) {
  if (approved_host) return "secret " + binding.name + " may be sent to " + exchange.host + " only over HTTPS";
  return "secret " + binding.name + " may not be sent to " + exchange.host;
}

// Reports one leak and counts it; returns the refusal when the sandbox's on_leak refuses it.
std::string Leak(const SecretsFilter::Sandbox& box, size_t binding, const LeakContext& context,
                 const std::string& where) {
  const SecretBinding& secret = box.bindings[binding];
  box.tally->Add(secret.name, &SecretCounters::held);
  const egress::Exchange& ex = context.exchange;
  if (context.hooks && context.hooks->leak)
    context.hooks->leak(
        LeakEvent{ex.sandbox, secret.name, ex.host, ex.port, ex.intercepted ? where : "plain http", box.on_leak});
  if (box.on_leak == secrets::OnLeak::kPass) return {};
  return LeakRefusal(secret, ex, !ex.intercepted && box.hosts[binding].Intercepted(ex.host, 443));
}

// A body through a stream replacer whose hits are counted per secret (once per message, with its head's) and whose
// leaks are reported (once per message and secret) and, unless on_leak is pass, refuse the body.
class CountingBody : public egress::BodyFilter {
 public:
  CountingBody(std::shared_ptr<const SecretsFilter::Sandbox> box, std::shared_ptr<const OwnedSet> set,
               LeakContext context, std::vector<uint8_t> marks, uint64_t SecretCounters::*counter)
      : box_(std::move(box)),
        set_(std::move(set)),
        replacer_(set_->set),
        context_(std::move(context)),
        marks_(std::move(marks)),
        counter_(counter) {}

  // A body cut short is counted for what went through it.
  ~CountingBody() override { Tally(); }

  void Take(std::string_view data, std::string& out) override {
    if (!refusal_.empty()) return;
    replacer_.Take(data, out);
    Check();
  }
  void Finish(std::string& out) override {
    if (!refusal_.empty()) return;
    replacer_.Finish(out);
    Check();
    // Counted before the body's end goes on: whoever got the whole message reads counters that include it.
    Tally();
  }
  std::string Refusal() const override { return refusal_; }

 private:
  void Tally() {
    if (tallied_) return;
    tallied_ = true;
    const std::vector<uint64_t>& counts = replacer_.counts();
    for (size_t j = 0; j < counts.size(); ++j)
      if (counts[j] > 0 && set_->owners[j].role != Role::kLeak) marks_[set_->owners[j].binding] |= filter_parts::kHit;
    for (size_t i = 0; i < marks_.size(); ++i)
      if (marks_[i] & filter_parts::kHit) Count(*box_, i, counter_, context_);
  }
  void Check() {
    const std::vector<uint64_t>& counts = replacer_.counts();
    for (size_t j = 0; j < counts.size(); ++j) {
      const OwnedSet::Owner& owner = set_->owners[j];
      if (owner.role != Role::kLeak || counts[j] == 0 || (marks_[owner.binding] & filter_parts::kReported)) continue;
      marks_[owner.binding] |= filter_parts::kReported;
      std::string refusal = Leak(*box_, owner.binding, context_, "body");
      if (refusal_.empty()) refusal_ = std::move(refusal);
    }
  }

  std::shared_ptr<const SecretsFilter::Sandbox> box_;
  std::shared_ptr<const OwnedSet> set_;
  StreamReplacer replacer_;
  LeakContext context_;
  std::vector<uint8_t> marks_;
  uint64_t SecretCounters::*counter_;
  std::string refusal_;
  bool tallied_ = false;
};

// A body that may not pass: its content coding cannot be read.
class RefusedBody : public egress::BodyFilter {
 public:
  explicit RefusedBody(std::string reason) : reason_(std::move(reason)) {}
  void Take(std::string_view, std::string&) override {}
  void Finish(std::string&) override {}
  std::string Refusal() const override { return reason_; }

 private:
  std::string reason_;
};

// `inner` under the codings of a Content-Encoding value (the last applied is the outermost), or a refusal when a
// coding is unknown: `why` + the coding. Either way a body isb cannot read never goes on unchecked.
std::unique_ptr<egress::BodyFilter> UnderCodings(const std::string* content_encoding,
                                                 std::unique_ptr<egress::BodyFilter> inner, std::string_view why) {
  if (content_encoding == nullptr) return inner;
  Result<std::vector<Coding>> codings = ParseContentEncoding(*content_encoding);
  if (!codings.ok()) return std::make_unique<RefusedBody>(std::string(why) + codings.error().message);
  for (Coding coding : *codings) inner = std::make_unique<RecodedBody>(coding, std::move(inner));
  return inner;
}

// A plain-HTTP request asking to switch protocols, from a sandbox with secrets (to any host, on any port): after a
// 101 its bytes would pass unread, a placeholder or a value among them unseen, where a WebSocket over TLS has each
// message filtered; refused instead.
std::string PlainUpgradeRefusal(const egress::Exchange& exchange, const egress::HttpHead& head) {
  if (exchange.intercepted || head.Find("Upgrade") == nullptr) return {};
  return "isb: a protocol upgrade over plain HTTP to " + exchange.host +
         " is refused: this sandbox has secrets, and "
         "what follows the upgrade could not be checked for them; use https:// or wss://";
}

bool HasBody(const egress::BodyFraming& framing) { return framing.kind != egress::BodyFraming::kNone; }

// Every field `name` of a head joined as one list (a coding list may come in several fields, and each counts).
std::optional<std::string> JoinedFields(const std::vector<egress::HttpHeader>& headers, std::string_view name) {
  std::optional<std::string> out;
  for (const egress::HttpHeader& h : headers) {
    if (!EqualsIgnoreCase(h.name, name)) continue;
    out = out ? *out + ", " + h.value : h.value;
  }
  return out;
}

// A response framed by transfer-codings other than chunked: its body is not content the scrubber can read.
bool OtherTransferCodings(const std::vector<egress::HttpHeader>& headers) {
  std::optional<std::string> te = JoinedFields(headers, "Transfer-Encoding");
  if (!te) return false;
  std::string_view rest = *te;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view coding = rest.substr(0, comma);
    while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) coding.remove_prefix(1);
    while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) coding.remove_suffix(1);
    if (!coding.empty() && !EqualsIgnoreCase(coding, "chunked")) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

SecretsFilter::SecretsFilter() = default;
SecretsFilter::~SecretsFilter() = default;

void SecretsFilter::Set(const std::string& sandbox, SandboxSecrets secrets) {
  auto box = std::make_shared<Sandbox>();
  box->on_leak = secrets.on_leak;
  box->bindings = std::move(secrets.bindings);
  std::vector<Replacement> scrub;
  std::vector<OwnedSet::Owner> owners;
  for (size_t i = 0; i < box->bindings.size(); ++i) {
    const SecretBinding& b = box->bindings[i];
    egress::EgressSpec spec;
    spec.secrets.push_back({b.name, b.hosts});
    box->hosts.emplace_back(std::move(spec));
    for (Replacement& pair : ScrubPairs(b.placeholder, b.value)) {
      scrub.push_back(std::move(pair));
      owners.push_back({i, Role::kScrub});
    }
    // The latest value's pairs come first: a needle listed twice (an old value equal to the latest) keeps them.
    for (const std::string& old : b.old_values) {
      for (Replacement& pair : ScrubPairs(b.placeholder, old)) {
        scrub.push_back(std::move(pair));
        owners.push_back({i, Role::kScrub});
      }
    }
  }
  box->scrub = std::make_shared<const OwnedSet>(filter_parts::MakeSet(std::move(scrub), std::move(owners)));
  MutexLock lock(mu_);
  std::shared_ptr<Tally>& tally = tallies_[sandbox];
  if (!tally) tally = std::make_shared<Tally>();
  box->tally = tally;
  sandboxes_[sandbox] = std::move(box);
}

void SecretsFilter::Remove(const std::string& sandbox) {
  MutexLock lock(mu_);
  sandboxes_.erase(sandbox);
  tallies_.erase(sandbox);
}

void SecretsFilter::OnLeak(std::function<void(const LeakEvent&)> callback) {
  MutexLock lock(mu_);
  Hooks hooks = hooks_ ? *hooks_ : Hooks{};
  hooks.leak = std::move(callback);
  hooks_ = std::make_shared<const Hooks>(std::move(hooks));
}

void SecretsFilter::OnUse(std::function<void(const UseEvent&)> callback) {
  MutexLock lock(mu_);
  Hooks hooks = hooks_ ? *hooks_ : Hooks{};
  hooks.use = std::move(callback);
  hooks_ = std::make_shared<const Hooks>(std::move(hooks));
}

std::shared_ptr<const SecretsFilter::Hooks> SecretsFilter::CurrentHooks() const {
  MutexLock lock(mu_);
  return hooks_;
}

std::map<std::string, SecretCounters> SecretsFilter::Counters(const std::string& sandbox) const {
  std::shared_ptr<Tally> tally;
  {
    MutexLock lock(mu_);
    auto it = tallies_.find(sandbox);
    if (it == tallies_.end()) return {};
    tally = it->second;
  }
  MutexLock lock(tally->mu);
  return tally->by_secret;
}

std::shared_ptr<const SecretsFilter::Sandbox> SecretsFilter::Find(const std::string& sandbox) const {
  MutexLock lock(mu_);
  auto it = sandboxes_.find(sandbox);
  if (it == sandboxes_.end() || it->second->bindings.empty()) return nullptr;
  return it->second;
}

std::string SecretsFilter::RequestHead(const egress::Exchange& exchange, egress::HttpHead& head) {
  std::shared_ptr<const Sandbox> box = Find(exchange.sandbox);
  if (!box) return {};
  LeakContext context{exchange, CurrentHooks()};
  // No transfer-coding but chunked comes back (TE asks for others): the scrubber reads content, not codings.
  std::erase_if(head.headers, [](const egress::HttpHeader& h) { return EqualsIgnoreCase(h.name, "TE"); });
  const std::vector<bool> approved = box->Approved(exchange);
  std::vector<uint8_t> marks(box->bindings.size(), filter_parts::kNothing);
  std::string refusal;
  // Leaks are looked for in the head as it came, before any swap could add a placeholder of another secret.
  for (size_t i = 0; i < box->bindings.size(); ++i) {
    if (approved[i] || box->bindings[i].retired) continue;
    const std::string& placeholder = box->bindings[i].placeholder;
    std::string where;
    if (HeaderCarries("", head.target, placeholder)) {
      const size_t query = head.target.find('?');
      const FlexibleHit hit = FindFlexible(head.target, placeholder);
      where =
          query != std::string::npos && (hit.start == std::string_view::npos || hit.start > query) ? "query" : "path";
    }
    for (size_t h = 0; where.empty() && h < head.headers.size(); ++h) {
      if (HeaderCarries(head.headers[h].name, head.headers[h].value, placeholder))
        where = "header " + head.headers[h].name;
      else if (HeaderCarries("", head.headers[h].name, placeholder))
        where = "a header's name";
    }
    if (where.empty()) continue;
    marks[i] |= filter_parts::kReported;
    std::string refused = Leak(*box, i, context, where);
    if (refusal.empty()) refusal = std::move(refused);
  }
  if (!refusal.empty()) return refusal;
  // After the leak scan, so a request carrying a placeholder is reported as the leak it is.
  if (std::string refused = PlainUpgradeRefusal(exchange, head); !refused.empty()) return refused;
  for (size_t i = 0; i < box->bindings.size(); ++i) {
    if (!approved[i]) continue;
    const SecretBinding& b = box->bindings[i];
    // Not opted in: the placeholder stays in the target as it is (SwapParts).
    size_t swaps = b.swap.query ? SwapInTarget(head.target, b.placeholder, b.value) : 0;
    // Only where credentials travel: in another field it goes on as it is (credential_headers.h).
    for (egress::HttpHeader& field : head.headers)
      if (SwapsInHeader(field.name, b.headers)) swaps += SwapInHeader(field.name, field.value, b.placeholder, b.value);
    if (swaps > 0) marks[i] |= filter_parts::kHit;
  }
  if (HasBody(egress::RequestBody(head))) {
    filter_parts::last_head = {this, &head, std::move(marks)};
  } else {
    for (size_t i = 0; i < marks.size(); ++i)
      if (marks[i] & filter_parts::kHit) Count(*box, i, &SecretCounters::swapped, context);
  }
  return {};
}

bool SecretsFilter::KeepRequestTrailers(const egress::Exchange& exchange) { return Find(exchange.sandbox) == nullptr; }

std::unique_ptr<egress::BodyFilter> SecretsFilter::RequestBody(const egress::Exchange& exchange,
                                                               const egress::HttpHead& head) {
  std::shared_ptr<const Sandbox> box = Find(exchange.sandbox);
  if (!box) return nullptr;
  LeakContext context{exchange, CurrentHooks()};
  std::vector<uint8_t> marks = filter_parts::TakeMarks(this, &head, box->bindings.size());
  std::shared_ptr<const OwnedSet> set = box->RequestSet(box->Approved(exchange), BodyKindOf(head.Find("Content-Type")));
  auto body = std::make_unique<CountingBody>(box, std::move(set), std::move(context), std::move(marks),
                                             &SecretCounters::swapped);
  std::optional<std::string> codings = JoinedFields(head.headers, "Content-Encoding");
  // A placeholder in a coding isb cannot decode could be neither swapped nor held back: the request is refused.
  return UnderCodings(codings ? &*codings : nullptr, std::move(body),
                      "isb: the body cannot be checked for secrets' placeholders: ");
}

void SecretsFilter::ResponseHead(const egress::Exchange& exchange, const egress::HttpHead& request,
                                 egress::ResponseHead& head) {
  std::shared_ptr<const Sandbox> box = Find(exchange.sandbox);
  if (!box) return;
  std::vector<uint64_t> counts(box->scrub->owners.size(), 0);
  head.reason = box->scrub->set->ReplaceAll(head.reason, &counts);
  for (egress::HttpHeader& field : head.headers) {
    field.name = box->scrub->set->ReplaceAll(field.name, &counts);
    field.value = box->scrub->set->ReplaceAll(field.value, &counts);
  }
  std::vector<uint8_t> marks(box->bindings.size(), filter_parts::kNothing);
  for (size_t j = 0; j < counts.size(); ++j)
    if (counts[j] > 0) marks[box->scrub->owners[j].binding] |= filter_parts::kHit;
  if (HasBody(egress::ResponseBody(request.method, head))) {
    filter_parts::last_head = {this, &head, std::move(marks)};
    return;
  }
  for (size_t i = 0; i < marks.size(); ++i)
    if (marks[i] & filter_parts::kHit) box->tally->Add(box->bindings[i].name, &SecretCounters::scrubbed);
}

std::unique_ptr<egress::BodyFilter> SecretsFilter::ResponseBody(const egress::Exchange& exchange,
                                                                const egress::HttpHead& /*request*/,
                                                                const egress::ResponseHead& head) {
  std::shared_ptr<const Sandbox> box = Find(exchange.sandbox);
  if (!box) return nullptr;
  std::vector<uint8_t> marks = filter_parts::TakeMarks(this, &head, box->bindings.size());
  if (OtherTransferCodings(head.headers))
    return std::make_unique<RefusedBody>(
        "isb: a response in a transfer-coding other than chunked cannot be scrubbed "
        "of secrets");
  auto body = std::make_unique<CountingBody>(box, box->scrub, LeakContext{exchange, nullptr}, std::move(marks),
                                             &SecretCounters::scrubbed);
  std::optional<std::string> codings = JoinedFields(head.headers, "Content-Encoding");
  return UnderCodings(codings ? &*codings : nullptr, std::move(body), "isb: the body cannot be scrubbed of secrets: ");
}

std::unique_ptr<egress::BodyFilter> SecretsFilter::WebSocketMessage(const egress::Exchange& exchange, bool to_origin,
                                                                    bool /*text*/) {
  std::shared_ptr<const Sandbox> box = Find(exchange.sandbox);
  if (!box) return nullptr;
  std::vector<uint8_t> marks(box->bindings.size(), filter_parts::kNothing);
  // A message is a body of its own: the sandbox's swapped (raw: a WebSocket message has no syntax isb knows) where
  // approved and held back elsewhere, the origin's scrubbed.
  if (!to_origin)
    return std::make_unique<CountingBody>(box, box->scrub, LeakContext{exchange, nullptr}, std::move(marks),
                                          &SecretCounters::scrubbed);
  LeakContext context{exchange, CurrentHooks()};
  return std::make_unique<CountingBody>(box, box->RequestSet(box->Approved(exchange), BodyKind::kRaw),
                                        std::move(context), std::move(marks), &SecretCounters::swapped);
}

}  // namespace isb::secrets
