// SecretStore: versions, metadata, durable layout, modes, limits, concurrency, watchers, import and re-encryption.
#include "secrets/secret_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <set>
#include <thread>

#include "secrets/age_tool.h"

namespace isb::secrets {
namespace {

using testing::AgeKeygen;
using testing::ReadAll;
using testing::RunTool;
using testing::TempDir;
using testing::WriteAll;

SecretBytes Bytes(std::string_view text) { return SecretBytes(text); }

class SecretStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<SecretStore> OpenStore(std::vector<std::string> extra = {}) {
    auto store = SecretStore::Open(
        {.dir = dir_ / "secrets", .identity = key_, .extra_recipients = std::move(extra), .now_ms = [this] {
           return ++now_;
         }});
    EXPECT_TRUE(store.ok()) << store.error().message;
    return store.ok() ? std::move(store).value() : nullptr;
  }
  std::filesystem::path SecretDir(const std::string& org, const std::string& name) const {
    return dir_ / "secrets" / "orgs" / org / name;
  }
  // The value of a version, which must read.
  std::string ValueOf(const SecretStore& store, const std::string& org, const std::string& name, int version = 0) {
    auto got = store.Get(org, name, version);
    EXPECT_TRUE(got.ok()) << got.error().message;
    return got.ok() ? std::string(got->value.view()) : std::string();
  }

  TempDir dir_;
  AgeIdentity key_ = AgeIdentity::Generate();
  std::atomic<int64_t> now_{1000};
};

int ModeOf(const std::filesystem::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return static_cast<int>(st.st_mode & 07777);
}

TEST_F(SecretStoreTest, CreateSetAndGetKeepEveryVersion) {
  auto store = OpenStore();
  auto created = store->Create("acme", "API_KEY", Bytes("one"), {"api.example.com"}, {{"team", "web"}});
  ASSERT_TRUE(created.ok()) << created.error().message;
  EXPECT_EQ(created->version, 1);
  EXPECT_EQ(created->org, "acme");
  EXPECT_EQ(created->name, "API_KEY");
  EXPECT_EQ(created->created_ms, 1001);
  EXPECT_EQ(created->updated_ms, 1001);
  EXPECT_EQ(created->hosts, std::vector<std::string>{"api.example.com"});
  EXPECT_EQ(created->labels, (std::map<std::string, std::string>{{"team", "web"}}));
  auto set = store->Set("acme", "API_KEY", Bytes("two"));
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->version, 2);
  EXPECT_EQ(set->created_ms, 1001);
  EXPECT_EQ(set->updated_ms, 1002);
  EXPECT_TRUE(ValueOf(*store, "acme", "API_KEY") == "two");
  EXPECT_TRUE(ValueOf(*store, "acme", "API_KEY", 1) == "one");
  EXPECT_TRUE(ValueOf(*store, "acme", "API_KEY", 2) == "two");
  auto latest = store->Get("acme", "API_KEY");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->version, 2);
  EXPECT_EQ(latest->meta, *set);
  auto missing = store->Get("acme", "API_KEY", 3);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, Code::kNotFound);
  EXPECT_EQ(missing.error().message, "secret 'API_KEY' in org 'acme' has no version 3 (it has 1 to 2)");
}

TEST_F(SecretStoreTest, CreateOfAnExistingSecretIsAConflictAndSetOfAMissingOneIsNotFound) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("v"), {}, {}).ok());
  auto again = store->Create("acme", "K", Bytes("w"), {}, {});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, Code::kConflict);
  EXPECT_EQ(again.error().message, "secret 'K' in org 'acme' already exists; add a version with set");
  auto set = store->Set("acme", "NOPE", Bytes("v"));
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.error().code, Code::kNotFound);
  EXPECT_EQ(set.error().message, "secret 'NOPE' in org 'acme' not found");
  auto other_org = store->Get("other", "K");
  ASSERT_FALSE(other_org.ok());
  EXPECT_EQ(other_org.error().message, "secret 'K' in org 'other' not found");
  EXPECT_TRUE(ValueOf(*store, "acme", "K") == "v");
}

