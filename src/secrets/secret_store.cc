// SecretStore: age files per secret version, meta.json beside them, one mutex.
#include "secrets/secret_store.h"

#include <algorithm>
#include <chrono>
#include <system_error>

#include "base/mutex.h"
#include "base/file.h"
#include "secrets/secret_file_binding.h"
#include "secrets/secret_store_files.h"

namespace isb::secrets {
namespace {

constexpr std::string_view kMetaFile = "meta.json";
// An import's file may carry the largest value plus its header and chunk tags.
constexpr size_t kMaxImportFileSize = kMaxSecretValueSize + 64 * 1024;

std::string Named(const std::string& org, const std::string& name) {
  return "secret '" + name + "' in org '" + org + "'";
}

// Beside orgs/: the store is bound, every value file carries its isb-binding (see secret_store.h).
constexpr std::string_view kBoundMarker = "bound";

// A file that decrypted is refused when its binding names another secret: it was copied into this one's place.
// A file without one was written before bindings (Reencrypt adds them): read until the store is bound, refused
// from then on (a pre-binding or user-made file placed by hand could otherwise be any secret's value).
Status CheckBound(std::string_view file, const std::string& org, const std::string& name, const std::string& what,
                  bool store_bound) {
  ISB_ASSIGN_OR_RETURN(std::optional<FileBinding> binding, BindingOf(file));
  if (!binding && store_bound)
    return Error::Of(Code::kForbidden, what +
                                           ": its file carries no isb-binding, and every file of this store does "
                                           "since it was bound; put back this secret's own file, or give it a "
                                           "new value with secret_set");
  if (!binding || (binding->org == org && binding->name == name)) return {};
  return Error::Of(Code::kForbidden, what + ": its file belongs to " + Named(binding->org, binding->name) +
                                         " (it was copied into this secret's place); put back this secret's own "
                                         "file, or give it a new value with secret_set");
}

std::string VersionFile(int version) { return "v" + std::to_string(version) + ".age"; }

// The version a file name is ("v12.age" is 12), or 0 for any other name.
int VersionOf(const std::string& file) {
  if (!file.starts_with('v') || !file.ends_with(".age") || file.size() < 6) return 0;
  const std::string digits = file.substr(1, file.size() - 5);
  if (digits.empty() || digits.size() > 9 || digits.front() == '0') return 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return 0;
  }
  return std::stoi(digits);
}

Status CheckOrgAndName(const std::string& org, const std::string& name) {
  ISB_TRY(CheckOrgDirName(org));
  return CheckSecretName(name);
}

std::vector<std::filesystem::path> SubdirsByName(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_directory(ec) && !entry.path().filename().string().starts_with(kStrayPrefix)) {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Clears what a crash left half-done: temp files beside meta.json and the version files, directories being removed.
void ClearStrays(const std::filesystem::path& orgs) {
  RemoveStrays(orgs);
  for (const auto& org : SubdirsByName(orgs)) {
    RemoveStrays(org);
    for (const auto& secret : SubdirsByName(org)) RemoveStrays(secret);
  }
}

// Every version file under `orgs`.
std::vector<std::filesystem::path> VersionFiles(const std::filesystem::path& orgs) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& org : SubdirsByName(orgs)) {
    for (const auto& secret : SubdirsByName(org)) {
      for (const auto& entry : std::filesystem::directory_iterator(secret, ec)) {
        if (VersionOf(entry.path().filename().string()) > 0) out.push_back(entry.path());
      }
    }
  }
  return out;
}

// Whether every one of `files` carries an isb-binding (no store is bound while one from before bindings remains).
bool AllBound(const std::vector<std::filesystem::path>& files) {
  for (const std::filesystem::path& path : files) {
    Result<std::string> file = ReadFile(path.string());
    if (!file.ok()) return false;
    Result<std::optional<FileBinding>> binding = BindingOf(*file);
    if (!binding.ok() || !*binding) return false;
  }
  return true;
}

Status MarkBound(const std::filesystem::path& dir) {
  return WriteFileDurably(dir / kBoundMarker,
                          "every value file of this store carries its isb-binding; one without is refused\n");
}

