// DaemonSecrets: the secrets `isb serve` opens (identity, store, placeholder key), the audit rows of the proxy's
// reports (secret_use with counts once a window at most, secret_leak once a window), and on_leak stop.
#include "daemon/serve_secrets.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>

#include "egress/parsed_messages.h"
#include "secrets/age_tool.h"
#include "store/db.h"
#include "store/migrations.h"

namespace isb::daemon {
namespace {

using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

class DaemonSecretsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = store::Db::Open((dir_ / "isb.db").string(), store::Migrations());
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(*db);
    auto log = audit::AuditLog::Open(*db_);
    ASSERT_TRUE(log.ok()) << log.error().message;
    log_ = std::move(*log);
  }

  std::unique_ptr<DaemonSecrets> Open() {
    SecretsConfig config{.state_dir = dir_.path().string()};
    config.now = [this] { return now_.load(); };
    auto secrets = DaemonSecrets::Open(config, log_.get());
    EXPECT_TRUE(secrets.ok()) << secrets.error().message;
    return secrets.ok() ? std::move(*secrets) : nullptr;
  }

  // Binds sandbox `id` of org acme to secret K (hosts api.example.com, value kValue, created if need be).
  void Bind(DaemonSecrets& secrets, const std::string& id, const char* on_leak = "pass") {
    if (!secrets.store().Inspect("acme", "K").ok()) {
      ASSERT_TRUE(secrets.store()
                      .Create("acme", "K", secrets::SecretBytes(std::string_view(kValue)), {"api.example.com:443"}, {})
                      .ok());
    }
    auto spec = egress::ParseEgressSpec(
        {{"allow", nlohmann::json::array()}, {"on_leak", on_leak}, {"secrets", {{{"name", "K"}, {"env", "KEY"}}}}});
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    ASSERT_TRUE(secrets.broker().Resolve("acme", *spec).ok());
    secrets.broker().Bind(id, "acme", *spec);
  }

  // One request from `id` with its placeholder in a header, to `host`: returns the filter's refusal.
  std::string Send(DaemonSecrets& secrets, const std::string& id, const std::string& host = "api.example.com") {
    egress::HttpHead head = egress::Request("GET / HTTP/1.1\r\nHost: " + host +
                                            "\r\nX-Api-Key: " + secrets.broker().Placeholder(id, "KEY") + "\r\n\r\n");
    return secrets.filter()->RequestHead({id, host, 443, true}, head);
  }

  // The audit rows of `action`: "target details outcome" each.
  std::vector<std::string> Rows(const std::string& action) {
    auto rows = log_->List({.action = action, .limit = audit::kMaxListLimit});
    EXPECT_TRUE(rows.ok()) << rows.error().message;
    std::vector<std::string> out;
    for (const audit::Record& r : rows.ok() ? *rows : std::vector<audit::Record>{})
      out.push_back(r.org + " " + r.actor + " " + r.details + " " + r.outcome);
    return out;
  }

  static constexpr char kValue[] = "sk-daemon-value";
  secrets::testing::TempDir dir_;
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<audit::AuditLog> log_;
  std::atomic<Clock::time_point> now_{Clock::time_point{} + std::chrono::hours(1)};
};

