// SecretStore: each org's secrets as age files under one directory, one file per version, encrypted to the daemon's
// identity and the break-glass recipients.
//
//   auto store = SecretStore::Open({.dir = state / "secrets", .identity = *LoadDaemonIdentity(sources)});
//   (*store)->Create("acme", "OPENAI_API_KEY", SecretBytes(std::move(value)), {"api.openai.com"}, {});
//   auto got = (*store)->Get("acme", "OPENAI_API_KEY");   // got->value.view() is the value
//
// Layout: <dir>/orgs/<org>/<name>/{v1.age, v2.age, ..., meta.json}; files 0600, directories 0700. Every write is
// a temp file, fsync, rename and directory fsync, and the new version's file is durable before meta.json names it,
// so a crash leaves the previous state readable; what it left half-done ('~' names) is cleared at Open.
//
// Binding: each value file names its org and secret in its age header, under the header's MAC (secret_file_binding.h),
// so a file copied into another secret's place is refused. Files from before bindings have none; a store is bound
// once none of those is left: at Open when every file has its binding (a new store at once), or when Reencrypt has
// rewritten them all. <dir>/bound records it, and from then on a value file without a binding is refused (a
// pre-binding file restored from a backup, or one `age` made and placed by hand: either could be any secret's
// value); `isb secret import` still takes `age` files, and stores them bound. The record is a file of the store's:
// whoever can delete it can write the files it guards too, so it guards against placed files, not against that.
//
// Versions: a secret keeps its latest kMaxSecretVersions (secret_store_limits.h); the set that pushes one out
// removes its file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "secrets/age.h"
#include "secrets/secret_bytes.h"
#include "secrets/secret_store_limits.h"
#include "secrets/secret_store_meta.h"

namespace isb::secrets {

struct SecretStoreOptions {
  std::filesystem::path dir;                  // <state>/secrets; created 0700 if missing
  AgeIdentity identity;                       // the daemon's key: every file is encrypted to it
  std::vector<std::string> extra_recipients;  // break-glass age1... keys: every file is encrypted to them too
  std::function<int64_t()> now_ms = nullptr;  // the clock for created/updated; unset: the system clock
  // The shortest value a secret with hosts may hold (CheckValueWithHosts); 0: any. isb serve sets
  // kMinPlaceholderValueSize.
  size_t min_value_with_hosts = 0;
};

// Thread-safe: one mutex orders every change and read. Messages name the org, the secret and its version, never a
// value.
class SecretStore {
 public:
  // Creates the directories, clears what a crash left, and checks that `identity` opens the store's files
  // (kForbidden naming its recipient otherwise: the daemon was started with another key).
  static Result<std::unique_ptr<SecretStore>> Open(SecretStoreOptions options);

  // The daemon's own recipient (age1...), for `age -r` to encrypt files for `isb secret import`.
  std::string Recipient() const;
  // Every recipient a file is written for: the daemon's first, then the break-glass ones.
  const std::vector<std::string>& Recipients() const { return recipients_; }

  // Version 1 of a new secret. kConflict when it exists; kInvalidArgument for a bad org, name, host, substitute
  // part or header name, or a value too short for its hosts; kTooLarge over 1 MiB. `substitute` empty: headers
  // only; `headers` empty: the credential headers only.
  Result<SecretMeta> Create(const std::string& org, const std::string& name, const SecretBytes& value,
                            std::vector<std::string> hosts, std::map<std::string, std::string> labels,
                            std::vector<std::string> substitute = {}, std::vector<std::string> headers = {});
  // A new version. kNotFound when the secret does not exist.
  Result<SecretMeta> Set(const std::string& org, const std::string& name, const SecretBytes& value);
  // Replaces the hosts, labels, substitute parts and/or header names given; the value and its versions stay.
  Result<SecretMeta> Update(const std::string& org, const std::string& name,
                            std::optional<std::vector<std::string>> hosts,
                            std::optional<std::map<std::string, std::string>> labels,
                            std::optional<std::vector<std::string>> substitute = std::nullopt,
                            std::optional<std::vector<std::string>> headers = std::nullopt);