Result<std::vector<std::string>> RecipientsFor(const SecretStoreOptions& options) {
  std::vector<std::string> out{options.identity.Recipient()};
  for (const std::string& r : options.extra_recipients) {
    if (Status st = CheckRecipient(r); !st.ok()) {
      return Error::Of(Code::kInvalidArgument, "break-glass " + st.error().message);
    }
    if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<SecretStore>> SecretStore::Open(SecretStoreOptions options) {
  if (options.dir.empty()) return Error::Of(Code::kInvalidArgument, "secrets dir: not set");
  ISB_ASSIGN_OR_RETURN(std::vector<std::string> recipients, RecipientsFor(options));
  ISB_TRY(MakeDirs(options.dir.string(), 0700));
  std::error_code ec;
  std::filesystem::permissions(options.dir, std::filesystem::perms::owner_all, ec);
  if (ec) return Error::Msg("chmod 700 " + options.dir.string() + ": " + ec.message());
  const std::filesystem::path orgs = options.dir / "orgs";
  ISB_TRY(MakeDirDurably(orgs));
  ClearStrays(orgs);
  const std::vector<std::filesystem::path> files = VersionFiles(orgs);
  if (!files.empty()) {
    ISB_ASSIGN_OR_RETURN(std::string file, ReadFile(files.front().string()));
    auto value = AgeDecrypt(file, options.identity);
    if (!value.ok() && value.error().code == Code::kForbidden) {
      return Error::Of(Code::kForbidden,
                       "secrets store " + options.dir.string() + ": its files are not encrypted to this daemon key (" +
                           options.identity.Recipient() + "); start isb with the key that wrote them");
    }
  }
  // Bound once no file from before bindings is left (a new store is bound from its start), and for good.
  bool bound = std::filesystem::exists(options.dir / kBoundMarker, ec);
  if (!bound && AllBound(files)) {
    ISB_TRY(MarkBound(options.dir));
    bound = true;
  }
  auto store = std::unique_ptr<SecretStore>(new SecretStore(std::move(options), std::move(recipients)));
  MutexLock lock(store->mu_);
  store->bound_ = bound;
  return store;
}

SecretStore::SecretStore(SecretStoreOptions options, std::vector<std::string> recipients)
    : dir_(options.dir / "orgs"),
      identity_(std::move(options.identity)),
      recipients_(std::move(recipients)),
      now_ms_(std::move(options.now_ms)),
      min_value_with_hosts_(options.min_value_with_hosts) {}

Status SecretStore::CheckLength(const std::vector<std::string>& hosts, size_t value_size) const {
  if (hosts.empty() || value_size >= min_value_with_hosts_) return {};
  return CheckValueWithHosts(value_size);
}

std::string SecretStore::Recipient() const { return identity_.Recipient(); }

std::filesystem::path SecretStore::OrgDir(const std::string& org) const { return dir_ / org; }

std::filesystem::path SecretStore::SecretDir(const std::string& org, const std::string& name) const {
  return dir_ / org / name;
}

int64_t SecretStore::NowMs() const {
  if (now_ms_) return now_ms_();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<SecretMeta> SecretStore::ReadMetaLocked(const std::string& org, const std::string& name) const {
  const std::filesystem::path path = SecretDir(org, name) / kMetaFile;
  auto text = ReadFile(path.string());
  if (!text.ok()) {
    if (text.error().err == ENOENT || text.error().err == ENOTDIR) {
      return Error::Of(Code::kNotFound, Named(org, name) + " not found");
    }
    return text.error();
  }
  auto meta = ParseSecretMeta(*text);
  if (!meta.ok()) return Error::Msg(Named(org, name) + ": " + meta.error().message);
  return meta;
}

Status SecretStore::WriteVersionLocked(const SecretMeta& meta, int version, std::string_view value) const {
  ISB_ASSIGN_OR_RETURN(std::string file, AgeEncrypt(value, recipients_, {BindingStanza({meta.org, meta.name})}));
  return WriteFileDurably(SecretDir(meta.org, meta.name) / VersionFile(version), file);
}

Result<SecretMeta> SecretStore::CreateLocked(const std::string& org, const std::string& name, std::string_view value,
                                             std::vector<std::string> hosts, std::map<std::string, std::string> labels,
                                             std::vector<std::string> substitute, std::vector<std::string> headers) {
  auto existing = ReadMetaLocked(org, name);
  if (existing.ok()) {
    return Error::Of(Code::kConflict, Named(org, name) + " already exists; add a version with set");
  }
  if (existing.error().code != Code::kNotFound) return existing.error();
  ISB_TRY(MakeDirDurably(OrgDir(org)));
  // A directory without meta.json is a create that crashed before it finished: start it again.
  std::error_code ec;
  if (std::filesystem::exists(SecretDir(org, name), ec)) ISB_TRY(RemoveDirDurably(SecretDir(org, name)));
  ISB_TRY(MakeDirDurably(SecretDir(org, name)));
  SecretMeta meta{org, name, 1, NowMs(), 0, std::move(labels), std::move(hosts)};
  meta.updated_ms = meta.created_ms;
  if (!substitute.empty()) meta.substitute = std::move(substitute);
  meta.headers = std::move(headers);
  ISB_TRY(WriteVersionLocked(meta, 1, value));
  ISB_TRY(WriteFileDurably(SecretDir(org, name) / kMetaFile, FormatSecretMeta(meta)));
  return meta;
}

Result<SecretMeta> SecretStore::SetLocked(const std::string& org, const std::string& name, std::string_view value) {
  ISB_ASSIGN_OR_RETURN(SecretMeta meta, ReadMetaLocked(org, name));
  ISB_TRY(CheckLength(meta.hosts, value.size()));
  // The new file first: until meta.json names it, readers get the previous version.
  ISB_TRY(WriteVersionLocked(meta, meta.version + 1, value));
  meta.version += 1;
  meta.updated_ms = NowMs();
  ISB_TRY(WriteFileDurably(SecretDir(org, name) / kMetaFile, FormatSecretMeta(meta)));
  // The version this one pushes out of the kept ones (kMaxSecretVersions), and any a crash left before it.
  for (int old = FirstKeptVersion(meta.version) - 1; old >= 1; --old) {
    std::error_code ec;
    if (!std::filesystem::remove(SecretDir(org, name) / VersionFile(old), ec)) break;
  }
  return meta;
}

Result<SecretMeta> SecretStore::Create(const std::string& org, const std::string& name, const SecretBytes& value,
                                       std::vector<std::string> hosts, std::map<std::string, std::string> labels,
                                       std::vector<std::string> substitute, std::vector<std::string> headers) {
  ISB_TRY(CheckOrgAndName(org, name));
  ISB_TRY(CheckSecretValueSize(value.size()));
  ISB_TRY(CheckSecretHosts(hosts));
  ISB_TRY(CheckLength(hosts, value.size()));
  if (!substitute.empty()) {
    ISB_ASSIGN_OR_RETURN(substitute, CanonicalSubstitute(substitute));
  }
  ISB_ASSIGN_OR_RETURN(headers, CanonicalSwapHeaders(headers));
  Result<SecretMeta> meta = [&] {
    MutexLock lock(mu_);
    return CreateLocked(org, name, value.view(), std::move(hosts), std::move(labels), std::move(substitute),
                        std::move(headers));
  }();
  if (meta.ok()) Notify(org, name);
  return meta;
}

Result<SecretMeta> SecretStore::Set(const std::string& org, const std::string& name, const SecretBytes& value) {
  ISB_TRY(CheckOrgAndName(org, name));
  ISB_TRY(CheckSecretValueSize(value.size()));
  Result<SecretMeta> meta = [&] {
    MutexLock lock(mu_);
    return SetLocked(org, name, value.view());
  }();
  if (meta.ok()) Notify(org, name);
  return meta;
}

Result<SecretMeta> SecretStore::Update(const std::string& org, const std::string& name,
                                       std::optional<std::vector<std::string>> hosts,
                                       std::optional<std::map<std::string, std::string>> labels,
                                       std::optional<std::vector<std::string>> substitute,
                                       std::optional<std::vector<std::string>> headers) {
  ISB_TRY(CheckOrgAndName(org, name));
  if (hosts) ISB_TRY(CheckSecretHosts(*hosts));
  if (substitute) {
    ISB_ASSIGN_OR_RETURN(substitute, CanonicalSubstitute(*substitute));
  }
  if (headers) {
    ISB_ASSIGN_OR_RETURN(headers, CanonicalSwapHeaders(*headers));
  }
  Result<SecretMeta> updated = [&]() -> Result<SecretMeta> {
    MutexLock lock(mu_);
    ISB_ASSIGN_OR_RETURN(SecretMeta meta, ReadMetaLocked(org, name));
    if (hosts && min_value_with_hosts_ > 0 && !hosts->empty()) {
      // Hosts given to a secret that had none: its value must be long enough to stand behind a placeholder.
      ISB_ASSIGN_OR_RETURN(Value latest, GetLocked(org, name, 0));
      ISB_TRY(CheckLength(*hosts, latest.value.size()));
    }
    if (hosts) meta.hosts = std::move(*hosts);
    if (substitute) meta.substitute = std::move(*substitute);
    if (headers) meta.headers = std::move(*headers);
    if (labels) meta.labels = std::move(*labels);
    meta.updated_ms = NowMs();
    ISB_TRY(WriteFileDurably(SecretDir(org, name) / kMetaFile, FormatSecretMeta(meta)));
    return meta;
  }();
  if (updated.ok()) Notify(org, name);
  return updated;
}

Result<SecretStore::Value> SecretStore::Get(const std::string& org, const std::string& name, int version) const {
  ISB_TRY(CheckOrgAndName(org, name));
  MutexLock lock(mu_);
  return GetLocked(org, name, version);
}

Result<SecretStore::Versions> SecretStore::AllVersions(const std::string& org, const std::string& name) const {
  ISB_TRY(CheckOrgAndName(org, name));
  MutexLock lock(mu_);
  ISB_ASSIGN_OR_RETURN(SecretMeta meta, ReadMetaLocked(org, name));
  Versions out;
  for (int version = FirstKeptVersion(meta.version); version < meta.version; ++version) {
    Result<Value> value = GetLocked(org, name, version);
    if (value.ok())
      out.values.push_back(std::move(value).value());
    else
      out.unreadable.push_back(version);
  }
  ISB_ASSIGN_OR_RETURN(Value latest, GetLocked(org, name, meta.version));
  out.values.push_back(std::move(latest));
  return out;
}

Result<SecretStore::Value> SecretStore::GetLocked(const std::string& org, const std::string& name, int version) const {
  ISB_ASSIGN_OR_RETURN(SecretMeta meta, ReadMetaLocked(org, name));
  if (version == 0) version = meta.version;
  if (version < FirstKeptVersion(meta.version) || version > meta.version) {
    return Error::Of(Code::kNotFound, Named(org, name) + " has no version " + std::to_string(version) + " (it has " +
                                          std::to_string(FirstKeptVersion(meta.version)) + " to " +
                                          std::to_string(meta.version) + ")");
  }
  const std::string what = Named(org, name) + " version " + std::to_string(version);
  auto file = ReadFile((SecretDir(org, name) / VersionFile(version)).string());
  if (!file.ok()) return Error::Msg(what + ": " + file.error().message);
  auto value = AgeDecrypt(*file, identity_);
  if (!value.ok()) return Error::Of(value.error().code, what + ": " + value.error().message);
  ISB_TRY(CheckBound(*file, org, name, what, bound_));
  return Value{std::move(meta), std::move(value).value(), version};
}

Result<SecretMeta> SecretStore::Inspect(const std::string& org, const std::string& name) const {
  ISB_TRY(CheckOrgAndName(org, name));
  MutexLock lock(mu_);
  return ReadMetaLocked(org, name);
}

std::vector<SecretMeta> SecretStore::List(const std::string& org) const {
  std::vector<SecretMeta> out;
  if (!CheckOrgDirName(org).ok()) return out;
  MutexLock lock(mu_);
  for (const auto& dir : SubdirsByName(OrgDir(org))) {
    // A directory without a readable meta.json is a create that did not finish: not a secret.
    auto meta = ReadMetaLocked(org, dir.filename().string());
    if (meta.ok()) out.push_back(std::move(meta).value());
  }
  return out;
}

Status SecretStore::Delete(const std::string& org, const std::string& name) {
  ISB_TRY(CheckOrgAndName(org, name));
  {
    MutexLock lock(mu_);
    ISB_TRY(ReadMetaLocked(org, name));
    ISB_TRY(RemoveDirDurably(SecretDir(org, name)));
  }
  Notify(org, name);
  return {};
}

Result<SecretMeta> SecretStore::Import(const std::string& org, const std::string& name, std::string_view age_file,
                                       std::vector<std::string> hosts, std::map<std::string, std::string> labels) {
  ISB_TRY(CheckOrgAndName(org, name));
  ISB_TRY(CheckSecretHosts(hosts));
  if (age_file.size() > kMaxImportFileSize) {
    return Error::Of(Code::kTooLarge, "import: the file is " + std::to_string(age_file.size()) +
                                          " bytes; a secret's value is at most 1 MiB (1048576 bytes)");
  }
  auto value = AgeDecrypt(age_file, identity_);
  if (!value.ok() && value.error().code == Code::kForbidden) {
    return Error::Of(Code::kForbidden,
                     "import: the file is not encrypted to isb's key; encrypt it with age -r " + identity_.Recipient());
  }
  if (!value.ok()) return Error::Of(value.error().code, "import: " + value.error().message);
  // A value file of this store, for another secret: importing it would read that secret's value into this one.
  ISB_ASSIGN_OR_RETURN(std::optional<FileBinding> binding, BindingOf(age_file));
  if (binding && (binding->org != org || binding->name != name))
    return Error::Of(Code::kForbidden, "import: the file is the value file of " + Named(binding->org, binding->name) +
                                           " in isb's store; it is refused as any other secret's value");
  ISB_TRY(CheckSecretValueSize(value->size()));
  Result<SecretMeta> meta = [&]() -> Result<SecretMeta> {
    MutexLock lock(mu_);
    auto existing = ReadMetaLocked(org, name);
    if (existing.ok()) return SetLocked(org, name, value->view());
    if (existing.error().code != Code::kNotFound) return existing.error();
    ISB_TRY(CheckLength(hosts, value->size()));
    return CreateLocked(org, name, value->view(), std::move(hosts), std::move(labels), {}, {});
  }();
  if (meta.ok()) Notify(org, name);
  return meta;
}

// Removes every version file in `secret_dir` below `first_kept`, whatever gaps lie between them (a release that kept
// more versions left them): none stays encrypted to a recipient the store no longer has.
Status RemoveVersionsBelow(const std::filesystem::path& secret_dir, int first_kept) {
  std::error_code ec;
  std::vector<std::filesystem::path> old;
  for (const auto& entry : std::filesystem::directory_iterator(secret_dir, ec)) {
    const int version = VersionOf(entry.path().filename().string());
    if (version > 0 && version < first_kept) old.push_back(entry.path());
  }
  if (ec) return Error::Msg("reencrypt: list " + secret_dir.string() + ": " + ec.message());
  for (const std::filesystem::path& path : old) {
    if (!std::filesystem::remove(path, ec) && ec)
      return Error::Msg("reencrypt: remove " + path.string() + ", a version no longer kept: " + ec.message() +
                        "; remove it by hand and run reencrypt again");
  }
  return {};
}

Result<int> SecretStore::ReencryptSecretLocked(const std::string& org, const std::string& name) {
  auto meta = ReadMetaLocked(org, name);
  // A directory without meta.json is a create that did not finish: nothing in it is a version yet.
  if (!meta.ok()) return meta.error().code == Code::kNotFound ? Result<int>(0) : Result<int>(meta.error());
  for (int version = FirstKeptVersion(meta->version); version <= meta->version; ++version) {
    const std::filesystem::path path = SecretDir(org, name) / VersionFile(version);
    const std::string what = "reencrypt " + Named(org, name) + " version " + std::to_string(version);
    auto file = ReadFile(path.string());
    if (!file.ok()) return Error::Msg(what + ": " + file.error().message);
    auto value = AgeDecrypt(*file, identity_);
    if (!value.ok()) return Error::Of(value.error().code, what + ": " + value.error().message);
    ISB_TRY(CheckBound(*file, org, name, what, bound_));
    ISB_ASSIGN_OR_RETURN(std::string again, AgeEncrypt(value->view(), recipients_, {BindingStanza({org, name})}));
    ISB_TRY(WriteFileDurably(path, again));
  }
  ISB_TRY(RemoveVersionsBelow(SecretDir(org, name), FirstKeptVersion(meta->version)));
  return meta->version - FirstKeptVersion(meta->version) + 1;
}

Result<int> SecretStore::Reencrypt() {
  MutexLock lock(mu_);
  int rewritten = 0;
  for (const auto& org : SubdirsByName(dir_)) {
    for (const auto& secret : SubdirsByName(org)) {
      ISB_ASSIGN_OR_RETURN(int n, ReencryptSecretLocked(org.filename().string(), secret.filename().string()));
      rewritten += n;
    }
  }
  // Every file is bound now: from here on one without a binding is refused.
  if (!bound_) {
    ISB_TRY(MarkBound(dir_.parent_path()));
    bound_ = true;
  }
  return rewritten;
}

void SecretStore::Watch(Watcher watcher) {
  MutexLock lock(watchers_mu_);
  watchers_.push_back(std::move(watcher));
}

void SecretStore::Notify(const std::string& org, const std::string& name) {
  std::vector<Watcher> watchers;
  {
    MutexLock lock(watchers_mu_);
    watchers = watchers_;
  }
  for (const Watcher& watcher : watchers) watcher(org, name);
}

}  // namespace isb::secrets
