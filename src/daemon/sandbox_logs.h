// A sandbox's log: the output and exits of its detached commands in a bounded ring (LogRing), and the commands
// themselves, each on a thread of its own (DetachedExecs).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "api/sandboxes.h"
#include "base/mutex.h"
#include "base/result.h"

namespace isb::daemon {

// How a detached command ended: its status, or -1 and why it has none.
struct DetachedEnd {
  int exit_code = -1;
  int signal = 0;
  std::string error{};
  bool timed_out = false;  // killed at its timeout
};

// What a sandbox's detached commands wrote and how they ended, in order, as positions from 0: each output byte takes
// one, each exit one more. At most `capacity` positions are kept (the oldest go first, an output chunk in part), in
// at most `max_records` records (consecutive output of one command's stream shares one). Dropping costs as much as
// what goes, never a move of what stays. Not thread-safe.
class LogRing {
 public:
  explicit LogRing(size_t capacity = api::kLogRingBytes, size_t max_records = 16384);

  // `stream`: 1 stdout, 2 stderr. The last 1 to 3 bytes of `data` that begin a UTF-8 character not yet complete are
  // held until the command's next output on that stream completes it, or its Exit: the log never has a character of
  // one command cut by another record.
  void Output(int log_id, int stream, std::string_view data);
  void Exit(int log_id, DetachedEnd end);
  // What follows `after`: at most `limit_bytes` of output, but at least one chunk when any follows (a chunk longer
  // than the limit is cut to it). kInvalidArgument for an `after` beyond end().
  Result<api::LogRead> Read(uint64_t after, size_t limit_bytes) const;

  uint64_t start() const { return start_; }  // the oldest position kept
  uint64_t end() const { return end_; }      // the next position written
  // Positions dropped so far (start()), of them output bytes and exits.
  uint64_t dropped_bytes() const { return dropped_bytes_; }
  uint64_t dropped_exits() const { return dropped_exits_; }

 private:
  static uint64_t Size(const api::LogChunk& c) { return c.kind == api::LogChunk::Kind::kExit ? 1 : c.data.size(); }
  // `data` as records, with no holding back.
  void Append(int log_id, int stream, std::string_view data);
  // Drops the oldest until the ring is within its bounds.
  void Trim();
  // Drops the first record, what is left of it.
  void DropFirst();

  const size_t capacity_, max_records_;
  // Each record as it was written: the first one's oldest `front_dropped_` bytes are dropped already (skipped by
  // reads, freed with the record), so that a full ring never moves what it keeps.
  std::deque<api::LogChunk> records_;
  size_t front_dropped_ = 0;
  uint64_t start_ = 0, end_ = 0;
  uint64_t dropped_bytes_ = 0, dropped_exits_ = 0;
  std::map<std::pair<int, int>, std::string> unfinished_;  // (log id, stream): a character's first bytes
};

// Runs the command, giving its output to `output` (stream 1 or 2) as it comes; returns once it has ended.
using DetachedBody = std::function<DetachedEnd(const std::function<void(int stream, std::string_view data)>& output)>;

// Every sandbox's detached commands and log. Thread-safe. The destructor stops every command (StopAll).
class DetachedExecs {
 public:
  // At most `max_total` detached commands run in the daemon at once, every sandbox's together.
  explicit DetachedExecs(size_t max_total = kMaxDetachedTotal) : max_total_(max_total) {}
  static constexpr size_t kMaxDetachedTotal = 1024;
  ~DetachedExecs() { StopAll(); }
  DetachedExecs(const DetachedExecs&) = delete;
  DetachedExecs& operator=(const DetachedExecs&) = delete;

  // Runs `body` on a thread of its own, logging its output and its end in `sandbox`'s ring. kNotFound for a
  // sandbox forgotten (removed) meanwhile, which gets no log again; kConflict when api::kMaxDetachedExecs of the
  // sandbox's run already; kUnavailable when `max_total` run in the daemon, or no thread could be started (then
  // nothing of the attempt is left).
  Result<api::DetachedExec> Start(const std::string& sandbox, DetachedBody body);
  // How many of `sandbox`'s detached commands run now (for the idle reaper: a running one is activity).
  size_t Running(const std::string& sandbox);
  // `sandbox`'s log (an empty one when it has none) and how many of its commands run.
  Result<api::LogRead> Read(const std::string& sandbox, uint64_t after, size_t limit_bytes);
  // The sandbox is removed: its log goes (commands still ending write to nothing), and a Start that raced the
  // removal is refused. The last kForgottenKept forgotten are remembered for that (a caller's Start follows its
  // check that the sandbox exists at once; the manager also holds the sandbox's lock across both).
  void Forget(const std::string& sandbox);
  static constexpr size_t kForgottenKept = 4096;
  // True once StopAll began: a body's command is to end (its exec's `cancelled`).
  bool Stopping() const { return stopping_.load(); }
  // Tells every body to stop and waits for their threads.
  void StopAll();

 private:
  // One sandbox's log, under a lock of its own: a command's output waits for no other sandbox's reads and writes.
  // Taken after mu_ when both are held.
  struct Log {
    Mutex mu;
    LogRing ring ISB_GUARDED_BY(mu);
    size_t running ISB_GUARDED_BY(mu) = 0;
    int last_id ISB_GUARDED_BY(mu) = 0;
  };
  // Joins the threads whose bodies have returned.
  void JoinFinished();
  // `sandbox`'s log, or null when it has none.
  std::shared_ptr<Log> Find(const std::string& sandbox) ISB_EXCLUDES(mu_);

  const size_t max_total_;
  std::atomic<bool> stopping_{false};
  // The map of logs and the daemon's counts; held briefly, never while a log is copied.
  Mutex mu_;
  size_t running_total_ ISB_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<Log>> logs_ ISB_GUARDED_BY(mu_);
  std::set<std::string> forgotten_ ISB_GUARDED_BY(mu_);
  std::deque<std::string> forgotten_order_ ISB_GUARDED_BY(mu_);  // oldest first, to bound forgotten_
  uint64_t next_thread_ ISB_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::thread> threads_ ISB_GUARDED_BY(mu_);
  std::vector<uint64_t> finished_ ISB_GUARDED_BY(mu_);
};

}  // namespace isb::daemon
