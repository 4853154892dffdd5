// SecretStore's policy fields: where a placeholder is swapped (substitute), the shortest value a secret with hosts
// may hold, and every version's value for the scrubber.
#include <gtest/gtest.h>

#include "secrets/age_tool.h"
#include "secrets/secret_store.h"

namespace isb::secrets {
namespace {

using testing::AgeKeygen;
using testing::ForgeAgeFile;
using testing::ReadAll;
using testing::RunTool;
using testing::TempDir;
using testing::WriteAll;

constexpr char kTooShort[] =
    "value: 7 bytes is too short for a secret with hosts (at least 8 bytes: every copy of the value in a response is "
    "turned back into its placeholder, and a shorter value would match ordinary bytes); give a longer value, or no "
    "hosts to deliver it as a file only";

SecretBytes Bytes(std::string_view text) { return SecretBytes(text); }

class SecretStorePolicyTest : public ::testing::Test {
 protected:
  std::unique_ptr<SecretStore> OpenStore(size_t min_value_with_hosts = kMinPlaceholderValueSize) {
    auto store = SecretStore::Open({.dir = dir_ / "secrets",
                                    .identity = key_,
                                    .extra_recipients = {},
                                    .now_ms = nullptr,
                                    .min_value_with_hosts = min_value_with_hosts});
    EXPECT_TRUE(store.ok()) << store.error().message;
    return store.ok() ? std::move(store).value() : nullptr;
  }

  TempDir dir_;
  AgeIdentity key_ = AgeIdentity::Generate();
};

TEST_F(SecretStorePolicyTest, ASecretIsSwappedInHeadersOnlyUntilAnAdminOptsInTheQueryOrBody) {
  auto store = OpenStore();
  auto made = store->Create("acme", "K", Bytes("sk-12345678"), {"api.example.com"}, {});
  ASSERT_TRUE(made.ok()) << made.error().message;
  EXPECT_EQ(made->substitute, std::vector<std::string>{"header"});
  auto opted =
      store->Update("acme", "K", std::nullopt, std::nullopt, std::vector<std::string>{"body", "header", "query"});
  ASSERT_TRUE(opted.ok()) << opted.error().message;
  EXPECT_EQ(opted->substitute, (std::vector<std::string>{"header", "query", "body"}));
  // Durable: a store opened again reads it back.
  store.reset();
  store = OpenStore();
  EXPECT_EQ(store->Inspect("acme", "K")->substitute, (std::vector<std::string>{"header", "query", "body"}));
  auto both = store->Create("acme", "B", Bytes("sk-12345678"), {"api.example.com"}, {}, {"header", "body"});
  ASSERT_TRUE(both.ok()) << both.error().message;
  EXPECT_EQ(both->substitute, (std::vector<std::string>{"header", "body"}));
}

TEST_F(SecretStorePolicyTest, ASubstitutePartThatIsNoneOfTheThreeOrLeavesOutHeaderIsRefused) {
  auto store = OpenStore();
  auto bad = store->Create("acme", "K", Bytes("sk-12345678"), {"api.example.com"}, {}, {"header", "cookie"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Code::kInvalidArgument);
  EXPECT_EQ(bad.error().message,
            "substitute: 'cookie' is not a part of a request; give \"header\", \"query\" or \"body\"");
  EXPECT_FALSE(store->Inspect("acme", "K").ok());
  ASSERT_TRUE(store->Create("acme", "K", Bytes("sk-12345678"), {"api.example.com"}, {}).ok());
  auto no_header = store->Update("acme", "K", std::nullopt, std::nullopt, std::vector<std::string>{"body"});
  ASSERT_FALSE(no_header.ok());
  EXPECT_EQ(no_header.error().message,
            "substitute: \"header\" is always among the parts (the placeholder is swapped in headers)");
  EXPECT_EQ(store->Inspect("acme", "K")->substitute, std::vector<std::string>{"header"});
}

// A meta.json written before substitution was per secret has no such field: headers only.
TEST_F(SecretStorePolicyTest, MetadataWithoutSubstituteReadsAsHeadersOnly) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("sk-12345678"), {"api.example.com"}, {}, {"header", "body"}).ok());
  const std::filesystem::path meta = dir_ / "secrets" / "orgs" / "acme" / "K" / "meta.json";
  std::string text = ReadAll(meta);
  const size_t field = text.find(",\n  \"substitute\"");
  ASSERT_NE(field, std::string::npos) << text;
  text.erase(field, text.find(']', field) + 1 - field);
  WriteAll(meta, text);
  EXPECT_EQ(store->Inspect("acme", "K")->substitute, std::vector<std::string>{"header"});
}

