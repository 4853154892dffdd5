// ClientHello parsing: real hellos from openssl and curl (captured fixtures and live ones from a loopback listener),
// every truncation, every re-fragmentation, and hand-built malformed hellos with their exact reasons.
#include "egress/client_hello.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "net/loopback.h"

namespace isb::egress {
namespace {

HelloResult Parse(const std::string& bytes) {
  return ParseClientHello({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
}

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(ISB_WIRE_TESTDATA) + "/" + name + ".hex");
  std::stringstream hex;
  hex << in.rdbuf();
  std::string bytes, digits;
  for (char c : hex.str()) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) continue;
    digits += c;
    if (digits.size() == 2) {
      bytes += static_cast<char>(std::stoi(digits, nullptr, 16));
      digits.clear();
    }
  }
  EXPECT_FALSE(bytes.empty()) << name;
  return bytes;
}

std::string U8(size_t v) { return std::string(1, static_cast<char>(v)); }
std::string U16(size_t v) { return U8(v >> 8) + U8(v & 0xff); }
std::string U24(size_t v) { return U8(v >> 16) + U16(v & 0xffff); }

std::string Ext(uint16_t type, const std::string& data) { return U16(type) + U16(data.size()) + data; }
std::string SniEntry(const std::string& name, uint8_t type = 0) { return U8(type) + U16(name.size()) + name; }
std::string SniExt(const std::string& entries) { return Ext(0, U16(entries.size()) + entries); }
std::string Sni(const std::string& name) { return SniExt(SniEntry(name)); }

// A ClientHello body: TLS 1.2 legacy version, zero random, no session id, one suite, null compression.
std::string Body(const std::string& extensions) {
  return U16(0x0303) + std::string(32, '\0') + U8(0) + U16(2) + U16(0x1301) + U8(1) + U8(0) + U16(extensions.size()) +
         extensions;
}
std::string Handshake(const std::string& body, uint8_t type = 1) { return U8(type) + U24(body.size()) + body; }
// `message` as handshake records of at most `fragment` bytes each.
std::string Records(const std::string& message, size_t fragment = 16384) {
  std::string out;
  for (size_t at = 0; at < message.size(); at += fragment) {
    std::string part = message.substr(at, fragment);
    out += "\x16\x03\x01" + U16(part.size()) + part;
  }
  return out;
}
std::string Hello(const std::string& extensions) { return Records(Handshake(Body(extensions))); }

void ExpectMalformed(const std::string& bytes, const std::string& reason) {
  HelloResult r = Parse(bytes);
  EXPECT_EQ(r.kind, HelloResult::kMalformed) << reason;
  EXPECT_EQ(r.reason, reason);
  EXPECT_EQ(r.hello.sni, "");
}

struct RealHello {
  const char* file;
  const char* sni;
  std::vector<std::string> alpn;
};

std::vector<std::string> ManyProtocols() {
  std::vector<std::string> out;
  char name[16];
  for (int i = 0; i < 60; ++i) {
    std::snprintf(name, sizeof name, "proto-%03d", i);
    out.emplace_back(name);
  }
  return out;
}

const std::vector<RealHello>& RealHellos() {
  static const std::vector<RealHello> hellos = {
      {"openssl_sni_alpn", "example.com", {"h2", "http/1.1"}},  // sent as Example.COM
      {"openssl_tls12_nosni", "", {}},
      {"openssl_split", "split.example.com", ManyProtocols()},  // two records of 512 and 412 bytes
      {"curl_https", "api.example.org", {"h2", "http/1.1"}},
      {"curl_http11", "www.example.net", {"http/1.1"}},
  };
  return hellos;
}

TEST(ClientHelloTest, ParsesRealHellos) {
  for (const RealHello& real : RealHellos()) {
    std::string bytes = Fixture(real.file);
    HelloResult r = Parse(bytes);
    ASSERT_EQ(r.kind, HelloResult::kParsed) << real.file << ": " << r.reason;
    EXPECT_EQ(r.seen, bytes.size()) << real.file;
    EXPECT_EQ(r.hello.sni, real.sni) << real.file;
    EXPECT_EQ(r.hello.alpn, real.alpn) << real.file;
    EXPECT_EQ(r.hello.legacy_version, 0x0303) << real.file;
    std::vector<uint16_t> tls13 = {0x0304, 0x0303, 0x0302, 0x0301};
    EXPECT_EQ(r.hello.supported_versions,
              real.file == std::string("openssl_tls12_nosni") ? std::vector<uint16_t>{} : tls13)
        << real.file;
    EXPECT_FALSE(r.hello.ech) << real.file;
  }
}

