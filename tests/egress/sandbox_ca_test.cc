// The sandbox CA and its leaves, checked with OpenSSL's own chain verification, and the minter's cache.
#include "egress/sandbox_ca.h"

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <gtest/gtest.h>

#include "egress/cert_minter.h"

namespace isb::egress {
namespace {

std::string CommonName(X509_NAME* name) {
  char buf[256] = {};
  X509_NAME_get_text_by_NID(name, NID_commonName, buf, sizeof buf);
  return buf;
}

bool Critical(X509* cert, int nid) {
  int at = X509_get_ext_by_NID(cert, nid, -1);
  return at >= 0 && X509_EXTENSION_get_critical(X509_get_ext(cert, at)) == 1;
}

// X509_verify_cert of `leaf` against `ca` alone, for a TLS server called `host`; X509_V_OK or the error.
int Verify(X509* ca, X509* leaf, const std::string& host) {
  std::unique_ptr<X509_STORE, OpenSslFree<X509_STORE, X509_STORE_free>> store(X509_STORE_new());
  X509_STORE_add_cert(store.get(), ca);
  std::unique_ptr<X509_STORE_CTX, OpenSslFree<X509_STORE_CTX, X509_STORE_CTX_free>> ctx(X509_STORE_CTX_new());
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER);
  X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx.get()), host.c_str(), host.size());
  return X509_verify_cert(ctx.get()) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx.get());
}

std::vector<std::string> DnsNames(X509* cert) {
  std::vector<std::string> out;
  auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    int type = 0;
    auto* value = static_cast<ASN1_STRING*>(GENERAL_NAME_get0_value(n, &type));
    out.push_back((type == GEN_DNS ? "DNS:" : "other:") +
                  std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)), ASN1_STRING_length(value)));
  }
  GENERAL_NAMES_free(names);
  return out;
}

long long SecondsValid(X509* cert) {
  int days = 0, seconds = 0;
  ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(cert), X509_get0_notAfter(cert));
  return days * 86400LL + seconds;
}