TEST_F(DaemonSecretsTest, OpenMakesTheIdentityAndPlaceholderKeyAndTheStoreRefusesShortValuesWithHosts) {
  auto secrets = Open();
  ASSERT_NE(secrets, nullptr);
  for (const char* file : {"secrets/identity", "secrets/placeholder.key"}) {
    struct stat st {};
    ASSERT_EQ(::stat((dir_ / file).c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
  }
  auto short_value = secrets->store().Create("acme", "K", secrets::SecretBytes(std::string_view("1234567")),
                                             {"api.example.com:443"}, {});
  ASSERT_FALSE(short_value.ok());
  EXPECT_EQ(short_value.error().code, Code::kInvalidArgument);
  // The same key opens the store again, and gives the same placeholders.
  const std::string placeholder = secrets->broker().Placeholder("sb1", "KEY");
  secrets.reset();
  secrets = Open();
  ASSERT_NE(secrets, nullptr);
  EXPECT_EQ(secrets->broker().Placeholder("sb1", "KEY"), placeholder);
}

// The key given in $ISB_AGE_KEY is the store's, and once loaded the daemon's configuration holds no copy of it,
// whether the load succeeded or not.
TEST_F(DaemonSecretsTest, TheConfigHoldsNoKeyAfterItIsLoaded) {
  const secrets::AgeIdentity key = secrets::AgeIdentity::Generate();
  SecretsConfig config{.state_dir = dir_.path().string(), .env_key = std::string(key.Encode().view())};
  auto secrets = DaemonSecrets::Open(config, log_.get());
  ASSERT_TRUE(secrets.ok()) << secrets.error().message;
  EXPECT_EQ((*secrets)->store().Recipient(), key.Recipient());
  EXPECT_TRUE(config.env_key.empty());
  EXPECT_EQ(config.env_key.capacity(), std::string().capacity());

  SecretsConfig bad{.state_dir = dir_.path().string(), .env_key = "AGE-SECRET-KEY-1NOTAKEY"};
  EXPECT_FALSE(DaemonSecrets::Open(bad, log_.get()).ok());
  EXPECT_TRUE(bad.env_key.empty());
}

TEST_F(DaemonSecretsTest, ABadRecipientsFileIsNamed) {
  SecretsConfig config{.state_dir = dir_.path().string(), .recipients_file = (dir_ / "nope").string()};
  auto secrets = DaemonSecrets::Open(config, log_.get());
  ASSERT_FALSE(secrets.ok());
  EXPECT_EQ(secrets.error().message.rfind("--secrets-recipients: ", 0), 0u) << secrets.error().message;
}

// The first use is a row at once; later ones within the minute are counted, and the count is a row once the minute
// is over; never the value.
TEST_F(DaemonSecretsTest, UsesAreAnAuditRowPerSandboxSecretAndHostAtMostOnceAMinuteWithTheirCount) {
  auto secrets = Open();
  ASSERT_NE(secrets, nullptr);
  Bind(*secrets, "sb1");
  Bind(*secrets, "sb2");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Send(*secrets, "sb1"), "");
  EXPECT_EQ(Send(*secrets, "sb2"), "");
  secrets->WriteQueued();
  const std::string sb1 = "acme sandbox:sb1 {\"host\":\"api.example.com:443\",\"secret\":\"K\",\"swapped\":";
  const std::string sb2 = "acme sandbox:sb2 {\"host\":\"api.example.com:443\",\"secret\":\"K\",\"swapped\":";
  EXPECT_EQ(Rows("secret_use"), (std::vector<std::string>{sb1 + "1} ok", sb2 + "1} ok"}));
  now_ = now_.load() + seconds(30);
  EXPECT_EQ(Send(*secrets, "sb1"), "");
  secrets->FlushUses();  // not yet a minute since sb1's row
  secrets->WriteQueued();
  EXPECT_EQ(Rows("secret_use").size(), 2u);
  now_ = now_.load() + seconds(31);
  secrets->FlushUses();
  secrets->WriteQueued();
  EXPECT_EQ(Rows("secret_use"), (std::vector<std::string>{sb1 + "1} ok", sb2 + "1} ok", sb1 + "3} ok"}));
  // A use after a flushed row waits for the next window; nothing pending at the end is lost.
  now_ = now_.load() + seconds(1);
  EXPECT_EQ(Send(*secrets, "sb1"), "");
  secrets->WriteQueued();
  EXPECT_EQ(Rows("secret_use").size(), 3u);
  secrets.reset();
  EXPECT_EQ(Rows("secret_use").back(), sb1 + "1} ok");
  for (const std::string& row : Rows("secret_use")) EXPECT_EQ(row.find(kValue), std::string::npos);
}

TEST_F(DaemonSecretsTest, ALeakIsOneRowAMinuteAndOnLeakStopStopsTheSandbox) {
  auto secrets = Open();
  ASSERT_NE(secrets, nullptr);
  Bind(*secrets, "sb1", "stop");
  std::atomic<int> stopped{0};
  std::string stopped_id;
  Mutex mu;
  secrets->SetStopper([&](const std::string& id) {
    MutexLock lock(mu);
    stopped_id = id;
    ++stopped;
  });
  EXPECT_EQ(Send(*secrets, "sb1", "evil.test"), "secret K may not be sent to evil.test");
  EXPECT_EQ(Send(*secrets, "sb1", "evil.test"), "secret K may not be sent to evil.test");
  for (int i = 0; i < 200 && stopped < 2; ++i) ::usleep(10000);
  EXPECT_EQ(stopped, 2);
  {
    MutexLock lock(mu);
    EXPECT_EQ(stopped_id, "sb1");
  }
  secrets->WriteQueued();
  EXPECT_EQ(
      Rows("secret_leak"),
      std::vector<std::string>{"acme sandbox:sb1 {\"action\":\"stop\",\"host\":\"evil.test:443\",\"secret\":\"K\","
                               "\"where\":\"header X-Api-Key\"} forbidden"});
  secrets->SetStopper(nullptr);
}

// One sandbox's uses keep at most 256 (secret, host) tallies: a use toward one more host is counted under
// "(other hosts)" (one row, one tally) and in UsesOverCap, not in a tally of its own; that row names the first 16
// hosts it counted.
TEST_F(DaemonSecretsTest, ASandboxsUsesKeepAtMost256HostTalliesAndTheRestAreCountedTogether) {
  auto secrets = Open();
  ASSERT_NE(secrets, nullptr);
  ASSERT_TRUE(secrets->store()
                  .Create("acme", "W", secrets::SecretBytes(std::string_view(kValue)), {"*.example.com:443"}, {})
                  .ok());
  auto spec =
      egress::ParseEgressSpec({{"allow", nlohmann::json::array()}, {"secrets", {{{"name", "W"}, {"env", "KEY"}}}}});
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_TRUE(secrets->broker().Resolve("acme", *spec).ok());
  secrets->broker().Bind("sb1", "acme", *spec);
  for (int i = 0; i < 300; ++i) ASSERT_EQ(Send(*secrets, "sb1", "h" + std::to_string(i) + ".example.com"), "");
  EXPECT_EQ(secrets->UsesOverCap(), 44u);
  secrets->WriteQueued();
  std::vector<std::string> rows = Rows("secret_use");
  ASSERT_EQ(rows.size(), 257u);
  EXPECT_EQ(std::count(rows.begin(), rows.end(),
                       "acme sandbox:sb1 {\"host\":\"(other hosts)\",\"hosts\":[\"h256.example.com:443\"],"
                       "\"secret\":\"W\",\"swapped\":1} ok"),
            1);
  // The other 43 are pending under it, and written at the end like any count, naming the first 16 of them.
  secrets.reset();
  std::string named;
  for (int i = 257; i < 273; ++i)
    named += std::string(named.empty() ? "" : ",") + "\"h" + std::to_string(i) + ".example.com:443\"";
  EXPECT_EQ(Rows("secret_use").back(), "acme sandbox:sb1 {\"host\":\"(other hosts)\",\"hosts\":[" + named +
                                           "],\"secret\":\"W\",\"swapped\":43} ok");
}

}  // namespace
}  // namespace isb::daemon