TEST(ClientHelloTest, EveryTruncationNeedsMore) {
  for (const RealHello& real : RealHellos()) {
    std::string bytes = Fixture(real.file);
    for (size_t n = 0; n < bytes.size(); ++n) {
      HelloResult r = Parse(bytes.substr(0, n));
      ASSERT_EQ(r.kind, HelloResult::kNeedMore) << real.file << " cut at " << n << ": " << r.reason;
      ASSERT_EQ(r.seen, n);
    }
  }
}

TEST(ClientHelloTest, AnyFragmentationParsesTheSame) {
  for (const RealHello& real : RealHellos()) {
    std::string bytes = Fixture(real.file);
    HelloResult whole = Parse(bytes);
    ASSERT_EQ(whole.kind, HelloResult::kParsed);
    // Reassemble the handshake message, then cut it into records of every size from 1 byte up.
    std::string message;
    for (size_t at = 0; at + 5 <= bytes.size();) {
      size_t len = static_cast<uint8_t>(bytes[at + 3]) << 8 | static_cast<uint8_t>(bytes[at + 4]);
      message += bytes.substr(at + 5, len);
      at += 5 + len;
    }
    for (size_t fragment : {1, 2, 3, 4, 5, 7, 64, 100, 511, 4096}) {
      std::string split = Records(message, fragment);
      HelloResult r = Parse(split);
      ASSERT_EQ(r.kind, HelloResult::kParsed) << real.file << " in " << fragment << "-byte records";
      EXPECT_EQ(r.seen, split.size());
      EXPECT_EQ(r.hello.sni, whole.hello.sni);
      EXPECT_EQ(r.hello.alpn, whole.hello.alpn);
      EXPECT_EQ(r.hello.supported_versions, whole.hello.supported_versions);
    }
  }
}

TEST(ClientHelloTest, StopsAtTheEndOfTheHello) {
  std::string bytes = Fixture("curl_https");
  HelloResult r = Parse(bytes + "\x14\x03\x03" + U16(1) + "\x01" + "\x17\x03\x03" + U16(3) + "abc");
  ASSERT_EQ(r.kind, HelloResult::kParsed);
  EXPECT_EQ(r.seen, bytes.size());
  // A record holding the hello and more handshake bytes: the hello ends inside the record.
  std::string message = Handshake(Body(Sni("a.example")));
  std::string record = Records(message + "\x0b\x00\x00\x00");
  r = Parse(record);
  ASSERT_EQ(r.kind, HelloResult::kParsed);
  EXPECT_EQ(r.seen, 5 + message.size());
  EXPECT_EQ(r.hello.sni, "a.example");
}

TEST(ClientHelloTest, RecognizesWhatIsNotTls) {
  struct Case {
    std::string bytes;
    const char* reason;
  };
  for (const Case& c : std::vector<Case>{
           {"GET / HTTP/1.1\r\n", "not a TLS handshake record"},
           {"SSH-2.0-OpenSSH_9.2\r\n", "not a TLS handshake record"},
           {std::string("\x80\x2e\x01\x00\x02", 5), "not a TLS handshake record"},  // SSLv2-style hello
           {std::string("\x17\x03\x03\x00\x01x", 6), "not a TLS handshake record"},
           {std::string("\x16\x02", 2), "record version is not TLS (major version 3)"},
           {std::string("\x16\x03\x05", 3), "record version is not TLS (minor version above 4)"},
       }) {
    HelloResult r = Parse(c.bytes);
    EXPECT_EQ(r.kind, HelloResult::kNotTls) << c.reason;
    EXPECT_EQ(r.reason, c.reason);
    EXPECT_EQ(r.seen, 0u);
  }
  EXPECT_EQ(Parse("\x16").kind, HelloResult::kNeedMore);
  EXPECT_EQ(Parse("\x16\x03").kind, HelloResult::kNeedMore);
  EXPECT_EQ(Parse(std::string("\x16\x03\x00", 3)).kind, HelloResult::kNeedMore);
}