TEST_F(SecretStoreTest, UpdateChangesHostsOrLabelsAndKeepsTheValue) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("v"), {"a.example.com"}, {{"x", "1"}}).ok());
  auto hosts = store->Update("acme", "K", std::vector<std::string>{"*.example.com:8443"}, std::nullopt);
  ASSERT_TRUE(hosts.ok()) << hosts.error().message;
  EXPECT_EQ(hosts->hosts, std::vector<std::string>{"*.example.com:8443"});
  EXPECT_EQ(hosts->labels, (std::map<std::string, std::string>{{"x", "1"}}));
  EXPECT_EQ(hosts->version, 1);
  auto labels = store->Update("acme", "K", std::nullopt, std::map<std::string, std::string>{});
  ASSERT_TRUE(labels.ok());
  EXPECT_TRUE(labels->labels.empty());
  EXPECT_EQ(labels->hosts, std::vector<std::string>{"*.example.com:8443"});
  EXPECT_EQ(labels->updated_ms, 1003);
  auto inspected = store->Inspect("acme", "K");
  ASSERT_TRUE(inspected.ok());
  EXPECT_EQ(*inspected, *labels);
  EXPECT_TRUE(ValueOf(*store, "acme", "K") == "v");
  auto empty = store->Update("acme", "K", std::vector<std::string>{""}, std::nullopt);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message, "hosts: an empty host; give names such as api.example.com or *.example.com:8443");
  EXPECT_EQ(store->Update("acme", "NOPE", std::nullopt, std::nullopt).error().code, Code::kNotFound);
}

TEST_F(SecretStoreTest, ListIsByNameWithMetadataOnlyAndPerOrg) {
  auto store = OpenStore();
  for (const char* name : {"b", "a.env", "C-1"}) ASSERT_TRUE(store->Create("acme", name, Bytes("v"), {}, {}).ok());
  ASSERT_TRUE(store->Create("other", "z", Bytes("v"), {}, {}).ok());
  std::vector<std::string> names;
  for (const SecretMeta& meta : store->List("acme")) names.push_back(meta.name);
  EXPECT_EQ(names, (std::vector<std::string>{"C-1", "a.env", "b"}));
  EXPECT_EQ(store->List("other").size(), 1u);
  EXPECT_TRUE(store->List("nobody").empty());
  EXPECT_TRUE(store->List("../acme").empty());
}

TEST_F(SecretStoreTest, DeleteRemovesEveryVersionFileAndTheNameCanBeUsedAgain) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("one"), {}, {}).ok());
  ASSERT_TRUE(store->Set("acme", "K", Bytes("two")).ok());
  ASSERT_TRUE(store->Delete("acme", "K").ok());
  EXPECT_FALSE(std::filesystem::exists(SecretDir("acme", "K")));
  EXPECT_TRUE(std::filesystem::is_empty(dir_ / "secrets" / "orgs" / "acme"));
  EXPECT_EQ(store->Get("acme", "K").error().code, Code::kNotFound);
  EXPECT_EQ(store->Delete("acme", "K").error().message, "secret 'K' in org 'acme' not found");
  auto again = store->Create("acme", "K", Bytes("three"), {}, {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->version, 1);
  EXPECT_TRUE(ValueOf(*store, "acme", "K") == "three");
}

TEST_F(SecretStoreTest, FilesAre0600AndDirectories0700AndEachVersionIsAnAgeFile) {
  const mode_t umask_before = ::umask(0);  // the store's modes must not depend on the umask it runs under
  auto store = OpenStore();
  ::umask(umask_before);
  ASSERT_TRUE(store->Create("acme", "K", Bytes("one"), {}, {}).ok());
  ASSERT_TRUE(store->Set("acme", "K", Bytes("two")).ok());
  EXPECT_EQ(ModeOf(dir_ / "secrets"), 0700);
  EXPECT_EQ(ModeOf(dir_ / "secrets" / "orgs"), 0700);
  EXPECT_EQ(ModeOf(dir_ / "secrets" / "orgs" / "acme"), 0700);
  EXPECT_EQ(ModeOf(SecretDir("acme", "K")), 0700);
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(SecretDir("acme", "K"))) {
    files.insert(entry.path().filename().string());
    EXPECT_EQ(ModeOf(entry.path()), 0600) << entry.path();
  }
  EXPECT_EQ(files, (std::set<std::string>{"meta.json", "v1.age", "v2.age"}));
  const std::string v1 = ReadAll(SecretDir("acme", "K") / "v1.age");
  EXPECT_TRUE(v1.starts_with("age-encryption.org/v1\n"));
  EXPECT_EQ(v1.find("one"), std::string::npos);
  EXPECT_EQ(ReadAll(SecretDir("acme", "K") / "meta.json").find("one"), std::string::npos);
}

TEST_F(SecretStoreTest, NoFileInTheStoreHoldsTheValueInTheClear) {
  const std::string value = "sk-live-the-value-nobody-may-read-0123456789";
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", SecretBytes(std::string_view(value)), {"a.example.com"}, {}).ok());
  ASSERT_TRUE(store->Set("acme", "K", SecretBytes(std::string_view(value))).ok());
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_.path())) {
    if (!entry.is_regular_file()) continue;
    ++files;
    EXPECT_EQ(ReadAll(entry.path()).find(value), std::string::npos) << entry.path();
  }
  EXPECT_EQ(files, 4);  // meta.json, v1.age, v2.age and the store's record that it is bound
}

