// The detached commands' ring and threads.
#include "daemon/sandbox_logs.h"

#include "base/utf8.h"

#include <algorithm>
#include <string>
#include <system_error>
#include <utility>

namespace isb::daemon {

using api::LogChunk;

namespace {

// Consecutive output of one stream joins the last record up to this size, so that a full ring drops a part of a
// record without moving much.
constexpr size_t kMaxRecordBytes = 64 << 10;

LogChunk::Kind KindOf(int stream) { return stream == 2 ? LogChunk::Kind::kStderr : LogChunk::Kind::kStdout; }

}  // namespace

LogRing::LogRing(size_t capacity, size_t max_records)
    : capacity_(std::max<size_t>(capacity, 1)), max_records_(std::max<size_t>(max_records, 1)) {}

void LogRing::Output(int log_id, int stream, std::string_view data) {
  // A character cut between two writes of a command's stream waits for its rest (or the command's end) here, so that
  // no other command's output or exit can fall inside it: the log holds whole characters of every command.
  const std::pair<int, int> key(log_id, stream);
  std::string joined;
  if (auto it = unfinished_.find(key); it != unfinished_.end()) {
    joined = std::move(it->second);
    joined.append(data);
    unfinished_.erase(it);
    data = joined;
  }
  if (const size_t tail = Utf8IncompleteTail(data); tail > 0) {
    unfinished_[key] = std::string(data.substr(data.size() - tail));
    data.remove_suffix(tail);
  }
  Append(log_id, stream, data);
}

void LogRing::Append(int log_id, int stream, std::string_view data) {
  if (data.empty()) return;
  // Only the last `capacity_` bytes can be kept: the rest is dropped as it comes, never copied.
  if (data.size() > capacity_) {
    const size_t skip = data.size() - capacity_;
    end_ += skip;
    data.remove_prefix(skip);
    // Everything held is older than what is kept of `data`: all of it goes too.
    while (!records_.empty()) DropFirst();
    dropped_bytes_ += skip;
    start_ = end_;
  }
  while (!data.empty()) {
    LogChunk* last = records_.empty() ? nullptr : &records_.back();
    if (last != nullptr && last->log_id == log_id && last->kind == KindOf(stream) &&
        last->data.size() < kMaxRecordBytes) {
      const size_t take = std::min(data.size(), kMaxRecordBytes - last->data.size());
      last->data.append(data.substr(0, take));
      end_ += take;
      data.remove_prefix(take);
      continue;
    }
    LogChunk c;
    c.cursor = end_;
    c.log_id = log_id;
    c.kind = KindOf(stream);
    const size_t take = std::min(data.size(), kMaxRecordBytes);
    c.data.assign(data.substr(0, take));
    end_ += take;
    data.remove_prefix(take);
    records_.push_back(std::move(c));
  }
  Trim();
}

void LogRing::Exit(int log_id, DetachedEnd end) {
  // What a command left unfinished goes in as it is, before its exit.
  for (int stream : {1, 2}) {
    if (auto it = unfinished_.find({log_id, stream}); it != unfinished_.end()) {
      const std::string rest = std::move(it->second);
      unfinished_.erase(it);
      Append(log_id, stream, rest);
    }
  }
  LogChunk c;
  c.cursor = end_++;
  c.log_id = log_id;
  c.kind = LogChunk::Kind::kExit;
  c.exit_code = end.exit_code;
  c.signal = end.signal;
  c.error = std::move(end.error);
  c.timed_out = end.timed_out;
  records_.push_back(std::move(c));
  Trim();
}

void LogRing::Trim() {
  while (!records_.empty() && (end_ - start_ > capacity_ || records_.size() > max_records_)) {
    const LogChunk& first = records_.front();
    const uint64_t over = end_ - start_ > capacity_ ? end_ - start_ - capacity_ : 0;
    if (first.kind != LogChunk::Kind::kExit && records_.size() <= max_records_ &&
        over < first.data.size() - front_dropped_) {
      // Only its oldest bytes go: skipped, not moved.
      front_dropped_ += over;
      start_ += over;
      dropped_bytes_ += over;
      return;
    }
    DropFirst();
  }
  if (records_.empty()) start_ = end_;
}

void LogRing::DropFirst() {
  const LogChunk& first = records_.front();
  const uint64_t left = Size(first) - front_dropped_;
  (first.kind == LogChunk::Kind::kExit ? dropped_exits_ : dropped_bytes_) += left;
  start_ += left;
  records_.pop_front();
  front_dropped_ = 0;
}

Result<api::LogRead> LogRing::Read(uint64_t after, size_t limit_bytes) const {
  if (after > end_)
    return Error::Of(Code::kInvalidArgument, "after: beyond the end of the log (" + std::to_string(end_) + ")");
  api::LogRead out;
  out.start = start_;
  out.end = end_;
  out.dropped = after < start_ ? start_ - after : 0;
  uint64_t at = std::max(after, start_);
  // The first record that holds a position at or after `at`.
  auto it = std::upper_bound(records_.begin(), records_.end(), at,
                             [](uint64_t pos, const LogChunk& c) { return pos < c.cursor; });
  if (it != records_.begin() && std::prev(it)->cursor + Size(*std::prev(it)) > at) --it;
  size_t bytes = 0;
  for (; it != records_.end(); ++it) {
    if (it->kind == LogChunk::Kind::kExit) {  // an exit counts toward no limit
      at = it->cursor + 1;
      out.chunks.push_back(*it);
      continue;
    }
    const size_t from = at > it->cursor ? at - it->cursor : 0;  // `after` falls inside it: only its rest
    size_t room = limit_bytes > bytes ? limit_bytes - bytes : 0;
    if (out.chunks.empty()) room = std::max<size_t>(room, 1);
    if (room == 0) break;
    const size_t rest = it->data.size() - from, take = std::min(rest, room);
    LogChunk& c = out.chunks.emplace_back();
    c.cursor = it->cursor + from;
    c.log_id = it->log_id;
    c.kind = it->kind;
    c.data.assign(it->data, from, take);
    bytes += take;
    at = c.cursor + take;
    if (take < rest) break;
  }
  out.next = at;
  return out;
}

Result<api::DetachedExec> DetachedExecs::Start(const std::string& sandbox, DetachedBody body) {
  JoinFinished();
  MutexLock lock(mu_);
  if (Stopping()) return Error::Of(Code::kUnavailable, "the daemon is shutting down");
  if (forgotten_.contains(sandbox)) return Error::Of(Code::kNotFound, "no sandbox '" + sandbox + "'");
  std::shared_ptr<Log>& slot = logs_[sandbox];
  if (!slot) slot = std::make_shared<Log>();
  std::shared_ptr<Log> log = slot;
  MutexLock log_lock(log->mu);
  if (log->running >= api::kMaxDetachedExecs)
    return Error::Of(Code::kConflict, "sandbox '" + sandbox + "' already runs " +
                                          std::to_string(api::kMaxDetachedExecs) +
                                          " detached commands, the most it may; wait for one to end, or stop the "
                                          "sandbox to end them all");
  if (running_total_ >= max_total_)
    return Error::Of(Code::kUnavailable, "the daemon runs " + std::to_string(max_total_) +
                                             " detached commands, the most it may at once; try again when one ends");
  ++log->running;
  ++running_total_;
  const int log_id = ++log->last_id;
  const uint64_t thread_id = next_thread_++;
  try {
    threads_[thread_id] = std::thread([this, log, log_id, thread_id, body = std::move(body)] {
      DetachedEnd end = body([&log, log_id](int stream, std::string_view data) {
        MutexLock l(log->mu);
        log->ring.Output(log_id, stream, data);
      });
      {
        MutexLock l(log->mu);
        log->ring.Exit(log_id, std::move(end));
        --log->running;
      }
      MutexLock l(mu_);
      --running_total_;
      finished_.push_back(thread_id);
    });
  } catch (const std::system_error& e) {
    // No thread (the daemon's task limit): the attempt takes no slot and no log id.
    threads_.erase(thread_id);
    --log->running;
    --running_total_;
    --log->last_id;
    return Error::Of(Code::kUnavailable, std::string("cannot start the detached command: ") + e.what());
  }
  return api::DetachedExec{log_id};
}

std::shared_ptr<DetachedExecs::Log> DetachedExecs::Find(const std::string& sandbox) {
  MutexLock lock(mu_);
  auto it = logs_.find(sandbox);
  return it == logs_.end() ? nullptr : it->second;
}

size_t DetachedExecs::Running(const std::string& sandbox) {
  std::shared_ptr<Log> log = Find(sandbox);
  if (!log) return 0;
  MutexLock lock(log->mu);
  return log->running;
}

Result<api::LogRead> DetachedExecs::Read(const std::string& sandbox, uint64_t after, size_t limit_bytes) {
  std::shared_ptr<Log> log = Find(sandbox);
  if (!log) return LogRing().Read(after, limit_bytes);
  MutexLock lock(log->mu);
  ISB_ASSIGN_OR_RETURN(api::LogRead out, log->ring.Read(after, limit_bytes));
  out.running = log->running;
  return out;
}

void DetachedExecs::Forget(const std::string& sandbox) {
  MutexLock lock(mu_);
  logs_.erase(sandbox);
  if (!forgotten_.insert(sandbox).second) return;
  forgotten_order_.push_back(sandbox);
  if (forgotten_order_.size() > kForgottenKept) {
    forgotten_.erase(forgotten_order_.front());
    forgotten_order_.pop_front();
  }
}

void DetachedExecs::JoinFinished() {
  std::vector<std::thread> done;
  {
    MutexLock lock(mu_);
    for (uint64_t id : finished_) {
      auto it = threads_.find(id);
      if (it == threads_.end()) continue;
      done.push_back(std::move(it->second));
      threads_.erase(it);
    }
    finished_.clear();
  }
  for (std::thread& t : done) t.join();
}

void DetachedExecs::StopAll() {
  stopping_ = true;
  std::vector<std::thread> all;
  {
    MutexLock lock(mu_);
    for (auto& [id, t] : threads_) all.push_back(std::move(t));
    threads_.clear();
    finished_.clear();
  }
  for (std::thread& t : all) t.join();
}

}  // namespace isb::daemon
