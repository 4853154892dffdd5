// The sandboxes' CAs and the leaf certificates minted from them, made on first use and cached: one CA per sandbox
// (until Forget), leaves per (sandbox, name) in a bounded least-recently-used cache, re-minted before they expire.
// Safe to call from any thread.
#pragma once

#include <chrono>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "base/mutex.h"
#include "base/result.h"
#include "egress/sandbox_ca.h"

namespace isb::egress {

struct CertMinterOptions {
  size_t max_leaves = 4096;  // across all sandboxes
  std::chrono::seconds ca_validity = kCaValidity;
  std::chrono::seconds leaf_validity = kLeafValidity;
};

class CertMinter {
 public:
  explicit CertMinter(CertMinterOptions options = {}) : options_(options) {}

  // The sandbox's CA certificate as PEM, for its trust store; the CA is made now if it is not yet.
  Result<std::string> CaPem(const std::string& sandbox);
  // The leaf for `host` signed by the sandbox's CA (SandboxCa::Mint's errors).
  Result<std::shared_ptr<const TlsIdentity>> Leaf(const std::string& sandbox, const std::string& host);
  // The sandbox is gone: its CA and its leaves are dropped.
  void Forget(const std::string& sandbox);

  size_t cached_leaves() const;

 private:
  using Key = std::pair<std::string, std::string>;  // sandbox, host
  Result<std::shared_ptr<const SandboxCa>> CaLocked(const std::string& sandbox) ISB_REQUIRES(mu_);

  CertMinterOptions options_;
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<const SandboxCa>> cas_ ISB_GUARDED_BY(mu_);
  std::list<Key> lru_ ISB_GUARDED_BY(mu_);  // most recently used first
  struct Cached {
    std::shared_ptr<const TlsIdentity> leaf;
    std::list<Key>::iterator position;
  };
  std::map<Key, Cached> leaves_ ISB_GUARDED_BY(mu_);
};

}  // namespace isb::egress
