// The daemon's age identity (ISB_AGE_KEY, --secrets-key, a systemd credential, or one generated at first start)
// and the break-glass recipients file.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/result.h"
#include "secrets/age_identity.h"

namespace isb::secrets {

// The credential's name under $CREDENTIALS_DIRECTORY (LoadCredentialEncrypted=isb-secrets-key:... in the unit).
inline constexpr std::string_view kCredentialName = "isb-secrets-key";

struct IdentitySources {
  std::string env_key;                    // ISB_AGE_KEY's value, or empty
  std::filesystem::path key_file;         // --secrets-key, or empty
  std::filesystem::path credentials_dir;  // $CREDENTIALS_DIRECTORY, or empty
  std::filesystem::path generated;        // <state>/secrets/identity: read, or created when no other source is given
};

// The first source given, in the order of the fields: ISB_AGE_KEY, then --secrets-key (refused, with "chmod 600",
// when group or others may read it), then $CREDENTIALS_DIRECTORY/isb-secrets-key when that file exists, then the
// generated file, made (0600, atomically) when missing. Errors name the source, never the key.
Result<AgeIdentity> LoadDaemonIdentity(const IdentitySources& sources);

// Break-glass recipients: one age1... key a line; blank lines and '#' comments allowed. A bad line is
// kInvalidArgument "FILE line N: ...".
Result<std::vector<std::string>> ReadRecipientsFile(const std::filesystem::path& path);

}  // namespace isb::secrets