TEST_F(SecretStoreTest, AVersionFileDamagedOnDiskGivesAnErrorNamingItAndNoValue) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("one"), {}, {}).ok());
  ASSERT_TRUE(store->Set("acme", "K", Bytes("two")).ok());
  const auto v2 = SecretDir("acme", "K") / "v2.age";
  std::string file = ReadAll(v2);
  file[file.size() - 3] ^= 0x20;
  WriteAll(v2, file);
  auto got = store->Get("acme", "K");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, Code::kInvalidArgument);
  EXPECT_EQ(got.error().message,
            "secret 'K' in org 'acme' version 2: age file: chunk 0 does not authenticate as the final chunk (the file "
            "is corrupted, truncated, or has data appended)");
  EXPECT_TRUE(ValueOf(*store, "acme", "K", 1) == "one");
  auto reencrypt = store->Reencrypt();
  ASSERT_FALSE(reencrypt.ok());
  EXPECT_TRUE(reencrypt.error().message.starts_with("reencrypt secret 'K' in org 'acme' version 2: age file: "))
      << reencrypt.error().message;
}

TEST_F(SecretStoreTest, NamesValuesAndHostsAreChecked) {
  auto store = OpenStore();
  for (std::string bad : {std::string(""), std::string("."), std::string(".."), std::string("a/b"), std::string("a b"),
                          std::string(129, 'x'), std::string("é")}) {
    auto created = store->Create("acme", bad, Bytes("v"), {}, {});
    ASSERT_FALSE(created.ok()) << bad;
    EXPECT_EQ(created.error().code, Code::kInvalidArgument);
    EXPECT_EQ(created.error().message, "name: use 1-128 letters, digits, '_', '.' or '-', got '" + bad + "'");
  }
  EXPECT_TRUE(store->Create("acme", std::string(128, 'x'), Bytes("v"), {}, {}).ok());
  EXPECT_TRUE(store->Create("acme", ".env", Bytes("v"), {}, {}).ok());
  EXPECT_EQ(store->Create("../etc", "K", Bytes("v"), {}, {}).error().message,
            "org: use 1-128 letters, digits, '_', '.' or '-', got '../etc'");
  EXPECT_TRUE(store->Create("acme", "max", SecretBytes(std::string(kMaxSecretValueSize, 'v')), {}, {}).ok());
  auto big = store->Create("acme", "big", SecretBytes(std::string(kMaxSecretValueSize + 1, 'v')), {}, {});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, Code::kTooLarge);
  EXPECT_EQ(big.error().message, "value: 1048577 bytes is over the limit of 1 MiB (1048576 bytes)");
  EXPECT_EQ(store->Set("acme", "max", SecretBytes(std::string(kMaxSecretValueSize + 1, 'v'))).error().code,
            Code::kTooLarge);
  auto empty_host = store->Create("acme", "h", Bytes("v"), {"a.example.com", ""}, {});
  ASSERT_FALSE(empty_host.ok());
  EXPECT_EQ(empty_host.error().message,
            "hosts: an empty host; give names such as api.example.com or *.example.com:8443");
  EXPECT_FALSE(std::filesystem::exists(SecretDir("acme", "big")));
  EXPECT_FALSE(std::filesystem::exists(SecretDir("acme", "h")));
}

TEST(SecretStoreLimitsTest, APlaceholderValueIsAtMost64KiBWithoutCrOrLfAndTheRefusalSaysWhy) {
  EXPECT_TRUE(CheckPlaceholderValue("sk-abc12").ok());
  EXPECT_TRUE(CheckPlaceholderValue(std::string(kMaxPlaceholderValueSize, 'x')).ok());
  auto long_value = CheckPlaceholderValue(std::string(kMaxPlaceholderValueSize + 1, 'x'));
  ASSERT_FALSE(long_value.ok());
  EXPECT_EQ(long_value.error().code, Code::kInvalidArgument);
  EXPECT_EQ(long_value.error().message,
            "value: 65537 bytes is too long to stand behind a placeholder (at most 64 KiB, as it is swapped into HTTP "
            "requests); deliver it as a file instead, which takes up to 1 MiB");
  for (const char* value : {"line\nbreak", "carriage\rreturn"}) {
    auto refused = CheckPlaceholderValue(value);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().message,
              "value: holds a CR or LF, which a placeholder cannot carry into an HTTP header; deliver it as a file "
              "instead, which takes any bytes");
  }
  EXPECT_TRUE(CheckSecretName("OPENAI_API_KEY").ok());
  EXPECT_EQ(CheckSecretName(std::string(200, 'y')).error().message,
            "name: use 1-128 letters, digits, '_', '.' or '-', got '" + std::string(160, 'y') + "...'");
}

