// The canonical encoding of a chained row and the link hash over it; shared by the audit log and the history.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace isb::audit {

// The prev_hash of a chain's first row: 32 zero bytes, as hex.
inline constexpr std::string_view kGenesisHash = "0000000000000000000000000000000000000000000000000000000000000000";

// Encoding, version 1 (the version is part of `domain`, e.g. "isb.audit.v1"):
//
//   u64be(len(domain)) domain  u64be(id)  u64be(time_ms)  { u64be(len(field)) field }  for each field in order
//
// Integers are fixed-width big-endian (two's complement), every string is length-prefixed and the number and order of
// fields is fixed per domain, so two different rows never share an encoding and a row of one chain never encodes
// like a row of another.
std::string CanonicalEncoding(std::string_view domain, int64_t id, int64_t time_ms,
                              const std::vector<std::string>& fields);

// hash = SHA-256(prev || encoding), where prev is the 32 raw bytes of the previous row's hash (kGenesisHash for the
// first row); returned as 64 lower-case hex digits. A prev_hash that is not 64 hex digits yields "" (no row's hash).
std::string LinkHash(std::string_view prev_hash_hex, std::string_view encoding);

// SHA-256 of `data` as lower-case hex.
std::string Sha256Hex(std::string_view data);

}  // namespace isb::audit