TEST_F(SecretStorePolicyTest, AValueUnderEightBytesIsRefusedForASecretWithHostsOnly) {
  auto store = OpenStore();
  auto short_create = store->Create("acme", "K", Bytes("sk-1234"), {"api.example.com"}, {});
  ASSERT_FALSE(short_create.ok());
  EXPECT_EQ(short_create.error().code, Code::kInvalidArgument);
  EXPECT_EQ(short_create.error().message, kTooShort);
  // A file-only secret (no hosts) takes any length.
  ASSERT_TRUE(store->Create("acme", "F", Bytes("x"), {}, {}).ok());
  auto given_hosts = store->Update("acme", "F", std::vector<std::string>{"api.example.com"}, std::nullopt);
  ASSERT_FALSE(given_hosts.ok());
  EXPECT_EQ(given_hosts.error().message,
            "value: 1 bytes is too short for a secret with hosts (at least 8 bytes: every copy of the value in a "
            "response is turned back into its placeholder, and a shorter value would match ordinary bytes); give a "
            "longer value, or no hosts to deliver it as a file only");
  EXPECT_TRUE(store->Inspect("acme", "F")->hosts.empty());
  ASSERT_TRUE(store->Create("acme", "H", Bytes("12345678"), {"api.example.com"}, {}).ok());
  auto short_set = store->Set("acme", "H", Bytes("1234567"));
  ASSERT_FALSE(short_set.ok());
  EXPECT_EQ(short_set.error().message, kTooShort);
  EXPECT_EQ(store->Inspect("acme", "H")->version, 1);
}

TEST_F(SecretStorePolicyTest, APlaceholderValueUnderEightBytesCannotStandBehindAPlaceholder) {
  auto refused = CheckPlaceholderValue("sk-1234");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, kTooShort);
  EXPECT_TRUE(CheckPlaceholderValue("sk-12345").ok());
}

TEST_F(SecretStorePolicyTest, AllVersionsGivesEveryValueOldestFirst) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("value-one"), {"api.example.com"}, {}).ok());
  ASSERT_TRUE(store->Set("acme", "K", Bytes("value-two")).ok());
  ASSERT_TRUE(store->Set("acme", "K", Bytes("value-three")).ok());
  auto all = store->AllVersions("acme", "K");
  ASSERT_TRUE(all.ok()) << all.error().message;
  std::vector<std::string> values;
  EXPECT_TRUE(all->unreadable.empty());
  for (const SecretStore::Value& v : all->values)
    values.push_back(std::to_string(v.version) + ":" + std::string(v.value.view()));
  EXPECT_EQ(values, (std::vector<std::string>{"1:value-one", "2:value-two", "3:value-three"}));
  EXPECT_EQ(store->AllVersions("acme", "NOPE").error().code, Code::kNotFound);
}

std::filesystem::path VersionPath(const TempDir& dir, const std::string& org, const std::string& name, int version) {
  return dir / "secrets" / "orgs" / org / name / ("v" + std::to_string(version) + ".age");
}

// An earlier version that cannot be read is named, and the others still come back; a latest one is an error.
TEST_F(SecretStorePolicyTest, AnUnreadableEarlierVersionIsListedAndTheOthersStillCome) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("value-one"), {"api.example.com"}, {}).ok());
  ASSERT_TRUE(store->Set("acme", "K", Bytes("value-two")).ok());
  ASSERT_TRUE(store->Set("acme", "K", Bytes("value-three")).ok());
  WriteAll(VersionPath(dir_, "acme", "K", 2), "damaged");
  auto all = store->AllVersions("acme", "K");
  ASSERT_TRUE(all.ok()) << all.error().message;
  std::vector<std::string> values;
  for (const SecretStore::Value& v : all->values)
    values.push_back(std::to_string(v.version) + ":" + std::string(v.value.view()));
  EXPECT_EQ(values, (std::vector<std::string>{"1:value-one", "3:value-three"}));
  EXPECT_EQ(all->unreadable, std::vector<int>{2});
  WriteAll(VersionPath(dir_, "acme", "K", 3), "damaged");
  auto latest = store->AllVersions("acme", "K");
  ASSERT_FALSE(latest.ok());
  EXPECT_TRUE(latest.error().message.starts_with("secret 'K' in org 'acme' version 3: ")) << latest.error().message;
}