TEST_F(SecretStoreTest, ACrashMidWriteLeavesTheOldStateAndReopeningClearsWhatItLeft) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("one"), {}, {}).ok());
  const auto secret = SecretDir("acme", "K");
  // What a crash inside Set leaves: a temp file of each kind, and the new version's file before meta.json named it.
  WriteAll(secret / "~meta.json.0a1b2c", "{\"half");
  WriteAll(secret / "~v2.age.3d4e5f", "age-encryption.org/v1\n-> X25519");
  WriteAll(secret / "v2.age", "not yet named by meta.json");
  std::filesystem::create_directories(dir_ / "secrets" / "orgs" / "acme" / "~K2.0f0f0f" / "x");
  // And a create that crashed before its meta.json.
  std::filesystem::create_directories(SecretDir("acme", "HALF"));
  WriteAll(SecretDir("acme", "HALF") / "v1.age", "partial");
  store.reset();
  store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(std::filesystem::exists(secret / "~meta.json.0a1b2c"));
  EXPECT_FALSE(std::filesystem::exists(secret / "~v2.age.3d4e5f"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "secrets" / "orgs" / "acme" / "~K2.0f0f0f"));
  EXPECT_TRUE(ValueOf(*store, "acme", "K") == "one");
  EXPECT_EQ(store->Inspect("acme", "K")->version, 1);
  ASSERT_EQ(store->List("acme").size(), 1u);
  EXPECT_EQ(store->Inspect("acme", "HALF").error().code, Code::kNotFound);
  // The next set writes version 2 over the stray file, and the half create can be made again.
  ASSERT_TRUE(store->Set("acme", "K", Bytes("two")).ok());
  EXPECT_TRUE(ValueOf(*store, "acme", "K", 2) == "two");
  ASSERT_TRUE(store->Create("acme", "HALF", Bytes("whole"), {}, {}).ok());
  EXPECT_TRUE(ValueOf(*store, "acme", "HALF") == "whole");
}

TEST_F(SecretStoreTest, ConcurrentSetsEachGetTheirOwnVersion) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("v0"), {}, {}).ok());
  constexpr int kThreads = 6, kEach = 8;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        EXPECT_TRUE(store->Set("acme", "K", SecretBytes("t" + std::to_string(t) + "-" + std::to_string(i))).ok());
        EXPECT_TRUE(store->Get("acme", "K").ok());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  auto meta = store->Inspect("acme", "K");
  ASSERT_TRUE(meta.ok());
  ASSERT_EQ(meta->version, 1 + kThreads * kEach);
  std::set<std::string> values;
  // The versions kept (the last 16) each hold a value of their own.
  for (int version = FirstKeptVersion(meta->version); version <= meta->version; ++version)
    values.insert(ValueOf(*store, "acme", "K", version));
  EXPECT_EQ(values.size(), static_cast<size_t>(kMaxSecretVersions));
}

TEST_F(SecretStoreTest, WatchersHearOfEachDurableChangeAndMayReadTheStore) {
  auto store = OpenStore();
  std::vector<std::string> heard;
  store->Watch([&](const std::string& org, const std::string& name) {
    auto meta = store->Inspect(org, name);  // outside the store's lock, and already on disk
    heard.push_back(org + "/" + name + ":" + (meta.ok() ? std::to_string(meta->version) : "gone"));
  });
  ASSERT_TRUE(store->Create("acme", "K", Bytes("one"), {}, {}).ok());
  ASSERT_TRUE(store->Set("acme", "K", Bytes("two")).ok());
  ASSERT_TRUE(store->Update("acme", "K", std::vector<std::string>{"a.example.com"}, std::nullopt).ok());
  EXPECT_FALSE(store->Set("acme", "NOPE", Bytes("x")).ok());
  ASSERT_TRUE(store->Delete("acme", "K").ok());
  EXPECT_EQ(heard, (std::vector<std::string>{"acme/K:1", "acme/K:2", "acme/K:2", "acme/K:gone"}));
}