TEST(ClientHelloTest, RefusesBadRecords) {
  std::string message = Handshake(Body(Sni("a.example")));
  ExpectMalformed(std::string("\x16\x03\x01\x00\x00", 5), "empty handshake record");
  ExpectMalformed("\x16\x03\x01" + U16(16385) + message, "record longer than 16384 bytes");
  // The hello's second fragment arrives in a record of another type, or of a version that is not TLS.
  std::string first = Records(message.substr(0, 10));
  ExpectMalformed(first + "\x15\x03\x01" + U16(2) + "\x02\x28",
                  "a record inside the ClientHello: not a TLS handshake record");
  ExpectMalformed(first + "\x16\x04\x01",
                  "a record inside the ClientHello: record version is not TLS (major version 3)");
  ExpectMalformed(first + "\x16\x03\x07",
                  "a record inside the ClientHello: record version is not TLS (minor version above 4)");
  ExpectMalformed(Records(Handshake(Body(""), 2)), "first handshake message is not a ClientHello");
  ExpectMalformed(Records("\x01" + U24(kMaxClientHello + 1)), "ClientHello longer than 16384 bytes");
}

TEST(ClientHelloTest, AcceptsTheLargestHello) {
  std::string padding = Ext(21, std::string(kMaxClientHello - Body(Sni("big.example") + Ext(21, "")).size(), '\0'));
  std::string body = Body(Sni("big.example") + padding);
  ASSERT_EQ(body.size(), kMaxClientHello);
  HelloResult r = Parse(Records(Handshake(body), 1000));
  ASSERT_EQ(r.kind, HelloResult::kParsed) << r.reason;
  EXPECT_EQ(r.hello.sni, "big.example");
}

TEST(ClientHelloTest, RefusesBadFixedFields) {
  std::string suites = U16(2) + U16(0x1301);
  std::string head = U16(0x0303) + std::string(32, 'r');
  ExpectMalformed(Records(Handshake(U16(0x0303) + std::string(31, 'r'))),
                  "ClientHello ends inside its version and random");
  ExpectMalformed(Records(Handshake(head + U8(5) + "abc")), "legacy_session_id overruns the ClientHello");
  ExpectMalformed(Records(Handshake(head + U8(33) + std::string(33, 's') + suites + U8(1) + U8(0))),
                  "legacy_session_id is longer than 32 bytes");
  ExpectMalformed(Records(Handshake(head + U8(0) + U16(4) + U16(1))), "cipher_suites overruns the ClientHello");
  ExpectMalformed(Records(Handshake(head + U8(0) + U16(0) + U8(1) + U8(0))), "cipher_suites is empty or of odd length");
  ExpectMalformed(Records(Handshake(head + U8(0) + U16(3) + "abc" + U8(1) + U8(0))),
                  "cipher_suites is empty or of odd length");
  ExpectMalformed(Records(Handshake(head + U8(0) + suites)), "legacy_compression_methods overruns the ClientHello");
  ExpectMalformed(Records(Handshake(head + U8(0) + suites + U8(0))), "legacy_compression_methods is empty");
  ExpectMalformed(Records(Handshake(head + U8(0) + suites + U8(1) + U8(0) + U8(0))),
                  "extensions block overruns the ClientHello");
  ExpectMalformed(Records(Handshake(head + U8(0) + suites + U8(1) + U8(0) + U16(8) + Ext(99, ""))),
                  "extensions block overruns the ClientHello");
  ExpectMalformed(Records(Handshake(Body(Sni("a.example")) + "x")), "bytes after the extensions block");
  // A hello without extensions (TLS 1.0 style) is fine and has no name.
  HelloResult r = Parse(Records(Handshake(head + U8(32) + std::string(32, 's') + suites + U8(1) + U8(0))));
  ASSERT_EQ(r.kind, HelloResult::kParsed) << r.reason;
  EXPECT_EQ(r.hello.sni, "");
  EXPECT_TRUE(r.hello.supported_versions.empty());
}

