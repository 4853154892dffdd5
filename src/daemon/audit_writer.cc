// The audit writer: a bounded queue of rows and the thread that appends them.
#include "daemon/audit_writer.h"

#include <cstdio>

namespace isb::daemon {

AuditWriter::AuditWriter(Sink sink) : sink_(std::move(sink)) { thread_ = std::thread([this] { Loop(); }); }

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

void AuditWriter::Queue(audit::Entry entry) {
  {
    MutexLock lock(mu_);
    if (queue_.size() >= kMaxQueued) {
      if (dropped_++ == 0)
        std::fprintf(stderr, "isb: audit: the proxy's rows are written slower than they come; %zu are waiting, and "
                     "the ones past that are dropped (and counted)\n", kMaxQueued);
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
  while (written_ < target) cv_.Wait(mu_);
}

uint64_t AuditWriter::dropped() const {
  MutexLock lock(mu_);
  return dropped_;
}

void AuditWriter::Loop() {
  MutexLock lock(mu_);
  while (true) {
    while (!done_ && queue_.empty()) cv_.Wait(mu_);
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
