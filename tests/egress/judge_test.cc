// The judge against a fake chat-completions server on loopback (reached through a pin, as the daemon's dialer
// would): verdicts, every way of not getting one, the cache, the single flight, the circuit breaker on a fake clock,
// https with a test CA, and the key kept out of every reason.
#include "egress/judge.h"

#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "fake_chat_server.h"

namespace isb::egress {
namespace {

using isb::testing::ChatCompletion;
using isb::testing::ChatRequest;
using isb::testing::FakeChatServer;
using isb::testing::Gate;
using isb::testing::HttpResponseWith;
using nlohmann::json;
using std::chrono::milliseconds;

constexpr const char* kKey = "sk-test-5f0c1d2e3a4b-KEEP-OUT-OF-REASONS";

std::string Verdict(const char* verdict, const char* reason) {
  return ChatCompletion(json({{"verdict", verdict}, {"reason", reason}}).dump());
}

JudgeQuestion Question(const std::string& path = "/v1/items", const std::string& policy = "sbx-1") {
  return JudgeQuestion{"default", policy, "sbx-1", "api.example.com", 80, "GET", path};
}

class JudgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-judge-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/key") << kKey << "\n";
    fds_ = OpenFds();
  }
  void TearDown() override {
    judge_.reset();
    server_.reset();
    std::filesystem::remove_all(dir_);
    EXPECT_EQ(OpenFds(), fds_) << "every connection of the judge and the server is closed";
  }

  static size_t OpenFds() {
    size_t n = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd"); it != std::filesystem::directory_iterator();
         ++it)
      ++n;
    return n;
  }

  // A server answering with `handler`, and a judge asking it as http://judge.test:PORT/v1/chat/completions.
  void Start(isb::testing::ChatHandler handler, const std::function<void(JudgeOptions&)>& tweak = {}) {
    server_ = std::make_unique<FakeChatServer>(std::move(handler));
    JudgeOptions o = Options("http://judge.test:" + std::to_string(server_->port()) + "/v1/chat/completions");
    if (tweak) tweak(o);
    auto judge = Judge::Create(std::move(o));
    ASSERT_TRUE(judge.ok()) << judge.error().message;
    judge_ = std::move(*judge);
  }

  JudgeOptions Options(const std::string& url) {
    JudgeOptions o;
    o.url = url;
    o.model = "judge-model-1";
    o.key_file = dir_ + "/key";
    o.timeout = milliseconds(5000);
    o.pins = {*ParsePin("judge.test=127.0.0.1")};
    o.clock = [this] { return SteadyTime(milliseconds(now_ms_.load())); };
    return o;
  }

  // Decides and checks that the key is in no reason, whatever happened.
  JudgeVerdict Decide(const JudgeQuestion& q) {
    JudgeVerdict v = judge_->Decide(q);
    EXPECT_EQ(v.reason.find(kKey), std::string::npos) << v.reason;
    return v;
  }

  void Advance(milliseconds d) { now_ms_ += d.count(); }

  std::string dir_;
  size_t fds_ = 0;
  std::atomic<int64_t> now_ms_{1'000'000};
  std::unique_ptr<FakeChatServer> server_;
  std::unique_ptr<Judge> judge_;
};

TEST_F(JudgeTest, AllowVerdictAndTheRequestItAskedWith) {
  Start([](const ChatRequest&) { return Verdict("allow", "a public package index"); });
  JudgeVerdict v = Decide(Question());
  EXPECT_TRUE(v.allow);
  EXPECT_EQ(v.reason, "judge allowed: a public package index");

  ASSERT_EQ(server_->request_count(), 1u);
  ChatRequest r = server_->requests()[0];
  EXPECT_TRUE(r.head.starts_with("POST /v1/chat/completions HTTP/1.1\r\n")) << r.head;
  EXPECT_NE(r.head.find("\r\nHost: judge.test:" + std::to_string(server_->port()) + "\r\n"), std::string::npos);
  EXPECT_NE(r.head.find("\r\nAuthorization: Bearer " + std::string(kKey) + "\r\n"), std::string::npos);
  EXPECT_NE(r.head.find("\r\nContent-Type: application/json\r\n"), std::string::npos);
  json body = json::parse(r.body);
  EXPECT_EQ(body["model"], "judge-model-1");
  EXPECT_EQ(body["response_format"], json({{"type", "json_object"}}));
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_NE(body["messages"][0]["content"].get<std::string>().find("\"verdict\": \"allow\" or \"deny\""),
            std::string::npos);
  EXPECT_EQ(body["messages"][1]["role"], "user");
  EXPECT_EQ(json::parse(body["messages"][1]["content"].get<std::string>()), json({{"org", "default"},
                                                                                  {"sandbox", "sbx-1"},
                                                                                  {"host", "api.example.com"},
                                                                                  {"port", 80},
                                                                                  {"method", "GET"},
                                                                                  {"path", "/v1/items"}}));
}