TEST(ClientHelloTest, RefusesBadServerNames) {
  std::string long_name;
  for (int i = 0; i < 4; ++i) long_name += std::string(63, 'a' + i) + ".";
  long_name += "z";  // 4*64 + 1 = 257 bytes
  struct Case {
    std::string extensions;
    std::string reason;
  };
  for (const Case& c : std::vector<Case>{
           {Sni("a.example") + Sni("b.example"), "duplicate extension 0"},
           {Sni("a.example") + Ext(16, U16(3) + U8(2) + "h2") + Sni("a.example"), "duplicate extension 0"},
           {SniExt(SniEntry("a.example") + SniEntry("b.example")), "server_name list has more than one name"},
           {SniExt(SniEntry("a.example") + SniEntry("a.example")), "server_name list has more than one name"},
           {SniExt(SniEntry("a.example", 1)), "server_name entry is not a host_name"},
           {SniExt(""), "server_name list is empty"},
           {Ext(0, ""), "server_name list length does not match its extension"},
           {Ext(0, U16(20) + SniEntry("a.example")), "server_name list length does not match its extension"},
           {Ext(0, U16(12) + SniEntry("a.example") + "x"), "server_name list length does not match its extension"},
           {SniExt(U8(0) + U16(30) + "a.example"), "server_name entry overruns its list"},
           {SniExt(U8(0)), "server_name entry overruns its list"},
           {Sni(""), "server_name: host name is empty"},
           {Sni("127.0.0.1"), "server_name: host name is an IP address literal"},
           {Sni("2130706433"), "server_name: host name is an IP address literal"},
           {Sni("0x7f.1"), "server_name: host name is an IP address literal"},
           {Sni("::1"), "server_name: host name is an IP address literal"},
           {Sni("[::1]"), "server_name: host name contains a byte other than a letter, digit, '-', '_' or '.'"},
           {Sni("fe80::1%eth0"), "server_name: host name contains a byte other than a letter, digit, '-', '_' or '.'"},
           {Sni("host.10"), "server_name: host name is an IP address literal"},
           {Sni(std::string("a.example\0.evil.com", 19)), "server_name: host name contains a NUL byte"},
           {Sni(long_name), "server_name: host name is longer than 253 bytes"},
           {Sni(std::string(64, 'a') + ".com"), "server_name: host name has a label longer than 63 bytes"},
           {Sni("a.example."), "server_name: host name has an empty label"},
           {Sni("a..example"), "server_name: host name has an empty label"},
           {Sni("-a.example"), "server_name: host name has a label starting or ending with '-'"},
           {Sni("a.example/x"), "server_name: host name contains a byte other than a letter, digit, '-', '_' or '.'"},
           {Sni("a example"), "server_name: host name contains a byte other than a letter, digit, '-', '_' or '.'"},
           {Sni("caf\xc3\xa9.example"),
            "server_name: host name contains a byte other than a letter, digit, '-', '_' or '.'"},
       }) {
    ExpectMalformed(Hello(c.extensions), c.reason);
  }
}

TEST(ClientHelloTest, ServerNameEdges) {
  std::string longest;
  for (int i = 0; i < 3; ++i) longest += std::string(63, 'a' + i) + ".";
  longest += std::string(61, 'd');  // 3*64 + 61 = 253 bytes
  for (const auto& [sent, want] :
       std::vector<std::pair<std::string, std::string>>{{"WWW.Example.COM", "www.example.com"},
                                                        {longest, longest},
                                                        {"_acme.x-1.example", "_acme.x-1.example"},
                                                        {"localhost", "localhost"},
                                                        {"xn--caf-dma.example", "xn--caf-dma.example"},
                                                        {"10.example", "10.example"}}) {
    HelloResult r = Parse(Hello(Sni(sent)));
    ASSERT_EQ(r.kind, HelloResult::kParsed) << sent << ": " << r.reason;
    EXPECT_EQ(r.hello.sni, want);
  }
}

