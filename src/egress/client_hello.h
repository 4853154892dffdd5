// The TLS ClientHello the proxy reads from a sandbox's first bytes: the server name it checks, and what else the
// client offers (ALPN, versions, ECH). Parsed from untrusted bytes, bounded, never past the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace isb::egress {

// The largest ClientHello handshake message (its body) the proxy waits for; real ones are under 2 KiB.
inline constexpr size_t kMaxClientHello = 16 * 1024;

struct ClientHello {
  std::string sni;                           // server_name host_name, lowercased and checked; empty when absent
  std::vector<std::string> alpn;             // application_layer_protocol_negotiation, in the client's order
  uint16_t legacy_version = 0;               // ClientHello.legacy_version (0x0303 for TLS 1.2 and 1.3)
  std::vector<uint16_t> supported_versions;  // the supported_versions extension, in order; empty when absent
  bool ech = false;                          // an encrypted_client_hello extension (0xfe0d) is present
};

struct HelloResult {
  enum Kind { kParsed, kNeedMore, kNotTls, kMalformed };
  Kind kind = kNeedMore;
  // kNeedMore: the input length (every byte was consistent so far). kParsed: bytes up to the hello's last byte.
  // kNotTls and kMalformed: the offset where the parser stopped.
  size_t seen = 0;
  std::string reason;  // kNotTls and kMalformed: a fixed sentence saying what was wrong
  ClientHello hello;   // kParsed only
};

// Parses the first ClientHello from `bytes`, the start of what a client sent (TLS records of type handshake,
// the hello possibly split over several). Call again with more bytes while the result is kNeedMore.
// kNotTls: the first bytes are not a TLS handshake record header. kMalformed: TLS, but the hello breaks the
// format (lengths, duplicate extensions, more than one server name, a server name that is not a DNS host name
// such as an IP literal, over kMaxClientHello).
HelloResult ParseClientHello(std::span<const uint8_t> bytes);

}  // namespace isb::egress
