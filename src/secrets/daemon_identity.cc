// Where the daemon's key comes from, in order, and the one case where isb makes it.
#include "secrets/daemon_identity.h"

#include <sys/stat.h>

#include <cstdio>
#include <system_error>

#include "base/file.h"
#include "secrets/secret_store_files.h"

namespace isb::secrets {
namespace {

std::string ModeText(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

Result<AgeIdentity> ParseFrom(std::string_view source, const SecretBytes& text) {
  auto identity = AgeIdentity::Parse(text.view());
  if (!identity.ok()) return Error::Of(Code::kInvalidArgument, std::string(source) + ": " + identity.error().message);
  return identity;
}

// A key file that group or others may read is refused: the key opens every secret of every org.
Result<AgeIdentity> ReadKeyFile(std::string_view source, const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error::Sys(std::string(source) + " " + path.string());
  if ((st.st_mode & 077) != 0) {
    return Error::Of(Code::kForbidden, std::string(source) + " " + path.string() +
                                           ": readable by group or others (mode " + ModeText(st.st_mode) +
                                           "); chmod 600 " + path.string());
  }
  auto text = ReadFile(path.string());
  if (!text.ok()) return Error::Msg(std::string(source) + ": " + text.error().message);
  return ParseFrom(std::string(source) + " " + path.string(), SecretBytes(std::move(text).value()));
}

Result<AgeIdentity> GenerateKeyFile(const std::filesystem::path& path) {
  ISB_TRY(MakeDirs(path.parent_path().string(), 0700));
  AgeIdentity identity = AgeIdentity::Generate();
  std::string text =
      "# isb's secrets key, generated at first start. Every secret is encrypted to it: back it up,\n"
      "# or name break-glass recipients (--secrets-recipients) and run isb secret reencrypt.\n"
      "# public key: " +
      identity.Recipient() + "\n";
  text += identity.Encode().view();
  text += '\n';
  SecretBytes contents(std::move(text));
  ISB_TRY(WriteFileDurably(path, contents.view()));
  return identity;
}

}  // namespace

Result<AgeIdentity> LoadDaemonIdentity(const IdentitySources& sources) {
  if (!sources.env_key.empty()) return ParseFrom("ISB_AGE_KEY", SecretBytes(std::string_view(sources.env_key)));
  if (!sources.key_file.empty()) return ReadKeyFile("--secrets-key", sources.key_file);
  if (!sources.credentials_dir.empty()) {
    const std::filesystem::path credential = sources.credentials_dir / kCredentialName;
    std::error_code ec;
    // systemd makes the credential file readable by the service alone; its mode is systemd's to choose.
    if (std::filesystem::exists(credential, ec)) {
      auto text = ReadFile(credential.string());
      if (!text.ok()) return Error::Msg("credential " + std::string(kCredentialName) + ": " + text.error().message);
      return ParseFrom("credential " + credential.string(), SecretBytes(std::move(text).value()));
    }
  }
  if (sources.generated.empty()) {
    return Error::Of(Code::kInvalidArgument,
                     "secrets key: none given; set ISB_AGE_KEY, --secrets-key FILE or a systemd credential");
  }
  std::error_code ec;
  if (std::filesystem::exists(sources.generated, ec)) return ReadKeyFile("secrets key", sources.generated);
  return GenerateKeyFile(sources.generated);
}

Result<std::vector<std::string>> ReadRecipientsFile(const std::filesystem::path& path) {
  auto text = ReadFile(path.string());
  if (!text.ok()) return Error::Of(Code::kInvalidArgument, "recipients file: " + text.error().message);
  std::vector<std::string> out;
  for (const KeyLine& line : KeyLines(*text)) {
    if (Status st = CheckRecipient(line.text); !st.ok()) {
      return Error::Of(Code::kInvalidArgument,
                       path.string() + " line " + std::to_string(line.number) + ": " + st.error().message);
    }
    out.emplace_back(line.text);
  }
  return out;
}

}  // namespace isb::secrets
