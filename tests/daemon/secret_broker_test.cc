// SecretBroker: a spec's secrets resolved against the store (narrowed, never widened), placeholders, and the
// proxy's filter kept bound as the store changes (new versions, earlier values scrubbed, opt-in parts, deletion).
#include "daemon/secret_broker.h"

#include <gtest/gtest.h>

#include "egress/parsed_messages.h"
#include "secrets/age_tool.h"

namespace isb::daemon {
namespace {

using secrets::SecretBytes;

SecretBytes Bytes(std::string_view text) { return SecretBytes(text); }

constexpr char kValue[] = "sk-value-one";
const egress::Exchange kApproved{"sb1", "api.example.com", 443, true};

egress::EgressSpec Spec(const nlohmann::json& egress) {
  Result<egress::EgressSpec> spec = egress::ParseEgressSpec(egress);
  EXPECT_TRUE(spec.ok()) << spec.error().message;
  return spec.ok() ? *spec : egress::EgressSpec{};
}

class SecretBrokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = secrets::SecretStore::Open({.dir = dir_ / "secrets",
                                             .identity = secrets::AgeIdentity::Generate(),
                                             .extra_recipients = {},
                                             .now_ms = nullptr,
                                             .min_value_with_hosts = 0});
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_ = std::move(*store);
    filter_ = std::make_shared<secrets::SecretsFilter>();
    broker_ = std::make_unique<SecretBroker>(SecretBrokerOptions{
        .store = store_.get(),
        .filter = filter_,
        .placeholder_key = std::string(32, 'k'),
        .on_leak = [this](const LeakReport& r) { leaks_.push_back(r.org + " " + r.event.secret + " " + r.event.host); },
        .on_use = [this](const UseReport& r) { uses_.push_back(r.org + " " + r.event.secret + " " + r.event.host); }});
  }

  // A request through the filter's head: the head as it would go on, or "refused: WHY".
  std::string Sent(const std::string& bytes, const egress::Exchange& exchange = kApproved) {
    egress::HttpHead head = egress::Request(bytes);
    std::string refusal = filter_->RequestHead(exchange, head);
    if (!refusal.empty()) return "refused: " + refusal;
    std::string out = head.method + " " + head.target;
    for (const egress::HttpHeader& h : head.headers) out += "|" + h.name + ": " + h.value;
    return out;
  }
  // A response head's X-Echo field after the filter scrubbed it.
  std::string Echoed(const std::string& echo) {
    egress::ResponseHead head = egress::Response("HTTP/1.1 204 No Content\r\nX-Echo: " + echo + "\r\n\r\n");
    filter_->ResponseHead(kApproved, egress::Request("GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n"), head);
    return head.headers.at(0).value;
  }
  std::string Key(const std::string& id = "sb1") { return broker_->Placeholder(id, "KEY"); }
  void BindKey(const std::string& id = "sb1") {
    egress::EgressSpec spec =
        Spec({{"allow", nlohmann::json::array()}, {"secrets", {{{"name", "K"}, {"env", "KEY"}}}}});
    ASSERT_TRUE(broker_->Resolve("acme", spec).ok());
    broker_->Bind(id, "acme", spec);
  }

  secrets::testing::TempDir dir_;
  std::unique_ptr<secrets::SecretStore> store_;
  std::shared_ptr<secrets::SecretsFilter> filter_;
  std::unique_ptr<SecretBroker> broker_;
  std::vector<std::string> leaks_, uses_;
};