TEST_F(JudgeTest, DenyVerdict) {
  Start([](const ChatRequest&) { return Verdict("deny", "looks like exfiltration"); });
  JudgeVerdict v = Decide(Question());
  EXPECT_FALSE(v.allow);
  EXPECT_EQ(v.reason, "judge denied: looks like exfiltration");
}

TEST_F(JudgeTest, VerdictWithoutReason) {
  Start([](const ChatRequest&) { return ChatCompletion(R"({"verdict":"deny"})"); });
  JudgeVerdict v = Decide(Question());
  EXPECT_FALSE(v.allow);
  EXPECT_EQ(v.reason, "judge denied: no reason given");
}

struct NoVerdictCase {
  const char* name;
  std::string response;
  std::string reason;
};

TEST_F(JudgeTest, EveryAnswerThatIsNoClearVerdictDenies) {
  std::vector<NoVerdictCase> cases = {
      {"garbage body", HttpResponseWith(200, "<html>oops</html>"),
       "judge failed (no verdict: the response is not JSON)"},
      {"no choices", HttpResponseWith(200, R"({"choices":[]})"),
       "judge failed (no verdict: the response has no choices)"},
      {"content not JSON", ChatCompletion("Sure, that host looks fine to me."),
       "judge failed (no verdict: the message content is not JSON)"},
      {"content a list", ChatCompletion(R"(["allow"])"),
       "judge failed (no verdict: the message content is not a JSON object)"},
      {"verdict maybe", ChatCompletion(R"({"verdict":"maybe","reason":"unsure"})"),
       "judge failed (no verdict: the verdict is neither \"allow\" nor \"deny\")"},
      {"verdict Allow", ChatCompletion(R"({"verdict":"Allow"})"),
       "judge failed (no verdict: the verdict is neither \"allow\" nor \"deny\")"},
      {"verdict twice", ChatCompletion(R"({"verdict":"deny","verdict":"allow"})"),
       "judge failed (no verdict: the verdict is given more than once)"},
      {"verdict not a string", ChatCompletion(R"({"verdict":true})"),
       "judge failed (no verdict: the answer has no verdict)"},
      {"reason not a string", ChatCompletion(R"({"verdict":"allow","reason":1})"),
       "judge failed (no verdict: the reason is not a string)"},
      {"HTTP 500", HttpResponseWith(500, R"({"error":"overloaded"})"), "judge failed (HTTP 500)"},
      {"HTTP 401", HttpResponseWith(401, R"({"error":"bad key"})"), "judge failed (HTTP 401)"},
      // The daemon's clients follow no redirect: a 3xx is an answer without a verdict, and the Location is never
      // asked (the server counts one request).
      {"redirect", "HTTP/1.1 302 Found\r\nLocation: http://judge.test/elsewhere\r\nContent-Length: 0\r\n\r\n",
       "judge failed (HTTP 302)"},
      {"permanent redirect",
       "HTTP/1.1 308 Permanent Redirect\r\nLocation: https://other.test/v1\r\nContent-Length: 0\r\n\r\n",
       "judge failed (HTTP 308)"},
      {"cut off", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"choices\"",
       "judge failed (malformed HTTP response: the connection closed inside the response body)"},
      {"not HTTP", "SSH-2.0-OpenSSH_9.6\r\n\r\n",
       "judge failed (malformed HTTP response: status line is not HTTP/1.x SP STATUS SP REASON)"},
  };
  for (const NoVerdictCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string response = c.response;
    Start([response](const ChatRequest&) { return response; });
    JudgeVerdict v = Decide(Question());
    EXPECT_FALSE(v.allow);
    EXPECT_EQ(v.reason, c.reason);
    EXPECT_EQ(server_->request_count(), 1u);
  }
}

