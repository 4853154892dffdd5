// Certificates built with OpenSSL's X509 API; the subject alternative name is built as an ASN.1 value, never from
// a configuration string, so no byte of a host name is interpreted.
#include "egress/sandbox_ca.h"

#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <algorithm>

#include "base/random.h"

namespace isb::egress {
namespace {

using Clock = std::chrono::system_clock;

Result<PkeyPtr> NewKey() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return Error::Msg(OpenSslError("generating an EC P-256 key"));
  return key;
}

Status SetSerial(X509* cert) {
  unsigned char bytes[16];
  ISB_TRY(RandomBytes(bytes, sizeof bytes));
  bytes[0] = static_cast<unsigned char>((bytes[0] & 0x7f) | 0x40);  // positive, 16 bytes long
  std::unique_ptr<BIGNUM, OpenSslFree<BIGNUM, BN_free>> bn(BN_bin2bn(bytes, sizeof bytes, nullptr));
  if (!bn || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert)) == nullptr)
    return Error::Msg(OpenSslError("setting a certificate serial number"));
  return {};
}

Status SetCommonName(X509_NAME* name, const std::string& cn) {
  if (X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.data()),
                                 static_cast<int>(cn.size()), -1, 0) != 1)
    return Error::Msg(OpenSslError("setting a certificate name"));
  return {};
}

// An extension from OpenSSL's text form; `value` is always a constant of this file.
Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, OpenSslFree<X509_EXTENSION, X509_EXTENSION_free>> ext(
      X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) return Error::Msg(OpenSslError("adding a certificate extension"));
  return {};
}

Status AddDnsName(X509* cert, const std::string& host) {
  GENERAL_NAMES* names = sk_GENERAL_NAME_new_null();
  GENERAL_NAME* name = GENERAL_NAME_new();
  ASN1_IA5STRING* ia5 = ASN1_IA5STRING_new();
  bool ok = names != nullptr && name != nullptr && ia5 != nullptr &&
            ASN1_STRING_set(ia5, host.data(), static_cast<int>(host.size())) == 1;
  if (ok) {
    GENERAL_NAME_set0_value(name, GEN_DNS, ia5);
    ia5 = nullptr;
    ok = sk_GENERAL_NAME_push(names, name) > 0;
    if (ok) name = nullptr;
  }
  ok = ok && X509_add1_ext_i2d(cert, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT) == 1;
  ASN1_IA5STRING_free(ia5);
  GENERAL_NAME_free(name);
  GENERAL_NAMES_free(names);
  if (!ok) return Error::Msg(OpenSslError("adding the subject alternative name"));
  return {};
}

// A version 3 certificate with a random serial, `key`'s public half and the validity period.
Result<X509Ptr> NewCertificate(EVP_PKEY* key, Clock::time_point from, Clock::time_point to) {
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1 || X509_set_pubkey(cert.get(), key) != 1)
    return Error::Msg(OpenSslError("making a certificate"));
  ISB_TRY(SetSerial(cert.get()));
  if (ASN1_TIME_set(X509_getm_notBefore(cert.get()), Clock::to_time_t(from)) == nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(cert.get()), Clock::to_time_t(to)) == nullptr)
    return Error::Msg(OpenSslError("setting a certificate's validity"));
  return cert;
}

bool DnsNameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

}  // namespace

Result<std::unique_ptr<SandboxCa>> SandboxCa::Create(const std::string& sandbox, std::chrono::seconds validity) {
  std::unique_ptr<SandboxCa> ca(new SandboxCa());
  ISB_ASSIGN_OR_RETURN(ca->key_, NewKey());
  Clock::time_point now = Clock::now();
  ca->not_after_ = now + validity;
  ISB_ASSIGN_OR_RETURN(ca->cert_, NewCertificate(ca->key_.get(), now - std::chrono::hours(1), ca->not_after_));
  X509* cert = ca->cert_.get();
  ISB_TRY(SetCommonName(X509_get_subject_name(cert), "isb sandbox CA " + sandbox));
  if (X509_set_issuer_name(cert, X509_get_subject_name(cert)) != 1)
    return Error::Msg(OpenSslError("setting the issuer"));
  ISB_TRY(AddExtension(cert, cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  ISB_TRY(AddExtension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign"));
  ISB_TRY(AddExtension(cert, cert, NID_subject_key_identifier, "hash"));
  ISB_TRY(AddExtension(cert, cert, NID_authority_key_identifier, "keyid:always"));
  if (X509_sign(cert, ca->key_.get(), EVP_sha256()) == 0) return Error::Msg(OpenSslError("signing the sandbox CA"));
  std::unique_ptr<BIO, OpenSslFree<BIO, BIO_free_all>> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1)
    return Error::Msg(OpenSslError("writing the sandbox CA as PEM"));
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  ca->pem_.assign(data, static_cast<size_t>(size));
  return ca;
}

Result<TlsIdentity> SandboxCa::Mint(const std::string& host, std::chrono::seconds validity) const {
  if (host.empty() || host.size() > 253 || !std::all_of(host.begin(), host.end(), DnsNameByte))
    return Error::Of(Code::kInvalidArgument, "cannot mint a certificate for a name that is not a DNS host name");
  TlsIdentity leaf;
  ISB_ASSIGN_OR_RETURN(leaf.key, NewKey());
  Clock::time_point now = Clock::now();
  leaf.not_after = std::min(now + validity, not_after_);
  ISB_ASSIGN_OR_RETURN(leaf.cert, NewCertificate(leaf.key.get(), now - std::chrono::hours(1), leaf.not_after));
  X509* cert = leaf.cert.get();
  // The common name is at most 64 bytes; the SAN is what clients check, so a longer name goes without one.
  if (host.size() <= 64) ISB_TRY(SetCommonName(X509_get_subject_name(cert), host));
  if (X509_set_issuer_name(cert, X509_get_subject_name(cert_.get())) != 1)
    return Error::Msg(OpenSslError("setting the issuer"));
  ISB_TRY(AddExtension(cert, cert_.get(), NID_basic_constraints, "critical,CA:FALSE"));
  ISB_TRY(AddExtension(cert, cert_.get(), NID_key_usage, "critical,digitalSignature"));
  ISB_TRY(AddExtension(cert, cert_.get(), NID_ext_key_usage, "serverAuth"));
  ISB_TRY(AddExtension(cert, cert_.get(), NID_subject_key_identifier, "hash"));
  ISB_TRY(AddExtension(cert, cert_.get(), NID_authority_key_identifier, "keyid:always"));
  ISB_TRY(AddDnsName(cert, host));
  if (X509_sign(cert, key_.get(), EVP_sha256()) == 0) return Error::Msg(OpenSslError("signing a leaf certificate"));
  return leaf;
}

}  // namespace isb::egress