TEST_F(SecretBrokerTest, ASpecMayNarrowASecretsHostsButNeverWidenThem) {
  ASSERT_TRUE(store_->Create("acme", "K", Bytes(kValue), {"*.example.com"}, {}).ok());
  egress::EgressSpec defaulted = Spec({{"allow", {"other.test"}}, {"secrets", {"K"}}});
  ASSERT_TRUE(broker_->Resolve("acme", defaulted).ok());
  EXPECT_EQ(egress::EgressSpecToJson(defaulted)["allow"], nlohmann::json({"other.test:443", "*.example.com:443"}));
  egress::EgressSpec narrowed =
      Spec({{"allow", nlohmann::json::array()}, {"secrets", {{{"name", "K"}, {"hosts", {"api.example.com"}}}}}});
  ASSERT_TRUE(broker_->Resolve("acme", narrowed).ok());
  EXPECT_EQ(egress::EgressSpecToJson(narrowed)["allow"], nlohmann::json({"api.example.com:443"}));
  egress::EgressSpec widened =
      Spec({{"allow", nlohmann::json::array()}, {"secrets", {{{"name", "K"}, {"hosts", {"evil.test"}}}}}});
  Status refused = broker_->Resolve("acme", widened);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::kForbidden);
  EXPECT_EQ(
      refused.error().message,
      "egress: secret 'K' may not be sent to evil.test:443: the secret allows only its own hosts (secret_inspect)");
  egress::EgressSpec missing = Spec({{"allow", nlohmann::json::array()}, {"secrets", {"NOPE"}}});
  EXPECT_EQ(broker_->Resolve("acme", missing).error().message, "egress: secret 'NOPE': org 'acme' has no such secret");
  // Another org's secret of the same name is not this org's.
  EXPECT_EQ(broker_->Resolve("other", defaulted).error().code, Code::kNotFound);
}

TEST_F(SecretBrokerTest, APlaceholderIsStablePerSandboxAndVariableAndTheEnvironmentMayNotHideIt) {
  EXPECT_EQ(Key("sb1"), Key("sb1"));
  EXPECT_NE(Key("sb1"), Key("sb2"));
  EXPECT_NE(broker_->Placeholder("sb1", "KEY"), broker_->Placeholder("sb1", "OTHER"));
  ASSERT_EQ(Key().size(), 48u);
  EXPECT_EQ(Key().substr(0, 16), "isb_placeholder_");
  EXPECT_EQ(Key().find_first_not_of("abcdefghijklmnopqrstuvwxyz234567", 16), std::string::npos) << Key();
  egress::EgressSpec spec = Spec({{"allow", nlohmann::json::array()}, {"secrets", {{{"name", "K"}, {"env", "KEY"}}}}});
  std::map<std::string, std::string> env{{"PATH", "/bin"}};
  ASSERT_TRUE(broker_->AddEnvironment("sb1", spec, env).ok());
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"KEY", Key()}, {"PATH", "/bin"}}));
  std::map<std::string, std::string> hidden{{"KEY", "mine"}};
  EXPECT_EQ(broker_->AddEnvironment("sb1", spec, hidden).error().message,
            "environment: KEY holds the placeholder of secret 'K'; leave it out of the environment");
}

TEST_F(SecretBrokerTest, ABoundSandboxHasItsHeaderSwappedAndTheQueryOnlyOnceTheSecretOptsIn) {
  ASSERT_TRUE(store_->Create("acme", "K", Bytes(kValue), {"api.example.com"}, {}).ok());
  BindKey();
  const std::string request =
      "GET /?q=" + Key() + " HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: Bearer " + Key() + "\r\n\r\n";
  EXPECT_EQ(Sent(request), "GET /?q=" + Key() + "|Host: api.example.com|Authorization: Bearer sk-value-one");
  ASSERT_TRUE(
      store_->Update("acme", "K", std::nullopt, std::nullopt, std::vector<std::string>{"header", "query"}).ok());
  EXPECT_EQ(Sent(request), "GET /?q=sk-value-one|Host: api.example.com|Authorization: Bearer sk-value-one");
  EXPECT_EQ(uses_, (std::vector<std::string>{"acme K api.example.com", "acme K api.example.com"}));
  EXPECT_EQ(broker_->Counters("sb1"), (std::map<std::string, secrets::SecretCounters>{{"K", {2, 0, 0}}}));
}