  struct Value {
    SecretMeta meta;
    SecretBytes value;
    int version = 0;  // the version this value is (meta.version is the latest)
  };
  // `version` 0 is the latest. kNotFound for a missing secret or for a version not kept (kMaxSecretVersions).
  Result<Value> Get(const std::string& org, const std::string& name, int version = 0) const;
  // The kept versions' values (kMaxSecretVersions), oldest first (the last is the latest), with the metadata: for
  // the scrubber, which turns an old value back into the placeholder too. An earlier version that cannot be read
  // (a damaged file, one copied from another secret) is listed in `unreadable` and the others still given; the
  // latest must read (its error otherwise). kNotFound for a missing secret.
  struct Versions {
    std::vector<Value> values;
    std::vector<int> unreadable;
  };
  Result<Versions> AllVersions(const std::string& org, const std::string& name) const;
  Result<SecretMeta> Inspect(const std::string& org, const std::string& name) const;
  // The org's secrets by name; an unknown org has none.
  std::vector<SecretMeta> List(const std::string& org) const;
  // Removes the secret and every version's file. kNotFound when it does not exist.
  Status Delete(const std::string& org, const std::string& name);
  // Decrypts `age_file` (binary age, for this store's recipient) and stores its plaintext: version 1 of a new secret
  // with `hosts` and `labels`, or a new version of an existing one (whose hosts and labels stay). kForbidden when
  // the file is not for this store's key.
  Result<SecretMeta> Import(const std::string& org, const std::string& name, std::string_view age_file,
                            std::vector<std::string> hosts, std::map<std::string, std::string> labels);
  // Re-encrypts every version file of every secret to the current recipients (after break-glass recipients
  // changed). Returns how many files were rewritten.
  Result<int> Reencrypt();

  // Called with (org, name) after a create, set, update, import or delete is durable, outside the store's lock (a
  // watcher may call back into the store). For the proxy to pick up a new version or a deletion at once.
  using Watcher = std::function<void(const std::string& org, const std::string& name)>;
  void Watch(Watcher watcher);

 private:
  SecretStore(SecretStoreOptions options, std::vector<std::string> recipients);

  std::filesystem::path OrgDir(const std::string& org) const;
  std::filesystem::path SecretDir(const std::string& org, const std::string& name) const;
  int64_t NowMs() const;
  Result<Value> GetLocked(const std::string& org, const std::string& name, int version) const ISB_REQUIRES(mu_);
  Status CheckLength(const std::vector<std::string>& hosts, size_t value_size) const;
  Result<SecretMeta> ReadMetaLocked(const std::string& org, const std::string& name) const ISB_REQUIRES(mu_);
  Status WriteVersionLocked(const SecretMeta& meta, int version, std::string_view value) const ISB_REQUIRES(mu_);
  Result<SecretMeta> CreateLocked(const std::string& org, const std::string& name, std::string_view value,
                                  std::vector<std::string> hosts, std::map<std::string, std::string> labels,
                                  std::vector<std::string> substitute, std::vector<std::string> headers)
      ISB_REQUIRES(mu_);
  Result<SecretMeta> SetLocked(const std::string& org, const std::string& name, std::string_view value)
      ISB_REQUIRES(mu_);
  Result<int> ReencryptSecretLocked(const std::string& org, const std::string& name) ISB_REQUIRES(mu_);
  void Notify(const std::string& org, const std::string& name);

  const std::filesystem::path dir_;
  const AgeIdentity identity_;
  const std::vector<std::string> recipients_;
  const std::function<int64_t()> now_ms_;
  const size_t min_value_with_hosts_;
  mutable Mutex mu_;  // guards every file under dir_
  bool bound_ ISB_GUARDED_BY(mu_) = false;
  Mutex watchers_mu_;
  std::vector<Watcher> watchers_ ISB_GUARDED_BY(watchers_mu_);
};

}  // namespace isb::secrets