TEST_F(JudgeTest, TimeoutDenies) {
  Start([](const ChatRequest&) { return std::nullopt; }, [](JudgeOptions& o) { o.timeout = milliseconds(300); });
  auto start = std::chrono::steady_clock::now();
  JudgeVerdict v = Decide(Question());
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(v.allow);
  EXPECT_EQ(v.reason, "judge failed (timed out after 300 ms)");
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(2000));
}

TEST_F(JudgeTest, UnreachableJudgeDenies) {
  Start([](const ChatRequest&) { return Verdict("allow", "x"); });
  // A port nobody listens on: the server's, once it is gone.
  uint16_t port = server_->port();
  server_.reset();
  JudgeVerdict v = Decide(Question());
  EXPECT_FALSE(v.allow);
  EXPECT_EQ(v.reason,
            "judge failed (egress: cannot connect to judge.test:" + std::to_string(port) + ": Connection refused)");
}

TEST_F(JudgeTest, PrivateAddressWithoutPinIsRefusedByTheDialer) {
  Start([](const ChatRequest&) { return Verdict("allow", "x"); },
        [](JudgeOptions& o) {
          o.pins.clear();
          o.resolver = [](const std::string&) -> Result<std::vector<IpAddress>> {
            return std::vector<IpAddress>{*ParseIpAddress("127.0.0.1")};
          };
        });
  JudgeVerdict v = Decide(Question());
  EXPECT_FALSE(v.allow);
  EXPECT_TRUE(v.reason.starts_with("judge failed (egress refused 'judge.test': it resolves to ")) << v.reason;
  EXPECT_EQ(server_->request_count(), 0u);
}

TEST_F(JudgeTest, CacheHitAsksOnce) {
  Start([](const ChatRequest&) { return Verdict("allow", "fine"); });
  EXPECT_TRUE(Decide(Question()).allow);
  JudgeVerdict again = Decide(Question());
  EXPECT_TRUE(again.allow);
  EXPECT_EQ(again.reason, "judge allowed: fine");
  EXPECT_EQ(server_->request_count(), 1u);
  EXPECT_EQ(judge_->calls(), 1u);

  // Each part of the key is a different question.
  Decide(Question("/other"));
  Decide(Question("/v1/items", "sbx-2"));
  JudgeQuestion post = Question();
  post.method = "POST";
  Decide(post);
  JudgeQuestion port = Question();
  port.port = 8080;
  Decide(port);
  JudgeQuestion org = Question();
  org.org = "acme";
  Decide(org);
  EXPECT_EQ(server_->request_count(), 6u);

  // Five minutes later the verdict is asked for again.
  Advance(std::chrono::minutes(5) - milliseconds(1));
  Decide(Question());
  EXPECT_EQ(server_->request_count(), 6u);
  Advance(milliseconds(1));
  Decide(Question());
  EXPECT_EQ(server_->request_count(), 7u);
}

TEST_F(JudgeTest, FailuresAreNotCached) {
  std::atomic<int> n{0};
  Start([&n](const ChatRequest&) { return ++n == 1 ? HttpResponseWith(503, "{}") : Verdict("allow", "back"); });
  EXPECT_EQ(Decide(Question()).reason, "judge failed (HTTP 503)");
  JudgeVerdict v = Decide(Question());
  EXPECT_TRUE(v.allow);
  EXPECT_EQ(v.reason, "judge allowed: back");
  EXPECT_EQ(server_->request_count(), 2u);
}