TEST_F(SecretStoreTest, ImportReadsAFileTheRealAgeWroteForTheStoreAndRefusesOneForAnotherKey) {
  auto store = OpenStore();
  WriteAll(dir_ / "plain", "imported value");
  ProgramExit e =
      RunTool({"age", "-r", store->Recipient(), "-o", (dir_ / "in.age").string(), (dir_ / "plain").string()});
  ASSERT_TRUE(e.ok()) << e.stderr_text;
  auto imported = store->Import("acme", "K", ReadAll(dir_ / "in.age"), {"api.example.com"}, {{"from", "age"}});
  ASSERT_TRUE(imported.ok()) << imported.error().message;
  EXPECT_EQ(imported->version, 1);
  EXPECT_EQ(imported->hosts, std::vector<std::string>{"api.example.com"});
  EXPECT_TRUE(ValueOf(*store, "acme", "K") == "imported value");
  auto second = store->Import("acme", "K", ReadAll(dir_ / "in.age"), {"ignored.example.com"}, {});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->version, 2);
  EXPECT_EQ(second->hosts, std::vector<std::string>{"api.example.com"});

  auto other = AgeEncrypt("x", {AgeIdentity::Generate().Recipient()});
  ASSERT_TRUE(other.ok());
  auto refused = store->Import("acme", "L", *other, {}, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kForbidden);
  EXPECT_EQ(refused.error().message,
            "import: the file is not encrypted to isb's key; encrypt it with age -r " + store->Recipient());
  auto corrupt = store->Import("acme", "L", std::string_view(ReadAll(dir_ / "in.age")).substr(0, 100), {}, {});
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.error().code, Code::kInvalidArgument);
  EXPECT_TRUE(corrupt.error().message.starts_with("import: age file: ")) << corrupt.error().message;
  EXPECT_FALSE(std::filesystem::exists(SecretDir("acme", "L")));
}

TEST_F(SecretStoreTest, ReencryptWritesEveryVersionForTheBreakGlassKeyWhichTheRealAgeThenDecrypts) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("one"), {}, {}).ok());
  ASSERT_TRUE(store->Set("acme", "K", Bytes("two")).ok());
  ASSERT_TRUE(store->Create("other", "L", Bytes("three"), {}, {}).ok());
  auto glass = AgeKeygen(dir_, "break-glass.txt");
  const auto v2 = SecretDir("acme", "K") / "v2.age";
  auto age_decrypt = [&](const std::filesystem::path& file) {
    std::filesystem::remove(dir_ / "out");
    ProgramExit d = RunTool({"age", "-d", "-i", glass.file.string(), "-o", (dir_ / "out").string(), file.string()});
    return d.ok() ? ReadAll(dir_ / "out") : "(age failed: " + d.stderr_text + ")";
  };
  EXPECT_TRUE(age_decrypt(v2).starts_with("(age failed"));
  store.reset();
  store = OpenStore({glass.recipient});
  EXPECT_EQ(store->Recipients(), (std::vector<std::string>{key_.Recipient(), glass.recipient}));
  auto rewritten = store->Reencrypt();
  ASSERT_TRUE(rewritten.ok()) << rewritten.error().message;
  EXPECT_EQ(*rewritten, 3);
  EXPECT_TRUE(age_decrypt(v2) == "two");
  EXPECT_TRUE(age_decrypt(SecretDir("acme", "K") / "v1.age") == "one");
  EXPECT_TRUE(age_decrypt(SecretDir("other", "L") / "v1.age") == "three");
  EXPECT_TRUE(ValueOf(*store, "acme", "K", 1) == "one");
  // New versions go to both keys at once.
  ASSERT_TRUE(store->Set("acme", "K", Bytes("four")).ok());
  EXPECT_TRUE(age_decrypt(SecretDir("acme", "K") / "v3.age") == "four");
}

TEST_F(SecretStoreTest, OpeningWithAnotherKeyOrABadBreakGlassRecipientIsRefused) {
  {
    auto store = OpenStore();
    ASSERT_TRUE(store->Create("acme", "K", Bytes("one"), {}, {}).ok());
  }
  AgeIdentity other = AgeIdentity::Generate();
  auto wrong = SecretStore::Open({.dir = dir_ / "secrets", .identity = other, .extra_recipients = {}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, Code::kForbidden);
  EXPECT_EQ(wrong.error().message, "secrets store " + (dir_ / "secrets").string() +
                                       ": its files are not encrypted to this daemon key (" + other.Recipient() +
                                       "); start isb with the key that wrote them");
  auto bad = SecretStore::Open({.dir = dir_ / "secrets", .identity = key_, .extra_recipients = {"age1nope"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "break-glass recipient 'age1nope': not an age recipient (bech32: too short for its checksum)");
}

}  // namespace
}  // namespace isb::secrets