TEST_F(SecretBrokerTest, ANewVersionIsSwappedAtOnceAndEveryEarlierValueOfEightBytesOrMoreIsScrubbed) {
  ASSERT_TRUE(store_->Create("acme", "K", Bytes("short"), {"api.example.com"}, {}).ok());
  ASSERT_TRUE(store_->Set("acme", "K", Bytes(kValue)).ok());
  BindKey();
  ASSERT_TRUE(store_->Set("acme", "K", Bytes("sk-value-two")).ok());
  EXPECT_EQ(Sent("GET / HTTP/1.1\r\nHost: api.example.com\r\nX-Api-Key: " + Key() + "\r\n\r\n"),
            "GET /|Host: api.example.com|X-Api-Key: sk-value-two");
  EXPECT_EQ(Echoed("sk-value-two"), Key());
  EXPECT_EQ(Echoed("sk-value-one"), Key());
  // Under 8 bytes it would match ordinary bytes: left as it is.
  EXPECT_EQ(Echoed("short"), "short");
}

TEST_F(SecretBrokerTest, ADeletedSecretIsNoLongerSwappedAndAnUnboundSandboxHasNothingSwapped) {
  ASSERT_TRUE(store_->Create("acme", "K", Bytes(kValue), {"api.example.com"}, {}).ok());
  BindKey("sb1");
  BindKey("sb2");
  const std::string sb2_request = "GET / HTTP/1.1\r\nHost: api.example.com\r\nX-Api-Key: " + Key("sb2") + "\r\n\r\n";
  const egress::Exchange sb2{"sb2", "api.example.com", 443, true};
  broker_->Unbind("sb2");
  EXPECT_EQ(Sent(sb2_request, sb2), "GET /|Host: api.example.com|X-Api-Key: " + Key("sb2"));
  std::vector<std::string> changed;
  broker_->OnChange([&](const std::string& org, const std::string& name) { changed.push_back(org + "/" + name); });
  ASSERT_TRUE(store_->Delete("acme", "K").ok());
  EXPECT_EQ(Sent("GET / HTTP/1.1\r\nHost: api.example.com\r\nX-Api-Key: " + Key() + "\r\n\r\n"),
            "GET /|Host: api.example.com|X-Api-Key: " + Key());
  EXPECT_EQ(changed, std::vector<std::string>{"acme/K"});
}

// A deleted secret's values stay scrubbed for a sandbox that had them, until it is unbound; a secret made again
// under the name keeps the first one's values scrubbed too.
TEST_F(SecretBrokerTest, ADeletedSecretsValuesStayScrubbedForTheSandboxThatHadThemUntilItIsUnbound) {
  ASSERT_TRUE(store_->Create("acme", "K", Bytes(kValue), {"api.example.com"}, {}).ok());
  ASSERT_TRUE(store_->Set("acme", "K", Bytes("sk-value-two")).ok());
  BindKey();
  ASSERT_TRUE(store_->Delete("acme", "K").ok());
  EXPECT_EQ(Sent("GET / HTTP/1.1\r\nHost: api.example.com\r\nX-Api-Key: " + Key() + "\r\n\r\n"),
            "GET /|Host: api.example.com|X-Api-Key: " + Key());
  EXPECT_EQ(Echoed("sk-value-one"), Key());
  EXPECT_EQ(Echoed("sk-value-two"), Key());
  EXPECT_TRUE(leaks_.empty());
  ASSERT_TRUE(store_->Create("acme", "K", Bytes("sk-value-new"), {"api.example.com"}, {}).ok());
  EXPECT_EQ(Sent("GET / HTTP/1.1\r\nHost: api.example.com\r\nX-Api-Key: " + Key() + "\r\n\r\n"),
            "GET /|Host: api.example.com|X-Api-Key: sk-value-new");
  EXPECT_EQ(Echoed("sk-value-new sk-value-two sk-value-one"), Key() + " " + Key() + " " + Key());
  broker_->Unbind("sb1");
  EXPECT_EQ(Echoed("sk-value-two"), "sk-value-two");
}

std::filesystem::path VersionFile(const secrets::testing::TempDir& dir, int version) {
  return dir / "secrets" / "orgs" / "acme" / "K" / ("v" + std::to_string(version) + ".age");
}

