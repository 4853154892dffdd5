#include "egress/cert_minter.h"

namespace isb::egress {

namespace {
// A cached leaf this close to its end is minted again, so no handshake presents one about to expire.
constexpr std::chrono::hours kRenewBefore{1};
}  // namespace

Result<std::shared_ptr<const SandboxCa>> CertMinter::CaLocked(const std::string& sandbox) {
  auto it = cas_.find(sandbox);
  // Never replaced while the sandbox lives: its trust store holds this one.
  if (it != cas_.end()) return it->second;
  ISB_ASSIGN_OR_RETURN(std::unique_ptr<SandboxCa> ca, SandboxCa::Create(sandbox, options_.ca_validity));
  std::shared_ptr<const SandboxCa> shared = std::move(ca);
  cas_[sandbox] = shared;
  return shared;
}

Result<std::string> CertMinter::CaPem(const std::string& sandbox) {
  MutexLock lock(mu_);
  ISB_ASSIGN_OR_RETURN(std::shared_ptr<const SandboxCa> ca, CaLocked(sandbox));
  return ca->pem();
}

Result<std::shared_ptr<const TlsIdentity>> CertMinter::Leaf(const std::string& sandbox, const std::string& host) {
  MutexLock lock(mu_);
  Key key{sandbox, host};
  auto it = leaves_.find(key);
  if (it != leaves_.end()) {
    if (it->second.leaf->not_after - std::chrono::system_clock::now() > kRenewBefore) {
      lru_.splice(lru_.begin(), lru_, it->second.position);
      return it->second.leaf;
    }
    lru_.erase(it->second.position);
    leaves_.erase(it);
  }
  ISB_ASSIGN_OR_RETURN(std::shared_ptr<const SandboxCa> ca, CaLocked(sandbox));
  ISB_ASSIGN_OR_RETURN(TlsIdentity minted, ca->Mint(host, options_.leaf_validity));
  auto leaf = std::make_shared<const TlsIdentity>(std::move(minted));
  while (!lru_.empty() && leaves_.size() >= options_.max_leaves) {
    leaves_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(key);
  leaves_[key] = Cached{leaf, lru_.begin()};
  return std::shared_ptr<const TlsIdentity>(leaf);
}

void CertMinter::Forget(const std::string& sandbox) {
  MutexLock lock(mu_);
  cas_.erase(sandbox);
  for (auto it = leaves_.begin(); it != leaves_.end();) {
    if (it->first.first == sandbox) {
      lru_.erase(it->second.position);
      it = leaves_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t CertMinter::cached_leaves() const {
  MutexLock lock(mu_);
  return leaves_.size();
}

}  // namespace isb::egress