TEST_F(JudgeTest, ConcurrentIdenticalQuestionsShareOneCall) {
  Gate gate;
  // No caching: only the single flight can make eight questions one call.
  Start(
      [&gate](const ChatRequest&) {
        gate.Wait();
        return Verdict("deny", "shared");
      },
      [](JudgeOptions& o) { o.cache_ttl = milliseconds(0); });
  constexpr int kAskers = 8;
  std::vector<JudgeVerdict> got(kAskers);
  std::vector<std::thread> askers;
  for (int i = 0; i < kAskers; ++i) askers.emplace_back([&, i] { got[i] = judge_->Decide(Question()); });
  ASSERT_TRUE(server_->WaitForRequests(1));
  for (int i = 0; i < 1000 && judge_->waiting() < kAskers - 1; ++i) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(judge_->waiting(), static_cast<size_t>(kAskers - 1));
  gate.Open();
  for (std::thread& t : askers) t.join();
  for (const JudgeVerdict& v : got) {
    EXPECT_FALSE(v.allow);
    EXPECT_EQ(v.reason, "judge denied: shared");
  }
  EXPECT_EQ(server_->request_count(), 1u);
  EXPECT_EQ(judge_->waiting(), 0u);
  // Not cached (ttl 0): the next question is a new call.
  Decide(Question());
  EXPECT_EQ(server_->request_count(), 2u);
}

TEST_F(JudgeTest, BreakerOpensAfterFiveFailuresProbesAfterThirtySecondsAndCloses) {
  std::atomic<bool> healthy{false};
  Start([&healthy](const ChatRequest&) { return healthy ? Verdict("allow", "ok") : HttpResponseWith(500, "{}"); });
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Decide(Question()).reason, "judge failed (HTTP 500)");
  EXPECT_EQ(judge_->breaker_state("sbx-1"), CircuitBreaker::State::kClosed);
  EXPECT_EQ(Decide(Question()).reason, "judge failed (HTTP 500)");
  EXPECT_EQ(judge_->breaker_state("sbx-1"), CircuitBreaker::State::kOpen);
  EXPECT_EQ(server_->request_count(), 5u);

  // Open: denied at once, nothing asked, for any question of the policy.
  EXPECT_EQ(Decide(Question()).reason, kJudgeCircuitOpen);
  EXPECT_EQ(Decide(Question("/elsewhere")).reason, kJudgeCircuitOpen);
  Advance(std::chrono::seconds(30) - milliseconds(1));
  EXPECT_EQ(Decide(Question()).reason, kJudgeCircuitOpen);
  EXPECT_EQ(server_->request_count(), 5u);
  // Another policy has a breaker of its own.
  EXPECT_EQ(Decide(Question("/v1/items", "sbx-2")).reason, "judge failed (HTTP 500)");
  EXPECT_EQ(server_->request_count(), 6u);

  // After 30 s one probe goes through; it fails, and the breaker opens for another 30 s.
  Advance(milliseconds(1));
  EXPECT_EQ(Decide(Question()).reason, "judge failed (HTTP 500)");
  EXPECT_EQ(server_->request_count(), 7u);
  EXPECT_EQ(judge_->breaker_state("sbx-1"), CircuitBreaker::State::kOpen);
  EXPECT_EQ(Decide(Question()).reason, kJudgeCircuitOpen);
  Advance(std::chrono::seconds(29));
  EXPECT_EQ(Decide(Question()).reason, kJudgeCircuitOpen);
  EXPECT_EQ(server_->request_count(), 7u);

  // The next probe succeeds: closed, and questions are asked again.
  healthy = true;
  Advance(std::chrono::seconds(1));
  JudgeVerdict probe = Decide(Question());
  EXPECT_TRUE(probe.allow);
  EXPECT_EQ(probe.reason, "judge allowed: ok");
  EXPECT_EQ(judge_->breaker_state("sbx-1"), CircuitBreaker::State::kClosed);
  EXPECT_TRUE(Decide(Question("/next")).allow);
  EXPECT_EQ(server_->request_count(), 9u);
}

TEST_F(JudgeTest, HalfOpenLetsExactlyOneProbeThrough) {
  Gate gate;
  std::atomic<int> n{0};
  Start([&](const ChatRequest&) {
    if (++n <= 5) return HttpResponseWith(500, "{}");
    gate.Wait();
    return Verdict("allow", "probe");
  });
  for (int i = 0; i < 5; ++i) Decide(Question("/fail"));
  ASSERT_EQ(judge_->breaker_state("sbx-1"), CircuitBreaker::State::kOpen);
  Advance(std::chrono::seconds(30));
  JudgeVerdict probe;
  std::thread prober([&] { probe = judge_->Decide(Question("/probe")); });
  ASSERT_TRUE(server_->WaitForRequests(6));
  EXPECT_EQ(judge_->breaker_state("sbx-1"), CircuitBreaker::State::kHalfOpen);
  // While the probe is out, other questions are refused at once.
  EXPECT_EQ(Decide(Question("/meanwhile")).reason, kJudgeCircuitOpen);
  gate.Open();
  prober.join();
  EXPECT_TRUE(probe.allow);
  EXPECT_EQ(judge_->breaker_state("sbx-1"), CircuitBreaker::State::kClosed);
  EXPECT_EQ(server_->request_count(), 6u);
}

