// TerminalSessions: detached shells, their output rings, and the threads of their execs.
#include "api/terminal_sessions.h"

#include <algorithm>
#include <utility>

#include "api/json_util.h"
#include "net/websocket_frame.h"

namespace isb::api {
namespace {

using json = nlohmann::json;

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

void OutputRing::Append(std::string_view bytes) {
  end_ += bytes.size();
  data_.append(bytes);
  if (data_.size() <= capacity_) return;
  // Drop the oldest bytes, and the rest of a character cut there (at most 3 continuation bytes follow a lead byte).
  size_t drop = data_.size() - capacity_;
  for (int i = 0; i < 3 && drop < data_.size() && IsContinuationByte(data_[drop]); ++i) ++drop;
  data_.erase(0, drop);
}

std::pair<uint64_t, std::string_view> OutputRing::From(uint64_t seen) const {
  if (seen < start() || seen > end_) return {start(), data_};
  return {seen, std::string_view(data_).substr(static_cast<size_t>(seen - start()))};
}

TerminalSession::TerminalSession(TerminalOwner owner, std::chrono::milliseconds grace, SteadyClock clock)
    : owner_(std::move(owner)),
      grace_(grace),
      clock_(clock ? std::move(clock) : SteadyClock([] { return std::chrono::steady_clock::now(); })) {
  MutexLock lock(mu_);
  detached_at_ = clock_();
}

std::string TerminalSession::SessionMessage(const std::string& id, uint64_t offset) {
  return Dump({{"type", "session"}, {"session", id}, {"offset", offset}});
}

std::string TerminalSession::id() const {
  MutexLock lock(mu_);
  return id_;
}

void TerminalSession::Announce(const std::string& id) {
  MutexLock lock(mu_);
  id_ = id;
  told_ = screen_ != nullptr && screen_->Text(SessionMessage(id, ring_.end()));
}

void TerminalSession::Output(std::string_view bytes) {
  MutexLock lock(mu_);
  ring_.Append(bytes);
  if (screen_ != nullptr) (void)screen_->Output(bytes);
}

void TerminalSession::End(const json& message) {
  MutexLock lock(mu_);
  ended_ = true;
  end_message_ = Dump(message);
  if (screen_ == nullptr) return;
  (void)screen_->Text(end_message_);
  screen_->Close(net::ws_close::kNormal, kTerminalEndedReason);
}

bool TerminalSession::Reattachable() const { return screen_ == nullptr && told_ && clock_() - detached_at_ < grace_; }

bool TerminalSession::Over() const {
  MutexLock lock(mu_);
  return cancelled_ || (screen_ == nullptr && !Reattachable());
}

void TerminalSession::Cancel() {
  MutexLock lock(mu_);
  cancelled_ = true;
}

std::optional<std::chrono::steady_clock::time_point> TerminalSession::WaitingSince() const {
  MutexLock lock(mu_);
  if (cancelled_ || ended_ || !Reattachable()) return std::nullopt;
  return detached_at_;
}

void TerminalSession::Attach(TerminalScreen* screen, uint64_t seen) {
  MutexLock lock(mu_);
  if (screen_ != nullptr && screen_ != screen) screen_->Close(kTerminalTakenOverCode, kTerminalTakenOverReason);
  screen_ = screen;
  // The first connection (or one that came between the session's Add and its Announce): told when the exec
  // announces the session.
  if (id_.empty()) return;
  told_ = true;  // it came with the id
  auto [offset, replay] = ring_.From(seen);
  if (!screen->Text(SessionMessage(id_, offset))) return;
  if (!replay.empty()) (void)screen->Output(replay);
  // Attached to a session that ended meanwhile (its exec returns after its end): told so, as the exec would have.
  if (!ended_) return;
  (void)screen->Text(end_message_);
  screen->Close(net::ws_close::kNormal, kTerminalEndedReason);
}

void TerminalSession::Detach(TerminalScreen* screen, bool end) {
  MutexLock lock(mu_);
  if (screen_ != screen) return;
  screen_ = nullptr;
  detached_at_ = clock_();
  if (end) cancelled_ = true;
}

TerminalSessions::~TerminalSessions() { Stop(); }

void TerminalSessions::Start(std::shared_ptr<TerminalSession> session, std::function<void()> run) {
  JoinFinished();
  MutexLock lock(mu_);
  if (stopped_) session->Cancel();
  const uint64_t key = next_++;
  // The thread takes mu_ only after its run, so it finds itself in running_.
  std::thread thread([this, key, run = std::move(run)] {
    run();
    MutexLock done(mu_);
    auto it = running_.find(key);
    if (it == running_.end()) return;  // Stop took it, and joins it
    for (auto id = by_id_.begin(); id != by_id_.end();) {
      id = id->second == it->second.session ? by_id_.erase(id) : std::next(id);
    }
    finished_.push_back(std::move(it->second.thread));
    running_.erase(it);
  });
  running_.emplace(key, Running{std::move(session), std::move(thread)});
}

void TerminalSessions::Add(const std::string& id, std::shared_ptr<TerminalSession> session) {
  MutexLock lock(mu_);
  by_id_[id] = std::move(session);
}

Result<std::shared_ptr<TerminalSession>> TerminalSessions::Find(const std::string& id, const TerminalOwner& who) const {
  {
    MutexLock lock(mu_);
    auto it = by_id_.find(id);
    if (it != by_id_.end() && it->second->owner() == who) return it->second;
  }
  return Error::Of(Code::kNotFound,
                   "no terminal session '" + SanitizeUtf8(std::string_view(id).substr(0, 64)) +
                       "' to reattach in sandbox '" + who.sandbox +
                       "': it ended (its shell exited, or it was left with no connection past its grace period), "
                       "or it is not this caller's");
}

void TerminalSessions::Stop() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    stopped_ = true;
    for (auto& [key, r] : running_) {
      r.session->Cancel();
      threads.push_back(std::move(r.thread));
    }
    running_.clear();
    by_id_.clear();
    for (std::thread& t : finished_) threads.push_back(std::move(t));
    finished_.clear();
  }
  for (std::thread& t : threads) t.join();
}

void TerminalSessions::KeepDetachedWithin(const std::string& subject, size_t most) {
  std::vector<std::pair<std::chrono::steady_clock::time_point, TerminalSession*>> waiting;
  MutexLock lock(mu_);
  for (auto& [key, r] : running_) {
    if (r.session->owner().subject != subject) continue;
    if (std::optional<std::chrono::steady_clock::time_point> since = r.session->WaitingSince())
      waiting.emplace_back(*since, r.session.get());
  }
  if (waiting.size() <= most) return;
  std::sort(waiting.begin(), waiting.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i + most < waiting.size(); ++i) waiting[i].second->Cancel();
}

size_t TerminalSessions::size() const {
  MutexLock lock(mu_);
  return running_.size();
}

void TerminalSessions::JoinFinished() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    threads.swap(finished_);
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace isb::api
