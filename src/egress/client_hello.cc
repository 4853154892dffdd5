// ClientHello parsing: the record layer is reassembled into one handshake message, then its fields and the
// extensions the proxy needs are read with a bounds-checked cursor.
#include "egress/client_hello.h"

#include <bitset>

#include "net/byte_reader.h"
#include "net/host_name.h"

namespace isb::egress {
namespace {

using net::ByteReader;
using Bytes = std::span<const uint8_t>;

constexpr uint8_t kHandshakeRecord = 22;
constexpr uint8_t kClientHelloType = 1;
constexpr size_t kRecordHeader = 5;
constexpr size_t kMaxRecord = 16384;  // TLSPlaintext.length limit (2^14)
constexpr uint16_t kServerName = 0;
constexpr uint16_t kAlpn = 16;
constexpr uint16_t kSupportedVersions = 43;
constexpr uint16_t kEncryptedClientHello = 0xfe0d;

HelloResult Stop(HelloResult::Kind kind, size_t seen, std::string reason) {
  HelloResult r;
  r.kind = kind;
  r.seen = seen;
  r.reason = std::move(reason);
  return r;
}

// Checks the (possibly partial) record header at `at`; empty when it is consistent with a handshake record.
std::string RecordHeaderProblem(Bytes header) {
  if (header.size() > 0 && header[0] != kHandshakeRecord) return "not a TLS handshake record";
  if (header.size() > 1 && header[1] != 3) return "record version is not TLS (major version 3)";
  if (header.size() > 2 && header[2] > 4) return "record version is not TLS (minor version above 4)";
  return "";
}

// Each extension parser returns empty on success, else the reason the hello is malformed.
std::string ParseServerName(Bytes data, ClientHello& hello) {
  ByteReader ext(data);
  Bytes list;
  if (!ext.Prefixed(2, list) || !ext.empty()) return "server_name list length does not match its extension";
  if (list.empty()) return "server_name list is empty";
  ByteReader entries(list);
  uint8_t type = 0;
  Bytes name;
  if (!entries.U8(type) || !entries.Prefixed(2, name)) return "server_name entry overruns its list";
  if (type != 0) return "server_name entry is not a host_name";
  if (!entries.empty()) return "server_name list has more than one name";
  auto canonical = net::CanonicalHostName(std::string_view(reinterpret_cast<const char*>(name.data()), name.size()));
  if (!canonical.ok()) return "server_name: " + canonical.error().message;
  hello.sni = std::move(*canonical);
  return "";
}

std::string ParseAlpn(Bytes data, ClientHello& hello) {
  ByteReader ext(data);
  Bytes list;
  if (!ext.Prefixed(2, list) || !ext.empty()) return "ALPN list length does not match its extension";
  if (list.empty()) return "ALPN list is empty";
  ByteReader entries(list);
  while (!entries.empty()) {
    Bytes name;
    if (!entries.Prefixed(1, name)) return "ALPN protocol name overruns its list";
    if (name.empty()) return "ALPN protocol name is empty";
    hello.alpn.emplace_back(reinterpret_cast<const char*>(name.data()), name.size());
  }
  return "";
}

std::string ParseSupportedVersions(Bytes data, ClientHello& hello) {
  ByteReader ext(data);
  Bytes list;
  if (!ext.Prefixed(1, list) || !ext.empty()) return "supported_versions length does not match its extension";
  if (list.empty() || list.size() % 2 != 0) return "supported_versions list is empty or of odd length";
  ByteReader versions(list);
  uint16_t v = 0;
  while (versions.U16(v)) hello.supported_versions.push_back(v);
  return "";
}

std::string ParseExtensions(Bytes block, ClientHello& hello) {
  ByteReader r(block);
  std::bitset<65536> seen;
  while (!r.empty()) {
    uint16_t type = 0;
    Bytes data;
    if (!r.U16(type) || !r.Prefixed(2, data)) return "extension overruns the extensions block";
    if (seen.test(type)) return "duplicate extension " + std::to_string(type);
    seen.set(type);
    std::string problem;
    if (type == kServerName) problem = ParseServerName(data, hello);
    if (type == kAlpn) problem = ParseAlpn(data, hello);
    if (type == kSupportedVersions) problem = ParseSupportedVersions(data, hello);
    if (type == kEncryptedClientHello) hello.ech = true;
    if (!problem.empty()) return problem;
  }
  return "";
}

// The ClientHello body (after its 4-byte handshake header).
std::string ParseBody(Bytes body, ClientHello& hello) {
  ByteReader r(body);
  Bytes random, session_id, suites, compression, extensions;
  if (!r.U16(hello.legacy_version) || !r.Bytes(32, random)) return "ClientHello ends inside its version and random";
  if (!r.Prefixed(1, session_id)) return "legacy_session_id overruns the ClientHello";
  if (session_id.size() > 32) return "legacy_session_id is longer than 32 bytes";
  if (!r.Prefixed(2, suites)) return "cipher_suites overruns the ClientHello";
  if (suites.empty() || suites.size() % 2 != 0) return "cipher_suites is empty or of odd length";
  if (!r.Prefixed(1, compression)) return "legacy_compression_methods overruns the ClientHello";
  if (compression.empty()) return "legacy_compression_methods is empty";
  if (r.empty()) return "";  // a hello without extensions (TLS 1.0 style)
  if (!r.Prefixed(2, extensions)) return "extensions block overruns the ClientHello";
  if (!r.empty()) return "bytes after the extensions block";
  return ParseExtensions(extensions, hello);
}

}  // namespace

HelloResult ParseClientHello(Bytes bytes) {
  std::vector<uint8_t> message;  // the handshake message, reassembled from the records' fragments
  size_t at = 0;
  while (true) {
    Bytes header = bytes.subspan(at, std::min(kRecordHeader, bytes.size() - at));
    if (std::string problem = RecordHeaderProblem(header); !problem.empty()) {
      if (at == 0) return Stop(HelloResult::kNotTls, 0, problem);
      return Stop(HelloResult::kMalformed, at, "a record inside the ClientHello: " + problem);
    }
    if (header.size() < kRecordHeader) return Stop(HelloResult::kNeedMore, bytes.size(), "");
    size_t length = static_cast<size_t>(header[3]) << 8 | header[4];
    if (length == 0) return Stop(HelloResult::kMalformed, at, "empty handshake record");
    if (length > kMaxRecord) return Stop(HelloResult::kMalformed, at, "record longer than 16384 bytes");
    size_t body = at + kRecordHeader;
    size_t available = std::min(length, bytes.size() - body);
    size_t before = message.size();
    message.insert(message.end(), bytes.begin() + body, bytes.begin() + body + available);
    if (message.size() >= 4) {
      if (message[0] != kClientHelloType)
        return Stop(HelloResult::kMalformed, body, "first handshake message is not a ClientHello");
      size_t hello_length = static_cast<size_t>(message[1]) << 16 | message[2] << 8 | message[3];
      if (hello_length > kMaxClientHello)
        return Stop(HelloResult::kMalformed, body, "ClientHello longer than 16384 bytes");
      if (message.size() >= 4 + hello_length) {
        HelloResult r;
        r.kind = HelloResult::kParsed;
        r.seen = body + (4 + hello_length - before);
        r.reason = ParseBody(Bytes(message).subspan(4, hello_length), r.hello);
        if (!r.reason.empty()) {
          r.kind = HelloResult::kMalformed;
          r.hello = ClientHello{};
        }
        return r;
      }
    }
    if (available < length) return Stop(HelloResult::kNeedMore, bytes.size(), "");
    at = body + length;
  }
}

}  // namespace isb::egress