TEST_F(JudgeTest, DenyVerdictsAreNotFailures) {
  Start([](const ChatRequest&) { return Verdict("deny", "no"); });
  for (int i = 0; i < 6; ++i) EXPECT_EQ(Decide(Question("/" + std::to_string(i))).reason, "judge denied: no");
  EXPECT_EQ(judge_->breaker_state("sbx-1"), CircuitBreaker::State::kClosed);
  EXPECT_EQ(server_->request_count(), 6u);
}

TEST_F(JudgeTest, AnEchoedKeyIsRedacted) {
  // A hostile or buggy endpoint sends the Authorization header back in its reason.
  Start([](const ChatRequest& r) {
    size_t at = r.head.find("Authorization: ");
    std::string auth = r.head.substr(at + 15, r.head.find("\r\n", at) - at - 15);
    return Verdict("deny", ("you sent " + auth).c_str());
  });
  JudgeVerdict v = Decide(Question());
  EXPECT_EQ(v.reason, "judge denied: you sent Bearer [redacted]");
}

TEST_F(JudgeTest, AKeyThatIsPartOfTheRedactionMarkIsRedactedOnce) {
  std::ofstream(dir_ + "/key", std::ios::trunc) << "red\n";
  Start([](const ChatRequest& r) {
    size_t at = r.head.find("Authorization: ");
    std::string auth = r.head.substr(at + 15, r.head.find("\r\n", at) - at - 15);
    return Verdict("deny", ("you sent " + auth + " and red again").c_str());
  });
  JudgeVerdict v = Decide(Question());
  EXPECT_EQ(v.reason, "judge denied: you sent Bearer [redacted] and [redacted] again");
}

TEST_F(JudgeTest, CreateErrorsNameTheOptionNeverTheKey) {
  auto error_of = [&](const std::function<void(JudgeOptions&)>& tweak) {
    JudgeOptions o = Options("http://judge.test/v1/chat/completions");
    tweak(o);
    auto judge = Judge::Create(std::move(o));
    EXPECT_FALSE(judge.ok());
    if (judge.ok()) return std::string();
    EXPECT_EQ(judge.error().code, Code::kInvalidArgument);
    EXPECT_EQ(judge.error().message.find(kKey), std::string::npos);
    return judge.error().message;
  };
  EXPECT_EQ(error_of([](JudgeOptions& o) { o.url = "ftp://judge.test/"; }),
            "judge: --judge-url: URL 'ftp://judge.test/' must start with http:// or https://");
  EXPECT_EQ(error_of([](JudgeOptions& o) { o.url = "https://user:pw@judge.test/"; }),
            "judge: --judge-url: URL 'https://[redacted]@judge.test/' must not carry user information");
  EXPECT_EQ(error_of([](JudgeOptions& o) { o.model = ""; }), "judge: --judge-model is required with --judge-url");
  EXPECT_EQ(error_of([](JudgeOptions& o) { o.key_file = ""; }), "judge: --judge-key-file is required with --judge-url");
  std::ofstream(dir_ + "/empty") << "\n\n";
  EXPECT_EQ(error_of([&](JudgeOptions& o) { o.key_file = dir_ + "/empty"; }),
            "judge: the key file " + dir_ + "/empty is empty");
  std::ofstream(dir_ + "/two") << kKey << "\nsecond line\n";
  EXPECT_EQ(
      error_of([&](JudgeOptions& o) { o.key_file = dir_ + "/two"; }),
      "judge: the key file " + dir_ + "/two holds characters other than printable ASCII; it must hold the key alone");
  std::string missing = error_of([&](JudgeOptions& o) { o.key_file = dir_ + "/missing"; });
  EXPECT_TRUE(missing.starts_with("judge: cannot read the key file " + dir_ + "/missing: ")) << missing;
}