TEST(ClientHelloTest, ReadsAlpnVersionsAndEch) {
  std::string alpn = Ext(16, U16(12) + U8(2) + "h2" + U8(8) + "http/1.1");
  std::string versions = Ext(43, U8(6) + U16(0x0a0a) + U16(0x0304) + U16(0x0303));
  std::string ech = Ext(0xfe0d, std::string(40, 'e'));
  HelloResult r = Parse(Hello(Ext(0x1a1a, "") + Sni("ech.example") + alpn + versions + ech));
  ASSERT_EQ(r.kind, HelloResult::kParsed) << r.reason;
  EXPECT_EQ(r.hello.alpn, (std::vector<std::string>{"h2", "http/1.1"}));
  EXPECT_EQ(r.hello.supported_versions, (std::vector<uint16_t>{0x0a0a, 0x0304, 0x0303}));
  EXPECT_TRUE(r.hello.ech);
  EXPECT_EQ(r.hello.sni, "ech.example");

  for (const auto& [ext, reason] : std::vector<std::pair<std::string, std::string>>{
           {Ext(16, U16(0)), "ALPN list is empty"},
           {Ext(16, U16(1) + U8(0)), "ALPN protocol name is empty"},
           {Ext(16, U16(3) + U8(5) + "h2"), "ALPN protocol name overruns its list"},
           {Ext(16, U16(9)), "ALPN list length does not match its extension"},
           {Ext(16, U16(3) + U8(2) + "h2" + "x"), "ALPN list length does not match its extension"},
           {Ext(43, U8(0)), "supported_versions list is empty or of odd length"},
           {Ext(43, U8(3) + "abc"), "supported_versions list is empty or of odd length"},
           {Ext(43, U8(4) + "ab"), "supported_versions length does not match its extension"},
           {ech + ech, "duplicate extension 65037"},
           {Ext(43, U8(2) + U16(0x0304)) + Ext(43, U8(2) + U16(0x0304)), "duplicate extension 43"}}) {
    ExpectMalformed(Hello(Sni("a.example") + ext), reason);
  }
}

// Parses what a real client sends to a loopback listener, reading until the parser stops asking for more.
HelloResult FromLiveClient(const std::vector<std::string>& argv) {
  HelloResult r;
  auto sent = testing::CaptureClient(argv, [&](const std::string& got) {
    r = Parse(got);
    return r.kind != HelloResult::kNeedMore;
  });
  EXPECT_TRUE(sent.ok()) << sent.error().message;
  return r;
}

TEST(ClientHelloTest, LiveOpensslClient) {
  HelloResult r = FromLiveClient(
      {"openssl", "s_client", "-connect", "127.0.0.1:PORT", "-servername", "Live.Example.ORG", "-alpn", "h2,http/1.1"});
  ASSERT_EQ(r.kind, HelloResult::kParsed) << r.reason;
  EXPECT_EQ(r.hello.sni, "live.example.org");
  EXPECT_EQ(r.hello.alpn, (std::vector<std::string>{"h2", "http/1.1"}));
  ASSERT_FALSE(r.hello.supported_versions.empty());
  EXPECT_EQ(r.hello.supported_versions.front(), 0x0304);
}

TEST(ClientHelloTest, LiveOpensslClientWithoutName) {
  HelloResult r = FromLiveClient({"openssl", "s_client", "-connect", "127.0.0.1:PORT", "-noservername"});
  ASSERT_EQ(r.kind, HelloResult::kParsed) << r.reason;
  EXPECT_EQ(r.hello.sni, "");
}

TEST(ClientHelloTest, LiveCurlClient) {
  HelloResult r = FromLiveClient({"curl", "-sk", "--max-time", "10", "--resolve", "files.example.com:PORT:127.0.0.1",
                                  "https://files.example.com:PORT/"});
  ASSERT_EQ(r.kind, HelloResult::kParsed) << r.reason;
  EXPECT_EQ(r.hello.sni, "files.example.com");
  EXPECT_EQ(r.hello.alpn, (std::vector<std::string>{"h2", "http/1.1"}));
}

TEST(ClientHelloTest, LiveCurlClientToAnAddressSendsNoName) {
  // RFC 6066 forbids address literals in server_name; curl leaves the extension out.
  HelloResult r = FromLiveClient({"curl", "-sk", "--max-time", "10", "https://127.0.0.1:PORT/"});
  ASSERT_EQ(r.kind, HelloResult::kParsed) << r.reason;
  EXPECT_EQ(r.hello.sni, "");
}

}  // namespace
}  // namespace isb::egress
