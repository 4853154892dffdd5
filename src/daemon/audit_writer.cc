// The audit writer: a bounded queue of rows and the thread that appends them.
#include "daemon/audit_writer.h"

#include <cstdio>

namespace isb::daemon {

AuditWriter::AuditWriter(Sink sink) : sink_(std::move(sink)) {
  thread_ = std::thread([this] { Loop(); });
}

AuditWriter::AuditWriter(audit::AuditLog* log)
    : AuditWriter([log](const audit::Entry& e) -> Status {
        ISB_TRY(log->Append(e));
        return {};
      }) {}

AuditWriter::~AuditWriter() {
  {
    MutexLock lock(mu_);
    done_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void AuditWriter::Queue(audit::Entry entry, Overflow overflow) {
  {
    MutexLock lock(mu_);
    if (queue_.size() >= kMaxQueued && overflow == Overflow::kDrop) {
      ++unreported_;
      if (dropped_++ == 0)
        std::fprintf(stderr,
                     "isb: audit: the proxy's rows are written slower than they come; %zu are waiting, and "
                     "the ones past that are dropped (and counted)\n",
                     kMaxQueued);
      return;
    }
    queue_.push_back(std::move(entry));
    ++queued_;
  }
  cv_.NotifyAll();
}

void AuditWriter::Drain() {
  MutexLock lock(mu_);
  const uint64_t target = queued_;
  while (written_ < target || unreported_ > 0 || reporting_) cv_.Wait(mu_);
}

uint64_t AuditWriter::dropped() const {
  MutexLock lock(mu_);
  return dropped_;
}

audit::Entry AuditWriter::DroppedRow(uint64_t count) {
  audit::Entry e;
  e.actor = "isb";
  e.actor_kind = "system";
  e.surface = "egress";
  e.action = "audit_rows_dropped";
  e.target = "audit";
  e.outcome = "unavailable";
  e.details = {{"dropped", count},
               {"why", "the proxy's rows came faster than the audit log took them; secret_use rows went"}};
  return e;
}

void AuditWriter::Loop() {
  MutexLock lock(mu_);
  while (true) {
    while (!done_ && queue_.empty() && unreported_ == 0) cv_.Wait(mu_);
    if (queue_.empty() && unreported_ > 0) {
      // Said once the queue drained, so the count is of a whole stall.
      const uint64_t count = unreported_;
      unreported_ = 0;
      reporting_ = true;
      lock.Unlock();
      if (Status st = sink_(DroppedRow(count)); !st.ok())
        std::fprintf(stderr, "isb: audit: the row saying %llu rows were dropped was not recorded: %s\n",
                     static_cast<unsigned long long>(count), st.error().message.c_str());
      lock.Lock();
      reporting_ = false;
      cv_.NotifyAll();
      continue;
    }
    if (queue_.empty()) return;  // done, and everything written
    audit::Entry entry = std::move(queue_.front());
    queue_.pop_front();
    lock.Unlock();
    if (Status st = sink_(entry); !st.ok())
      std::fprintf(stderr, "isb: audit: a %s row of %s was not recorded: %s\n", entry.action.c_str(),
                   entry.target.c_str(), st.error().message.c_str());
    lock.Lock();
    ++written_;
    cv_.NotifyAll();
  }
}

}  // namespace isb::daemon
