// A sandbox's own certificate authority: the proxy terminates TLS for names marked for interception with leaf
// certificates it signs, and the sandbox trusts it (its PEM goes into the sandbox's trust store) and nothing else
// trusts it. One EC P-256 key and a self-signed CA certificate, made in memory and never written anywhere by this
// class.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/result.h"
#include "egress/openssl_ptr.h"

namespace isb::egress {

// A CA lives as long as its sandbox may: sandbox_extend has no last day, and a CA that expired under a running
// sandbox would fail every intercepted connection, while a new one would be distrusted by every process that loaded
// the old trust store. Its key never leaves the daemon's memory and dies with it, and only its own sandbox trusts
// it, so the length adds nothing an attacker can use. Leaves stay short (kLeafValidity) and are minted again.
inline constexpr std::chrono::seconds kCaValidity = std::chrono::hours(24 * 3650);
inline constexpr std::chrono::seconds kLeafValidity = std::chrono::hours(24 * 7);

// A certificate and its private key, as a TLS server presents them.
struct TlsIdentity {
  X509Ptr cert;
  PkeyPtr key;
  std::chrono::system_clock::time_point not_after;
};

class SandboxCa {
 public:
  // A fresh key and CA certificate: subject and issuer "CN=isb sandbox CA <sandbox>", basicConstraints CA:TRUE and
  // keyUsage keyCertSign (both critical), valid from an hour ago (clock skew) for `validity`.
  static Result<std::unique_ptr<SandboxCa>> Create(const std::string& sandbox,
                                                   std::chrono::seconds validity = kCaValidity);

  // A leaf for `host` (a checked DNS name, as the ClientHello parser gives it): SAN dNSName `host`, EKU serverAuth,
  // CA:FALSE, a key of its own, valid for `validity` but never past the CA. Errors: kInvalidArgument for an empty
  // or over-long name, kInternal for OpenSSL failures.
  Result<TlsIdentity> Mint(const std::string& host, std::chrono::seconds validity = kLeafValidity) const;

  const std::string& pem() const { return pem_; }  // the CA certificate, PEM
  X509* cert() const { return cert_.get(); }
  std::chrono::system_clock::time_point not_after() const { return not_after_; }

 private:
  SandboxCa() = default;
  X509Ptr cert_;
  PkeyPtr key_;
  std::string pem_;
  std::chrono::system_clock::time_point not_after_;
};

}  // namespace isb::egress