// A secret keeps its latest 16 versions: the set that makes the 17th removes the first one's file.
TEST_F(SecretStorePolicyTest, ASecretKeepsSixteenVersionsAndTheSetThatPushesOneOutRemovesItsFile) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("value-number-1"), {}, {}).ok());
  for (int v = 2; v <= 16; ++v) ASSERT_TRUE(store->Set("acme", "K", Bytes("value-number-" + std::to_string(v))).ok());
  EXPECT_TRUE(std::filesystem::exists(VersionPath(dir_, "acme", "K", 1)));
  ASSERT_TRUE(store->Set("acme", "K", Bytes("value-number-17")).ok());
  EXPECT_FALSE(std::filesystem::exists(VersionPath(dir_, "acme", "K", 1)));
  EXPECT_TRUE(std::filesystem::exists(VersionPath(dir_, "acme", "K", 2)));
  auto gone = store->Get("acme", "K", 1);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, Code::kNotFound);
  EXPECT_EQ(gone.error().message, "secret 'K' in org 'acme' has no version 1 (it has 2 to 17)");
  auto all = store->AllVersions("acme", "K");
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->values.size(), 16u);
  EXPECT_EQ(all->values.front().version, 2);
  EXPECT_TRUE(all->values.front().value.view() == "value-number-2");
  EXPECT_TRUE(all->values.back().value.view() == "value-number-17");
  EXPECT_EQ(store->Reencrypt().value(), 16);
}

// Files of versions below the kept ones (a release that kept more left them, with gaps between) stay encrypted to
// recipients the store may no longer have: Reencrypt removes them before it marks the store bound.
TEST_F(SecretStorePolicyTest, ReencryptRemovesVersionFilesBelowTheKeptOnes) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("value-number-1"), {}, {}).ok());
  for (int v = 2; v <= 20; ++v) ASSERT_TRUE(store->Set("acme", "K", Bytes("value-number-" + std::to_string(v))).ok());
  for (int old : {1, 3})
    std::filesystem::copy_file(VersionPath(dir_, "acme", "K", 5), VersionPath(dir_, "acme", "K", old));
  EXPECT_EQ(store->Reencrypt().value(), 16);
  for (int old = 1; old <= 4; ++old) EXPECT_FALSE(std::filesystem::exists(VersionPath(dir_, "acme", "K", old))) << old;
  for (int kept = 5; kept <= 20; ++kept)
    EXPECT_TRUE(std::filesystem::exists(VersionPath(dir_, "acme", "K", kept))) << kept;
  auto first = store->Get("acme", "K", 5);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_TRUE(first->value.view() == "value-number-5");
}