TEST(SandboxCa, IsASelfSignedP256CaCertificateForTheSandboxAndItsPemIsThatCertificate) {
  Result<std::unique_ptr<SandboxCa>> ca = SandboxCa::Create("sb-1");
  ASSERT_TRUE(ca.ok()) << ca.error().message;
  X509* cert = (*ca)->cert();
  EXPECT_EQ(CommonName(X509_get_subject_name(cert)), "isb sandbox CA sb-1");
  EXPECT_EQ(X509_check_issued(cert, cert), X509_V_OK);
  EXPECT_EQ(X509_check_ca(cert), 1);
  EXPECT_TRUE(Critical(cert, NID_basic_constraints));
  EXPECT_TRUE(Critical(cert, NID_key_usage));
  EXPECT_EQ(X509_get_key_usage(cert), static_cast<uint32_t>(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  EVP_PKEY* key = X509_get0_pubkey(cert);
  EXPECT_TRUE(EVP_PKEY_is_a(key, "EC"));
  char group[64] = {};
  size_t len = 0;
  EVP_PKEY_get_group_name(key, group, sizeof group, &len);
  EXPECT_STREQ(group, "prime256v1");
  // Ten years (a sandbox can be extended without end), counted from an hour back for clock skew.
  EXPECT_EQ(SecondsValid(cert), 3650 * 86400LL + 3600);

  const std::string& pem = (*ca)->pem();
  ASSERT_TRUE(pem.starts_with("-----BEGIN CERTIFICATE-----\n"));
  std::unique_ptr<BIO, OpenSslFree<BIO, BIO_free_all>> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr back(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  ASSERT_TRUE(back);
  EXPECT_EQ(X509_cmp(back.get(), cert), 0);
}

TEST(SandboxCa, ALeafVerifiesUnderItsCaForItsNameOnlyAsAServerCertificate) {
  auto ca = SandboxCa::Create("sb-1");
  auto other = SandboxCa::Create("sb-2");
  ASSERT_TRUE(ca.ok() && other.ok());
  Result<TlsIdentity> leaf = (*ca)->Mint("api.example.com");
  ASSERT_TRUE(leaf.ok()) << leaf.error().message;
  X509* cert = leaf->cert.get();
  EXPECT_EQ(Verify((*ca)->cert(), cert, "api.example.com"), X509_V_OK);
  EXPECT_EQ(Verify((*ca)->cert(), cert, "other.example.com"), X509_V_ERR_HOSTNAME_MISMATCH);
  EXPECT_EQ(Verify((*other)->cert(), cert, "api.example.com"), X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  EXPECT_EQ(DnsNames(cert), std::vector<std::string>{"DNS:api.example.com"});
  EXPECT_EQ(CommonName(X509_get_subject_name(cert)), "api.example.com");
  EXPECT_EQ(CommonName(X509_get_issuer_name(cert)), "isb sandbox CA sb-1");
  EXPECT_EQ(X509_get_extended_key_usage(cert), static_cast<uint32_t>(XKU_SSL_SERVER));
  EXPECT_EQ(X509_check_ca(cert), 0);
  EXPECT_TRUE(Critical(cert, NID_basic_constraints));
  EXPECT_EQ(X509_check_private_key(cert, leaf->key.get()), 1);
  EXPECT_EQ(SecondsValid(cert), 7 * 86400LL + 3600);
}

TEST(SandboxCa, ALeafNeverOutlivesItsCa) {
  auto ca = SandboxCa::Create("sb-1", std::chrono::hours(2));
  ASSERT_TRUE(ca.ok());
  auto leaf = (*ca)->Mint("a.example");
  ASSERT_TRUE(leaf.ok());
  EXPECT_EQ(ASN1_TIME_compare(X509_get0_notAfter(leaf->cert.get()), X509_get0_notAfter((*ca)->cert())), 0);
}

TEST(SandboxCa, ANameThatIsNotADnsHostNameGetsNoCertificate) {
  auto ca = SandboxCa::Create("sb-1");
  ASSERT_TRUE(ca.ok());
  for (std::string bad : {std::string(), std::string("a.example,DNS:evil.example"), std::string("a b"),
                          std::string(254, 'a'), std::string("a\0b", 3)}) {
    Result<TlsIdentity> leaf = (*ca)->Mint(bad);
    ASSERT_FALSE(leaf.ok()) << bad;
    EXPECT_EQ(leaf.error().code, Code::kInvalidArgument);
    EXPECT_EQ(leaf.error().message, "cannot mint a certificate for a name that is not a DNS host name");
  }
  // A long name is fine; it just has no common name.
  std::string longest = std::string(63, 'a') + "." + std::string(63, 'b') + ".example";
  auto leaf = (*ca)->Mint(longest);
  ASSERT_TRUE(leaf.ok());
  EXPECT_EQ(CommonName(X509_get_subject_name(leaf->cert.get())), "");
  EXPECT_EQ(Verify((*ca)->cert(), leaf->cert.get(), longest), X509_V_OK);
}

TEST(CertMinter, CachesLeavesPerSandboxAndNameWithinItsBoundAndForgetsASandbox) {
  CertMinterOptions o;
  o.max_leaves = 2;
  CertMinter minter(o);
  auto a1 = minter.Leaf("sb-1", "a.example");
  auto a1_again = minter.Leaf("sb-1", "a.example");
  auto a2 = minter.Leaf("sb-2", "a.example");
  ASSERT_TRUE(a1.ok() && a1_again.ok() && a2.ok());
  EXPECT_EQ(a1->get(), a1_again->get());
  EXPECT_NE(a1->get(), a2->get());
  EXPECT_EQ(CommonName(X509_get_issuer_name((*a2)->cert.get())), "isb sandbox CA sb-2");
  EXPECT_EQ(minter.cached_leaves(), 2u);

  // A third leaf pushes out the least recently used (sb-1's), which is minted afresh next time.
  auto b1 = minter.Leaf("sb-1", "b.example");
  ASSERT_TRUE(b1.ok());
  EXPECT_EQ(minter.cached_leaves(), 2u);
  auto a1_later = minter.Leaf("sb-1", "a.example");
  ASSERT_TRUE(a1_later.ok());
  EXPECT_NE(a1_later->get(), a1->get());

  Result<std::string> pem = minter.CaPem("sb-1");
  ASSERT_TRUE(pem.ok());
  EXPECT_EQ(*minter.CaPem("sb-1"), *pem);
  minter.Forget("sb-1");
  EXPECT_EQ(minter.cached_leaves(), 0u) << "sb-2's leaf went out of the bound before; sb-1's with it";
  EXPECT_NE(*minter.CaPem("sb-1"), *pem);
}

}  // namespace
}  // namespace isb::egress
