// Preview links and sessions, kept by the SHA-256 of their secrets: a lookup's timing says nothing of a secret.
#include "api/preview_access.h"

#include <algorithm>
#include <chrono>

#include "base/random.h"
#include "identity/tokens.h"

namespace isb::api {
namespace {

constexpr size_t kSecretBytes = 32;  // 256 bits
// A link is remembered this long after it expires, so that a late click is told it expired rather than unknown.
constexpr int64_t kLinkMemoryMs = 10 * 60 * 1000;

Error Forbidden(std::string message) { return Error::Of(Code::kForbidden, std::move(message)); }

}  // namespace

PreviewAccess::PreviewAccess(PreviewAccessOptions options)
    : options_(std::move(options)), url_port_(options_.url_port) {
  MutexLock lock(mu_);
  on_ended_ = options_.on_ended;
}

void PreviewAccess::OnEnded(std::function<void()> on_ended) {
  MutexLock lock(mu_);
  on_ended_ = std::move(on_ended);
}

const Error& PreviewAccess::NoSession() {
  static const Error kNoSession =
      Forbidden("no preview session here: open this preview with a link from isb (sandbox_port_open)");
  return kNoSession;
}

int64_t PreviewAccess::Now() const {
  if (options_.now_ms) return options_.now_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<PreviewLink> PreviewAccess::Open(const PreviewHost& host, const Identity& caller) {
  ISB_ASSIGN_OR_RETURN(std::string token, RandomHex(kSecretBytes));
  const int64_t now = Now();
  const std::string run = options_.run_of ? options_.run_of(host.sandbox) : "";
  PreviewLink link;
  link.expires_at_ms = now + options_.link_life.count();
  link.url = options_.url_scheme + "://" + PreviewHostName(host, options_.domain) +
             (url_port_ != 0 ? ":" + std::to_string(url_port_.load()) : "") + kPreviewLinkPath + token;
  MutexLock lock(mu_);
  std::erase_if(links_, [now](const auto& kv) { return now > kv.second.expires_at_ms + kLinkMemoryMs; });
  links_[identity::SecretHash(token)] = Link{host, caller, link.expires_at_ms, false, run};
  return link;
}

Result<PreviewSession> PreviewAccess::Spend(std::string_view token, const PreviewHost& at) {
  const int64_t now = Now();
  ISB_ASSIGN_OR_RETURN(std::string cookie, RandomHex(kSecretBytes));
  MutexLock lock(mu_);
  auto it = links_.find(identity::SecretHash(token));
  if (it == links_.end()) return Forbidden("this preview link is not valid: ask isb for a new one (sandbox_port_open)");
  Link& link = it->second;
  if (link.spent) {
    return Forbidden(
        "this preview link was used already: a link opens its preview once; ask isb for a new one "
        "(sandbox_port_open)");
  }
  link.spent = true;
  if (now >= link.expires_at_ms) {
    return Forbidden("this preview link has expired (a link is good for " +
                     std::to_string(options_.link_life.count() / 1000) +
                     " s): ask isb for a new one (sandbox_port_open)");
  }
  if (!(link.host == at)) return Forbidden("this preview link is for another preview: open it at the address isb gave");
  sessions_[identity::SecretHash(cookie)] =
      Session{link.host, link.caller, now + options_.session_life.count(), link.run};
  return PreviewSession{cookie, std::chrono::duration_cast<std::chrono::seconds>(options_.session_life)};
}

Result<std::string> PreviewAccess::Check(std::string_view cookie, const PreviewHost& at) {
  if (cookie.empty()) return NoSession();
  std::string key = identity::SecretHash(cookie);
  MutexLock lock(mu_);
  auto it = sessions_.find(key);
  if (it == sessions_.end() || !(it->second.host == at) || Now() >= it->second.expires_at_ms) return NoSession();
  return key;
}

bool PreviewAccess::Alive(const std::string& key) {
  const int64_t now = Now();
  MutexLock lock(mu_);
  auto it = sessions_.find(key);
  return it != sessions_.end() && now < it->second.expires_at_ms;
}

void PreviewAccess::Ended(size_t n) {
  if (n == 0) return;
  std::function<void()> tell;
  {
    MutexLock lock(mu_);
    tell = on_ended_;
  }
  if (tell) tell();
}

size_t PreviewAccess::Close(const std::string& sandbox, uint16_t port) {
  auto matches = [&](const PreviewHost& h) { return h.sandbox == sandbox && (port == 0 || h.port == port); };
  size_t n = 0;
  {
    MutexLock lock(mu_);
    std::erase_if(links_, [&](const auto& kv) { return matches(kv.second.host); });
    n = std::erase_if(sessions_, [&](const auto& kv) { return matches(kv.second.host); });
  }
  Ended(n);
  return n;
}

std::vector<std::string> PreviewAccess::Sandboxes() {
  std::vector<std::string> out;
  {
    MutexLock lock(mu_);
    for (const auto& [key, link] : links_) out.push_back(link.host.sandbox);
    for (const auto& [key, session] : sessions_) out.push_back(session.host.sandbox);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

size_t PreviewAccess::EndOtherRuns() {
  if (!options_.run_of) return 0;
  std::map<std::string, std::string> current;  // by sandbox, its run now
  for (const std::string& sandbox : Sandboxes()) current[sandbox] = options_.run_of(sandbox);
  // Recorded in another run, or the sandbox runs no more. (One opened in a run that began after the look above ends
  // too: opened again, it stays.)
  auto over = [&](const PreviewHost& host, const std::string& run) {
    auto it = current.find(host.sandbox);
    return it != current.end() && (it->second.empty() || it->second != run);
  };
  size_t n = 0;
  {
    MutexLock lock(mu_);
    std::erase_if(links_, [&](const auto& kv) { return over(kv.second.host, kv.second.run); });
    n = std::erase_if(sessions_, [&](const auto& kv) { return over(kv.second.host, kv.second.run); });
  }
  Ended(n);
  return n;
}

size_t PreviewAccess::Recheck() {
  const int64_t now = Now();
  std::vector<std::pair<std::string, Session>> all;
  {
    MutexLock lock(mu_);
    std::erase_if(sessions_, [now](const auto& kv) { return now >= kv.second.expires_at_ms; });
    std::erase_if(links_, [now](const auto& kv) { return now > kv.second.expires_at_ms + kLinkMemoryMs; });
    all.assign(sessions_.begin(), sessions_.end());
  }
  std::vector<std::string> gone;
  if (options_.still_allowed) {
    for (const auto& [key, s] : all)
      if (!options_.still_allowed(s.caller, s.host.org)) gone.push_back(key);
  }
  size_t n = 0;
  {
    MutexLock lock(mu_);
    for (const std::string& key : gone) n += sessions_.erase(key);
  }
  Ended(n);
  return n;
}

}  // namespace isb::api
