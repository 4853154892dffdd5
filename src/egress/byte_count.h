// Where a relay adds the bytes it moves: a total (the proxy's, or the preview proxy's) and, when the connection's
// sandbox is known, that sandbox's own count beside it (sandbox_traffic.h).
#pragma once

#include <atomic>
#include <cstdint>

namespace isb::egress {

// Two relaxed atomic adds a chunk, no lock: the sandbox's counter is looked up once, when its connection starts.
// Copyable; the counters it names outlive it.
class ByteCount {
 public:
  // Implicit: a relay that counts only a total (the preview proxy's) passes its atomic as it is.
  ByteCount(std::atomic<uint64_t>& total, std::atomic<uint64_t>* sandbox = nullptr)  // NOLINT: implicit by design
      : total_(&total), sandbox_(sandbox) {}

  void Add(uint64_t n) const {
    total_->fetch_add(n, std::memory_order_relaxed);
    if (sandbox_ != nullptr) sandbox_->fetch_add(n, std::memory_order_relaxed);
  }

 private:
  std::atomic<uint64_t>* total_;
  std::atomic<uint64_t>* sandbox_;
};

}  // namespace isb::egress