// Header names a secret adds to the credential ones: tokens, each once whatever its case, at most 16; durable.
TEST_F(SecretStorePolicyTest, HeaderNamesAreTokensKeptOnceAndReadBackAfterReopening) {
  auto store = OpenStore();
  auto made = store->Create("acme", "K", Bytes("sk-12345678"), {"api.example.com"}, {}, {},
                            {"X-Custom-Key", "x-custom-key", "X-Other"});
  ASSERT_TRUE(made.ok()) << made.error().message;
  EXPECT_EQ(made->headers, (std::vector<std::string>{"X-Custom-Key", "X-Other"}));
  EXPECT_EQ(made->substitute, std::vector<std::string>{"header"});
  auto bad = store->Create("acme", "B", Bytes("sk-12345678"), {"api.example.com"}, {}, {}, {"X Key"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Code::kInvalidArgument);
  EXPECT_EQ(bad.error().message,
            "headers: 'X Key' is not a header name; use 1-128 letters, digits or !#$%&'*+-.^_`|~ (such as "
            "X-Custom-Key)");
  EXPECT_EQ(store->Update("acme", "K", std::nullopt, std::nullopt, std::nullopt, std::vector<std::string>{""})
                .error()
                .message,
            "headers: '' is not a header name; use 1-128 letters, digits or !#$%&'*+-.^_`|~ (such as X-Custom-Key)");
  EXPECT_EQ(store->Update("acme", "K", std::nullopt, std::nullopt, std::nullopt, std::vector<std::string>(17, "X-A"))
                .error()
                .message,
            "headers: 17 names; a secret adds at most 16 headers to the credential ones");
  for (const char* reserved : {"Host", "cookie", "Sec-WebSocket-Protocol", "X-Forwarded-For", "Transfer-Encoding"}) {
    EXPECT_EQ(store->Update("acme", "K", std::nullopt, std::nullopt, std::nullopt, std::vector<std::string>{reserved})
                  .error()
                  .message,
              "headers: '" + std::string(reserved) +
                  "' routes, frames or is echoed by servers; a secret is swapped only into headers that carry "
                  "credentials (such as X-Custom-Key)");
  }
  store.reset();
  store = OpenStore();
  EXPECT_EQ(store->Inspect("acme", "K")->headers, (std::vector<std::string>{"X-Custom-Key", "X-Other"}));
  auto cleared = store->Update("acme", "K", std::nullopt, std::nullopt, std::nullopt, std::vector<std::string>{});
  ASSERT_TRUE(cleared.ok()) << cleared.error().message;
  EXPECT_TRUE(cleared->headers.empty());
}

// meta.json written before secrets could add header names reads as the credential headers only.
TEST_F(SecretStorePolicyTest, MetaWithoutHeadersReadsAsTheCredentialHeadersOnly) {
  auto meta = ParseSecretMeta(R"({"org":"acme","name":"K","version":1,"created_ms":1,"updated_ms":1,"labels":{},)"
                              R"("hosts":["api.example.com:443"]})");
  ASSERT_TRUE(meta.ok()) << meta.error().message;
  EXPECT_TRUE(meta->headers.empty());
  EXPECT_EQ(meta->substitute, std::vector<std::string>{"header"});
}

// Each value file names its org and secret inside its header (under the MAC); the real age still decrypts it.
TEST_F(SecretStorePolicyTest, AValueFileCopiedIntoAnotherOrgsOrNamesPlaceIsRefused) {
  auto glass = AgeKeygen(dir_, "glass.txt");
  auto opened = SecretStore::Open({.dir = dir_ / "secrets",
                                   .identity = key_,
                                   .extra_recipients = {glass.recipient},
                                   .now_ms = nullptr,
                                   .min_value_with_hosts = kMinPlaceholderValueSize});
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  auto& store = *opened;
  ASSERT_TRUE(store->Create("acme", "K", Bytes("acme-value"), {}, {}).ok());
  ASSERT_TRUE(store->Create("other", "K", Bytes("other-value"), {}, {}).ok());
  ASSERT_TRUE(store->Create("acme", "L", Bytes("l-value"), {}, {}).ok());
  const std::string acme_file = ReadAll(VersionPath(dir_, "acme", "K", 1));
  EXPECT_NE(acme_file.find("\n-> isb-binding acme K\n"), std::string::npos);
  ProgramExit d = RunTool({"age", "-d", "-i", glass.file.string(), "-o", (dir_ / "out").string(),
                           VersionPath(dir_, "acme", "K", 1).string()});
  ASSERT_TRUE(d.ok()) << d.stderr_text;
  EXPECT_TRUE(ReadAll(dir_ / "out") == "acme-value");

  WriteAll(VersionPath(dir_, "other", "K", 1), acme_file);
  auto moved = store->Get("other", "K");
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.error().code, Code::kForbidden);
  EXPECT_EQ(moved.error().message,
            "secret 'K' in org 'other' version 1: its file belongs to secret 'K' in org 'acme' (it was copied into "
            "this secret's place); put back this secret's own file, or give it a new value with secret_set");
  WriteAll(VersionPath(dir_, "acme", "L", 1), acme_file);
  EXPECT_EQ(store->Get("acme", "L").error().message,
            "secret 'L' in org 'acme' version 1: its file belongs to secret 'K' in org 'acme' (it was copied into "
            "this secret's place); put back this secret's own file, or give it a new value with secret_set");
  EXPECT_EQ(store->AllVersions("acme", "L").error().code, Code::kForbidden);
  EXPECT_EQ(store->Reencrypt().error().code, Code::kForbidden);
  EXPECT_TRUE(std::string(store->Get("acme", "K")->value.view()) == "acme-value");
}

