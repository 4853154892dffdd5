// The secret tools over a real store: a change refused in part leaves the secret as it was.
#include "api/secret_tools.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "secrets/secret_store_limits.h"

namespace isb::api {
namespace {

class SecretToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-secret-tools-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto store = secrets::SecretStore::Open({.dir = dir_ + "/secrets",
                                             .identity = secrets::AgeIdentity::Generate(),
                                             .extra_recipients = {},
                                             .now_ms = nullptr,
                                             .min_value_with_hosts = secrets::kMinPlaceholderValueSize});
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_ = std::move(*store);
    ASSERT_TRUE(AddSecretTools(registry_, *store_).ok());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  Result<nlohmann::json> Run(const std::string& tool, const nlohmann::json& input) {
    CallContext ctx;
    ctx.identity = Identity::Host();
    ctx.org = "acme";
    return registry_.Find(tool)->handler(input, ctx);
  }

  std::string dir_;
  std::unique_ptr<secrets::SecretStore> store_;
  Registry registry_;
};

TEST_F(SecretToolsTest, ASetWhoseValueIsRefusedChangesNeitherItsHostsNorWhereItIsSwapped) {
  ASSERT_TRUE(Run("secret_create", {{"name", "K"}, {"value", "first-value-1"}, {"hosts", {"api.example.com"}}}).ok());
  auto refused =
      Run("secret_set",
          {{"name", "K"}, {"value", "short"}, {"hosts", {"api.other.com"}}, {"substitute", {"header", "body"}}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kInvalidArgument);
  EXPECT_TRUE(refused.error().message.starts_with("value: 5 bytes is too short for a secret with hosts"))
      << refused.error().message;
  auto meta = store_->Inspect("acme", "K");
  ASSERT_TRUE(meta.ok()) << meta.error().message;
  EXPECT_EQ(meta->hosts, std::vector<std::string>{"api.example.com:443"});
  EXPECT_EQ(meta->substitute, std::vector<std::string>{"header"});
  EXPECT_EQ(meta->version, 1);

  auto both = Run("secret_set", {{"name", "K"}, {"value", "second-value"}, {"hosts", {"api.other.com"}}});
  ASSERT_TRUE(both.ok()) << both.error().message;
  meta = store_->Inspect("acme", "K");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->hosts, std::vector<std::string>{"api.other.com:443"});
  EXPECT_EQ(meta->version, 2);
}

// Where a placeholder is swapped (substitute) and the header names a secret adds go in through secret_create and
// secret_set and come back from secret_inspect; a secret made without them has the defaults.
TEST_F(SecretToolsTest, SubstituteAndHeadersRoundTripThroughCreateSetAndInspect) {
  auto made = Run("secret_create", {{"name", "K"},
                                    {"value", "first-value-1"},
                                    {"hosts", {"api.example.com"}},
                                    {"substitute", {"header", "body"}},
                                    {"headers", {"X-Custom-Key"}}});
  ASSERT_TRUE(made.ok()) << made.error().message;
  EXPECT_EQ((*made)["headers"], nlohmann::json({"X-Custom-Key"}));
  auto seen = Run("secret_inspect", {{"name", "K"}});
  ASSERT_TRUE(seen.ok()) << seen.error().message;
  EXPECT_EQ((*seen)["substitute"], nlohmann::json({"header", "body"}));
  EXPECT_EQ((*seen)["headers"], nlohmann::json({"X-Custom-Key"}));

  ASSERT_TRUE(Run("secret_set", {{"name", "K"}, {"headers", {"X-Other-Key", "Api-Token"}}}).ok());
  seen = Run("secret_inspect", {{"name", "K"}});
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ((*seen)["headers"], nlohmann::json({"X-Other-Key", "Api-Token"}));
  EXPECT_EQ((*seen)["substitute"], nlohmann::json({"header", "body"}));
  EXPECT_EQ((*seen)["version"], 1);

  // A bad name is refused before anything changes, a value given with it included.
  auto refused = Run("secret_set", {{"name", "K"}, {"value", "second-value-2"}, {"headers", {"X Bad"}}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kInvalidArgument);
  EXPECT_EQ(refused.error().message,
            "headers: 'X Bad' is not a header name; use 1-128 letters, digits or !#$%&'*+-.^_`|~ (such as "
            "X-Custom-Key)");
  EXPECT_EQ(store_->Inspect("acme", "K")->version, 1);

  ASSERT_TRUE(Run("secret_create", {{"name", "D"}, {"value", "default-value"}, {"hosts", {"api.example.com"}}}).ok());
  seen = Run("secret_inspect", {{"name", "D"}});
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ((*seen)["substitute"], nlohmann::json({"header"}));
  EXPECT_EQ((*seen)["headers"], nlohmann::json::array());
}

}  // namespace
}  // namespace isb::api