// A version that cannot be read is said on stderr by name and version, and drops nothing else: the other versions
// stay scrubbed, and when the latest cannot be read the values the sandbox had stay scrubbed (and nothing is swapped).
TEST_F(SecretBrokerTest, AnUnreadableVersionIsLoggedAndTheOtherValuesStayScrubbed) {
  ASSERT_TRUE(store_->Create("acme", "K", Bytes(kValue), {"api.example.com"}, {}).ok());
  ASSERT_TRUE(store_->Set("acme", "K", Bytes("sk-value-two")).ok());
  ASSERT_TRUE(store_->Set("acme", "K", Bytes("sk-value-three")).ok());
  secrets::testing::WriteAll(VersionFile(dir_, 2), "damaged");
  ::testing::internal::CaptureStderr();
  BindKey();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "isb: secrets: secret 'K' version 2 cannot be read; the other versions' values are still scrubbed\n");
  EXPECT_EQ(Echoed("sk-value-one"), Key());
  EXPECT_EQ(Echoed("sk-value-three"), Key());
  EXPECT_EQ(Echoed("sk-value-two"), "sk-value-two");  // never read

  secrets::testing::WriteAll(VersionFile(dir_, 3), "damaged");
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(store_->Update("acme", "K", std::nullopt, std::map<std::string, std::string>{{"a", "b"}}).ok());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "isb: secrets: secret 'K' version 3 cannot be read; it is not swapped, and its earlier values are still "
            "scrubbed\n");
  EXPECT_EQ(Sent("GET / HTTP/1.1\r\nHost: api.example.com\r\nX-Api-Key: " + Key() + "\r\n\r\n"),
            "GET /|Host: api.example.com|X-Api-Key: " + Key());
  EXPECT_EQ(Echoed("sk-value-one"), Key());
  EXPECT_EQ(Echoed("sk-value-three"), Key());
}

// The header names an admin added to a secret are swapped in as the credential headers are; any other is not.
TEST_F(SecretBrokerTest, ASecretsOwnHeaderNamesAreSwappedAndOtherHeadersAreNot) {
  ASSERT_TRUE(store_->Create("acme", "K", Bytes(kValue), {"api.example.com"}, {}, {}, {"X-Custom-Key"}).ok());
  BindKey();
  EXPECT_EQ(
      Sent("GET / HTTP/1.1\r\nHost: api.example.com\r\nx-custom-key: " + Key() + "\r\nX-Echo: " + Key() + "\r\n\r\n"),
      "GET /|Host: api.example.com|x-custom-key: sk-value-one|X-Echo: " + Key());
  EXPECT_TRUE(leaks_.empty());
}

TEST_F(SecretBrokerTest, ALeakIsReportedWithTheSandboxsOrg) {
  ASSERT_TRUE(store_->Create("acme", "K", Bytes(kValue), {"api.example.com"}, {}).ok());
  BindKey();
  const egress::Exchange elsewhere{"sb1", "evil.test", 443, true};
  EXPECT_EQ(Sent("GET / HTTP/1.1\r\nHost: evil.test\r\nX-Key: " + Key() + "\r\n\r\n", elsewhere),
            "GET /|Host: evil.test|X-Key: " + Key());
  EXPECT_EQ(leaks_, std::vector<std::string>{"acme K evil.test"});
  EXPECT_TRUE(uses_.empty());
}

TEST_F(SecretBrokerTest, ASecretFileIsReadFromTheStoreAndAMissingOneIsNamed) {
  ASSERT_TRUE(store_->Create("acme", "F", Bytes("x"), {}, {}).ok());
  auto file = broker_->FileSecret("acme", "F");
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_TRUE(file->value.view() == "x");
  auto missing = broker_->FileSecret("acme", "G");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, Code::kNotFound);
  EXPECT_EQ(missing.error().message, "secrets: org 'acme' has no secret 'G'");
}

}  // namespace
}  // namespace isb::daemon