TEST_F(SecretStorePolicyTest, AStoreFileIsImportedOnlyAsItsOwnSecretAndAFileAgeWroteAsAny) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("acme-value"), {}, {}).ok());
  const std::string acme_file = ReadAll(VersionPath(dir_, "acme", "K", 1));
  auto stolen = store->Import("other", "K", acme_file, {}, {});
  ASSERT_FALSE(stolen.ok());
  EXPECT_EQ(stolen.error().code, Code::kForbidden);
  EXPECT_EQ(stolen.error().message,
            "import: the file is the value file of secret 'K' in org 'acme' in isb's store; it is refused as any other "
            "secret's value");
  EXPECT_FALSE(store->Inspect("other", "K").ok());
  EXPECT_EQ(store->Import("acme", "L", acme_file, {}, {}).error().code, Code::kForbidden);
  auto own = store->Import("acme", "K", acme_file, {}, {});
  ASSERT_TRUE(own.ok()) << own.error().message;
  EXPECT_EQ(own->version, 2);
  // A file without a binding (what `age -r` writes) is anyone's to import, and is bound once stored.
  const std::string made = ForgeAgeFile(key_, {{"user-made-value", true}});
  auto imported = store->Import("other", "M", made, {}, {});
  ASSERT_TRUE(imported.ok()) << imported.error().message;
  EXPECT_TRUE(std::string(store->Get("other", "M")->value.view()) == "user-made-value");
  EXPECT_NE(ReadAll(VersionPath(dir_, "other", "M", 1)).find("\n-> isb-binding other M\n"), std::string::npos);
}

// A file from before bindings, in a store opened with it, reads as it did; Reencrypt writes it again bound and binds
// the store: a file without a binding placed after that is refused, in this store and once it is opened again.
TEST_F(SecretStorePolicyTest, AnUnboundStoreFileStillReadsAndReencryptBindsIt) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Create("acme", "K", Bytes("first-value"), {}, {}).ok());
  store.reset();
  std::filesystem::remove(dir_ / "secrets" / "bound");
  WriteAll(VersionPath(dir_, "acme", "K", 1), ForgeAgeFile(key_, {{"older-value", true}}));
  store = OpenStore();
  EXPECT_FALSE(std::filesystem::exists(dir_ / "secrets" / "bound"));
  EXPECT_TRUE(std::string(store->Get("acme", "K")->value.view()) == "older-value");
  auto rewritten = store->Reencrypt();
  ASSERT_TRUE(rewritten.ok()) << rewritten.error().message;
  EXPECT_NE(ReadAll(VersionPath(dir_, "acme", "K", 1)).find("\n-> isb-binding acme K\n"), std::string::npos);
  EXPECT_TRUE(std::string(store->Get("acme", "K")->value.view()) == "older-value");
  EXPECT_TRUE(std::filesystem::exists(dir_ / "secrets" / "bound"));

  constexpr char kRefused[] =
      "secret 'K' in org 'acme' version 1: its file carries no isb-binding, and every file of this store does since "
      "it was bound; put back this secret's own file, or give it a new value with secret_set";
  WriteAll(VersionPath(dir_, "acme", "K", 1), ForgeAgeFile(key_, {{"placed-value", true}}));
  auto placed = store->Get("acme", "K");
  ASSERT_FALSE(placed.ok());
  EXPECT_EQ(placed.error().code, Code::kForbidden);
  EXPECT_EQ(placed.error().message, kRefused);
  store.reset();
  store = OpenStore();
  EXPECT_EQ(store->Get("acme", "K").error().message, kRefused);
}

// A store with no file from before bindings (a new one among them) is bound from its first Open.
TEST_F(SecretStorePolicyTest, ANewStoreIsBoundAndRefusesAFileWithoutBindingPlacedInIt) {
  auto store = OpenStore();
  EXPECT_TRUE(std::filesystem::exists(dir_ / "secrets" / "bound"));
  ASSERT_TRUE(store->Create("acme", "K", Bytes("first-value"), {}, {}).ok());
  WriteAll(VersionPath(dir_, "acme", "K", 1), ForgeAgeFile(key_, {{"user-made", true}}));
  auto placed = store->Get("acme", "K");
  ASSERT_FALSE(placed.ok());
  EXPECT_EQ(placed.error().code, Code::kForbidden);
  EXPECT_EQ(store->Reencrypt().error().code, Code::kForbidden);
  // `isb secret import` still takes a file `age` made, and stores it bound.
  auto imported = store->Import("acme", "M", ForgeAgeFile(key_, {{"user-made", true}}), {}, {});
  ASSERT_TRUE(imported.ok()) << imported.error().message;
  EXPECT_TRUE(store->Get("acme", "M")->value.view() == "user-made");
}

}  // namespace
}  // namespace isb::secrets