// https: a CA and a certificate for judge.test made with the openssl tool; the judge trusts the CA through ca_file.
class JudgeTlsTest : public JudgeTest {
 protected:
  void SetUp() override {
    JudgeTest::SetUp();
    std::string d = dir_;
    std::string script =
        "cd '" + d +
        "' && "
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 "
        "-subj /CN=isb-test-ca >/dev/null 2>&1 && "
        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr "
        "-subj /CN=judge.test >/dev/null 2>&1 && "
        "printf 'subjectAltName=DNS:judge.test\\n' > ext && "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 "
        "-extfile ext >/dev/null 2>&1";
    ASSERT_EQ(std::system(script.c_str()), 0) << "the openssl tool is needed to make the test CA";
    ctx_ = SSL_CTX_new(TLS_server_method());
    ASSERT_EQ(SSL_CTX_use_certificate_chain_file(ctx_, (d + "/server.pem").c_str()), 1);
    ASSERT_EQ(SSL_CTX_use_PrivateKey_file(ctx_, (d + "/server.key").c_str(), SSL_FILETYPE_PEM), 1);
  }
  void TearDown() override {
    JudgeTest::TearDown();
    SSL_CTX_free(ctx_);
  }

  Result<std::unique_ptr<Judge>> StartTls(const std::string& host, const std::string& ca_file) {
    server_ = std::make_unique<FakeChatServer>([](const ChatRequest&) { return Verdict("allow", "over tls"); }, ctx_);
    JudgeOptions o = Options("https://" + host + ":" + std::to_string(server_->port()) + "/v1/chat/completions");
    o.pins.push_back(*ParsePin("other.test=127.0.0.1"));
    o.ca_file = ca_file;
    return Judge::Create(std::move(o));
  }

  // A judge of the TLS server at https://HOST:PORT asked one question; its verdict.
  JudgeVerdict AskOverTls(const std::string& host, const std::string& ca_file) {
    auto judge = StartTls(host, ca_file);
    EXPECT_TRUE(judge.ok()) << judge.error().message;
    if (!judge.ok()) return {};
    judge_ = std::move(*judge);
    return Decide(Question());
  }

  SSL_CTX* ctx_ = nullptr;
};

TEST_F(JudgeTlsTest, VerifiedAgainstTheExtraCa) {
  JudgeVerdict v = AskOverTls("judge.test", dir_ + "/ca.pem");
  EXPECT_TRUE(v.allow);
  EXPECT_EQ(v.reason, "judge allowed: over tls");
  ASSERT_EQ(server_->request_count(), 1u);
  EXPECT_NE(server_->requests()[0].head.find("\r\nAuthorization: Bearer " + std::string(kKey) + "\r\n"),
            std::string::npos);
}

TEST_F(JudgeTlsTest, UnknownCaIsRefused) {
  JudgeVerdict v = AskOverTls("judge.test", "");
  EXPECT_FALSE(v.allow);
  EXPECT_EQ(v.reason,
            "judge failed (TLS: the certificate of judge.test was refused: unable to get local issuer certificate)");
  EXPECT_EQ(server_->request_count(), 0u);
}

TEST_F(JudgeTlsTest, WrongNameIsRefused) {
  JudgeVerdict v = AskOverTls("other.test", dir_ + "/ca.pem");
  EXPECT_FALSE(v.allow);
  EXPECT_EQ(v.reason, "judge failed (TLS: the certificate of other.test was refused: hostname mismatch)");
  EXPECT_EQ(server_->request_count(), 0u);
}

TEST_F(JudgeTlsTest, UnreadableCaFileIsAnError) {
  auto judge = StartTls("judge.test", dir_ + "/nothing.pem");
  ASSERT_FALSE(judge.ok());
  EXPECT_EQ(judge.error().code, Code::kInvalidArgument);
  EXPECT_TRUE(
      judge.error().message.starts_with("judge: TLS: cannot load CA certificates from " + dir_ + "/nothing.pem: "))
      << judge.error().message;
}

}  // namespace
}  // namespace isb::egress
