// What the secret store accepts: names, value sizes, and which values can stand behind a placeholder.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace isb::secrets {

inline constexpr size_t kMaxSecretNameSize = 128;
inline constexpr size_t kMaxSecretValueSize = size_t{1} << 20;        // 1 MiB
inline constexpr size_t kMaxPlaceholderValueSize = size_t{64} << 10;  // 64 KiB
// A shorter value would be found by chance in ordinary responses, and scrubbing it would change their bytes.
inline constexpr size_t kMinPlaceholderValueSize = 8;
// The versions a secret keeps: the latest and the 15 before it. The set that makes version N removes the file of
// version N-16, so the values a store holds (and the scrubber turns back into placeholders) stay bounded.
inline constexpr int kMaxSecretVersions = 16;
// The version numbers a secret of latest version `latest` keeps: FirstKeptVersion(latest) to latest.
constexpr int FirstKeptVersion(int latest) { return latest > kMaxSecretVersions ? latest - kMaxSecretVersions + 1 : 1; }

// 1-128 of [A-Za-z0-9_.-], not "." or "..": kInvalidArgument
// "name: use 1-128 letters, digits, '_', '.' or '-', got 'X'".
Status CheckSecretName(std::string_view name);
// The same rule for an org's directory name, as "org: ...".
Status CheckOrgDirName(std::string_view org);
// kTooLarge over 1 MiB. Never quotes the value.
Status CheckSecretValueSize(size_t size);
// A value a placeholder can be swapped for on the wire: at most 64 KiB, no CR or LF, at least 8 bytes.
// kInvalidArgument saying why, and that delivering it as a file still works. Never quotes the value.
Status CheckPlaceholderValue(std::string_view value);
// A secret that names hosts may stand behind a placeholder, so its value is at least 8 bytes: kInvalidArgument
// "value: N bytes is too short for a secret with hosts; ...". Never quotes the value.
Status CheckValueWithHosts(size_t size);
// The parts of a request a placeholder is swapped in (SecretMeta::substitute): each of "header", "query", "body",
// "header" among them; returned in that order, each once. kInvalidArgument naming the part otherwise.
Result<std::vector<std::string>> CanonicalSubstitute(const std::vector<std::string>& parts);
// The header names a secret adds to the credential headers its placeholder is swapped in (SecretMeta::headers,
// credential_headers.h): each 1-128 HTTP token characters, at most 16, each once whatever its case (the first
// spelling kept). kInvalidArgument naming the field and how to fix it otherwise.
Result<std::vector<std::string>> CanonicalSwapHeaders(const std::vector<std::string>& names);
// Every host a secret may be sent to is non-empty; the api layer checks their form.
Status CheckSecretHosts(const std::vector<std::string>& hosts);

}  // namespace isb::secrets
