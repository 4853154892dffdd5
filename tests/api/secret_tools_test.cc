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
  auto refused = Run("secret_set", {{"name", "K"},
                                    {"value", "short"},
                                    {"hosts", {"api.other.com"}},
                                    {"substitute", {"header", "body"}}});
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

}  // namespace
}  // namespace isb::api
