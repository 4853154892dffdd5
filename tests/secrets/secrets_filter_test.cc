// The secrets filter driven through the egress proxy's own message relay (PrepareRequest, PrepareResponse,
// RelayMessage) over in-memory streams: the exact bytes that reach the origin and the sandbox, the leaks reported
// and the counters.
#include "secrets/secrets_filter.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <deque>
#include <optional>

#include "base/base64.h"
#include "egress/message_relay.h"
#include "egress/parsed_messages.h"
#include "secrets/zlib_whole.h"

namespace isb::secrets {
namespace {

namespace asio = boost::asio;
using egress::Exchange;
using egress::PreparedMessage;

constexpr char kPlaceholder[] = "isb_placeholder_Q7mK2xV9";
constexpr char kValue[] = "sk-live/\"42\"";

// One side of the relay in memory: reads hand out `input` in pieces of `piece` bytes, writes are kept.
class MemoryStream : public egress::MessageStream {
 public:
  explicit MemoryStream(std::string input = {}, size_t piece = 5) : input_(std::move(input)), piece_(piece) {}
  asio::awaitable<Result<size_t>> ReadInto(std::string& buffer, size_t max) override {
    const size_t n = std::min({max, piece_, input_.size() - read_});
    buffer.append(input_, read_, n);
    read_ += n;
    co_return n;
  }
  asio::awaitable<Status> Write(std::string_view bytes) override {
    written.append(bytes);
    co_return Status();
  }
  std::string written;

 private:
  std::string input_;
  size_t read_ = 0;
  size_t piece_;
};

SandboxSecrets OneSecret(OnLeak on_leak) {
  SandboxSecrets secrets;
  secrets.on_leak = on_leak;
  // Swapped in the query and the body too (SwapParts; headers are always).
  secrets.bindings.push_back({"OPENAI_KEY", kPlaceholder, kValue, {{"api.example.com", false, 443}}, {true, true}});
  return secrets;
}

const Exchange kApproved{"sb1", "api.example.com", 443, true};
const Exchange kOtherHost{"sb1", "evil.example.com", 443, true};
const Exchange kPlain{"sb1", "api.example.com", 80, false};

class SecretsFilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    filter_.Set("sb1", OneSecret(OnLeak::kPass));
    filter_.OnLeak([this](const LeakEvent& event) { leaks_.push_back(event); });
  }

  // A request (head and body bytes) through the relay: what the origin got, and the relay's status.
  Status SendRequest(const Exchange& exchange, const std::string& bytes, std::string& origin_got) {
    const egress::HttpHead head = egress::Request(bytes);
    PreparedMessage message = egress::PrepareRequest(filter_, exchange, bytes.substr(0, head.size), head);
    if (!message.refusal.empty()) return Error::Of(Code::kForbidden, message.refusal);
    return Relay(bytes.substr(head.size), message, origin_got);
  }

  // A response to `request` through the relay: what the sandbox got.
  Status SendResponse(const Exchange& exchange, const std::string& request, const std::string& bytes,
                      std::string& sandbox_got) {
    const egress::ResponseHead head = egress::Response(bytes);
    PreparedMessage message =
        egress::PrepareResponse(filter_, exchange, egress::Request(request), bytes.substr(0, head.size), head);
    return Relay(bytes.substr(head.size), message, sandbox_got);
  }

  Status Relay(const std::string& body, PreparedMessage& message, std::string& got) {
    MemoryStream from(body), to;
    std::string buffer;
    asio::io_context io;
    Status result = Error::Of(Code::kInternal, "did not finish");
    asio::co_spawn(io, egress::RelayMessage(from, to, buffer, message), [&](std::exception_ptr e, Status s) {
      if (!e) result = std::move(s);
    });
    io.run();
    got = to.written;
    return result;
  }

  SecretsFilter filter_;
  std::vector<LeakEvent> leaks_;
};

TEST_F(SecretsFilterTest, AnApprovedHostGetsTheValueInTargetHeadersBasicAuthAndAJsonBody) {
  const std::string body = std::string("{\"key\":\"") + kPlaceholder + "\"}";
  const std::string request = std::string("POST /v1/") + kPlaceholder +
                              "?key=%69sb_placeholder_Q7mK2xV9 HTTP/1.1\r\n"
                              "Host: api.example.com\r\nAuthorization: Bearer " +
                              kPlaceholder +
                              "\r\n"
                              "Proxy-Authorization: Basic " +
                              Base64Encode(std::string("me:") + kPlaceholder) +
                              "\r\n"
                              "Content-Type: application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string got;
  ASSERT_TRUE(SendRequest(kApproved, request, got).ok());
  const std::string head =
      "POST /v1/sk-live%2F%2242%22?key=sk-live%2F%2242%22 HTTP/1.1\r\nHost: api.example.com\r\n"
      "Authorization: Bearer sk-live/\"42\"\r\nProxy-Authorization: Basic " +
      Base64Encode("me:sk-live/\"42\"") +
      "\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  ASSERT_EQ(got.substr(0, head.size()), head);
  EXPECT_EQ(egress::Dechunk(std::string_view(got).substr(head.size())), "{\"key\":\"sk-live/\\\"42\\\"\"}");
  EXPECT_TRUE(leaks_.empty());
  EXPECT_EQ(filter_.Counters("sb1"), (std::map<std::string, SecretCounters>{{"OPENAI_KEY", {1, 0, 0}}}));
}

TEST_F(SecretsFilterTest, APlaceholderCutAcrossChunksOfAChunkedBodyIsSwapped) {
  const std::string request =
      std::string("PUT /x HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\n\r\n") +
      "6\r\nisb_pl\r\n12\r\naceholder_Q7mK2xV9\r\n2\r\n!!\r\n0\r\n\r\n";
  std::string got;
  ASSERT_TRUE(SendRequest(kApproved, request, got).ok());
  const std::string head = "PUT /x HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_EQ(got.substr(0, head.size()), head);
  EXPECT_EQ(egress::Dechunk(std::string_view(got).substr(head.size())), std::string(kValue) + "!!");
}

TEST_F(SecretsFilterTest, OverPlainHttpThePlaceholderIsNeverSwappedAndTheLeakIsReported) {
  const std::string request = std::string("GET /?k=") + kPlaceholder + " HTTP/1.1\r\nHost: api.example.com\r\n\r\n";
  std::string got;
  ASSERT_TRUE(SendRequest(kPlain, request, got).ok());
  EXPECT_EQ(got, request);
  EXPECT_EQ(leaks_,
            (std::vector<LeakEvent>{{"sb1", "OPENAI_KEY", "api.example.com", 80, "plain http", OnLeak::kPass}}));
  EXPECT_EQ(filter_.Counters("sb1"), (std::map<std::string, SecretCounters>{{"OPENAI_KEY", {0, 0, 1}}}));
}

TEST_F(SecretsFilterTest, BlockRefusesAPlaceholderHeadedForAnotherHostNamingTheSecretNotTheValue) {
  filter_.Set("sb1", OneSecret(OnLeak::kBlock));
  const std::string request =
      std::string("GET / HTTP/1.1\r\nHost: evil.example.com\r\nX-Api-Key: ") + kPlaceholder + "\r\n\r\n";
  std::string got;
  Status sent = SendRequest(kOtherHost, request, got);
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().message, "secret OPENAI_KEY may not be sent to evil.example.com");
  EXPECT_EQ(
      leaks_,
      (std::vector<LeakEvent>{{"sb1", "OPENAI_KEY", "evil.example.com", 443, "header X-Api-Key", OnLeak::kBlock}}));
}

TEST_F(SecretsFilterTest, BlockOverPlainHttpSaysTheSecretGoesOnlyOverHttps) {
  filter_.Set("sb1", OneSecret(OnLeak::kBlock));
  const std::string request =
      std::string("GET / HTTP/1.1\r\nHost: api.example.com\r\nCookie: k=") + kPlaceholder + "\r\n\r\n";
  std::string got;
  Status sent = SendRequest(kPlain, request, got);
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().message, "secret OPENAI_KEY may be sent to api.example.com only over HTTPS");
}

TEST_F(SecretsFilterTest, StopRefusesAndReportsTheLeakForTheSandboxToBeStopped) {
  filter_.Set("sb1", OneSecret(OnLeak::kStop));
  const std::string request =
      "GET /?q=" + Base64Encode(std::string("x") + kPlaceholder) + " HTTP/1.1\r\nHost: evil.example.com\r\n\r\n";
  std::string got;
  Status sent = SendRequest(kOtherHost, request, got);
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().message, "secret OPENAI_KEY may not be sent to evil.example.com");
  EXPECT_EQ(leaks_, (std::vector<LeakEvent>{{"sb1", "OPENAI_KEY", "evil.example.com", 443, "query", OnLeak::kStop}}));
}

TEST_F(SecretsFilterTest, APlaceholderInTheBodyForAnotherHostCutsTheBodyBeforeItUnderBlock) {
  filter_.Set("sb1", OneSecret(OnLeak::kBlock));
  const std::string body = std::string(40, 'a') + kPlaceholder + "zz";
  const std::string request =
      "POST / HTTP/1.1\r\nHost: evil.example.com\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string got;
  Status sent = SendRequest(kOtherHost, request, got);
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().code, Code::kForbidden);
  EXPECT_EQ(sent.error().message, "secret OPENAI_KEY may not be sent to evil.example.com");
  EXPECT_EQ(got.find("isb_pl"), std::string::npos) << got;
  EXPECT_EQ(leaks_, (std::vector<LeakEvent>{{"sb1", "OPENAI_KEY", "evil.example.com", 443, "body", OnLeak::kBlock}}));
}

TEST_F(SecretsFilterTest, UnderPassABodyForAnotherHostGoesUnchangedAndIsReportedOnce) {
  const std::string body = std::string(kPlaceholder) + " " + kPlaceholder;
  const std::string request =
      "POST / HTTP/1.1\r\nHost: evil.example.com\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string got;
  ASSERT_TRUE(SendRequest(kOtherHost, request, got).ok());
  const std::string head = "POST / HTTP/1.1\r\nHost: evil.example.com\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_EQ(got.substr(0, head.size()), head);
  EXPECT_EQ(egress::Dechunk(std::string_view(got).substr(head.size())), body);
  EXPECT_EQ(leaks_, (std::vector<LeakEvent>{{"sb1", "OPENAI_KEY", "evil.example.com", 443, "body", OnLeak::kPass}}));
  EXPECT_EQ(filter_.Counters("sb1"), (std::map<std::string, SecretCounters>{{"OPENAI_KEY", {0, 0, 1}}}));
}

const char kGet[] = "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n";

TEST_F(SecretsFilterTest, AResponseHasTheValueScrubbedFromHeadersAndItsJsonEscapedFormFromTheBody) {
  const std::string body = "{\"echo\":\"sk-live\\/\\\"42\\\"\",\"raw\":\"sk-live%2F%2242%22\"}";
  const std::string response =
      "HTTP/1.1 200 OK\r\nX-Echo: sk-live/\"42\"\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string got;
  ASSERT_TRUE(SendResponse(kApproved, kGet, response, got).ok());
  const std::string head =
      std::string("HTTP/1.1 200 OK\r\nX-Echo: ") + kPlaceholder + "\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_EQ(got.substr(0, head.size()), head);
  EXPECT_EQ(egress::Dechunk(std::string_view(got).substr(head.size())),
            std::string("{\"echo\":\"") + kPlaceholder + "\",\"raw\":\"" + kPlaceholder + "\"}");
  EXPECT_EQ(filter_.Counters("sb1"), (std::map<std::string, SecretCounters>{{"OPENAI_KEY", {0, 1, 0}}}));
}

// The sandbox may read the counters the moment it has a response's last byte: the relay counts before it writes the
// body's end, not when it lets the message go.
TEST_F(SecretsFilterTest, AResponseIsCountedBeforeItsLastByteIsWritten) {
  // Keeps the counters as they were when each write went out.
  class CountersAtEachWrite : public egress::MessageStream {
   public:
    explicit CountersAtEachWrite(SecretsFilter& filter) : filter_(filter) {}
    asio::awaitable<Result<size_t>> ReadInto(std::string&, size_t) override { co_return size_t{0}; }
    asio::awaitable<Status> Write(std::string_view bytes) override {
      written.append(bytes);
      seen.push_back(filter_.Counters("sb1"));
      co_return Status();
    }
    std::string written;
    std::vector<std::map<std::string, SecretCounters>> seen;

   private:
    SecretsFilter& filter_;
  };
  const std::string body = std::string("echo ") + kValue;
  const std::string response = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  const egress::ResponseHead head = egress::Response(response);
  std::optional<PreparedMessage> message(
      egress::PrepareResponse(filter_, kApproved, egress::Request(kGet), response.substr(0, head.size), head));
  MemoryStream from(response.substr(head.size));
  CountersAtEachWrite to(filter_);
  std::string buffer;
  asio::io_context io;
  Status result = Error::Of(Code::kInternal, "did not finish");
  asio::co_spawn(io, egress::RelayMessage(from, to, buffer, *message), [&](std::exception_ptr e, Status s) {
    if (!e) result = std::move(s);
  });
  io.run();
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_TRUE(to.written.ends_with("0\r\n\r\n")) << to.written;
  ASSERT_FALSE(to.seen.empty());
  // The message (and its filter) is still held here: the count is the relay's, made before the end went out.
  EXPECT_EQ(to.seen.back(), (std::map<std::string, SecretCounters>{{"OPENAI_KEY", {0, 1, 0}}}));
  message.reset();
  EXPECT_EQ(filter_.Counters("sb1"), (std::map<std::string, SecretCounters>{{"OPENAI_KEY", {0, 1, 0}}}))
      << "counted once";
}

std::string Gunzip(std::string_view data) {
  z_stream z{};
  inflateInit2(&z, 31);
  std::string out(1 << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

TEST_F(SecretsFilterTest, AGzipResponseIsScrubbedAndStaysGzip) {
  const std::string body = ZlibWhole(std::string("echo: ") + kValue + " end", 31);
  const std::string response =
      "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string got;
  ASSERT_TRUE(SendResponse(kApproved, kGet, response, got).ok());
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_EQ(got.substr(0, head.size()), head);
  EXPECT_EQ(Gunzip(egress::Dechunk(std::string_view(got).substr(head.size()))),
            std::string("echo: ") + kPlaceholder + " end");
}

// Refused before any of it went: the head waits for the body's first bytes, so the proxy can still answer instead.
TEST_F(SecretsFilterTest, AResponseInACodingIsbCannotReadIsRefusedBeforeItsHeadGoes) {
  const std::string response = "HTTP/1.1 200 OK\r\nContent-Encoding: compress\r\nContent-Length: 4\r\n\r\nabcd";
  std::string got;
  Status sent = SendResponse(kApproved, kGet, response, got);
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().code, Code::kForbidden);
  EXPECT_EQ(
      sent.error().message,
      "isb: the body cannot be scrubbed of secrets: content coding \"compress\" is not one of gzip, deflate, br, zstd");
  EXPECT_EQ(got, "");
}

// A chunked response's trailer fields are dropped, whatever they hold: the scrubber reads content only.
TEST_F(SecretsFilterTest, AChunkedResponsesTrailersAreDropped) {
  const std::string response = std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n") +
                               "X-Err: " + kValue + "\r\n\r\n";
  std::string got;
  ASSERT_TRUE(SendResponse(kApproved, kGet, response, got).ok());
  EXPECT_EQ(got, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n");
}

// Every Content-Encoding field counts (gzip in a second field is still decoded and scrubbed), a header's name is
// scrubbed as its value is, and a transfer-coding other than chunked cuts the response after its head.
TEST_F(SecretsFilterTest, EveryCodingFieldCountsHeaderNamesAreScrubbedAndOtherTransferCodingsAreCut) {
  const std::string body = ZlibWhole(std::string("echo: ") + kValue, 31);
  const std::string response =
      "HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Encoding: gzip\r\n"
      "sk-live: 1\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string got;
  ASSERT_TRUE(SendResponse(kApproved, kGet, response, got).ok());
  const std::string head =
      "HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Encoding: gzip\r\n"
      "sk-live: 1\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_EQ(got.substr(0, head.size()), head);
  EXPECT_EQ(Gunzip(egress::Dechunk(std::string_view(got).substr(head.size()))), std::string("echo: ") + kPlaceholder);

  std::string named;
  filter_.Set("sb1", [] {
    SandboxSecrets s;
    s.bindings.push_back({"TOKEN", "isb_placeholder_tok", "X-Token-abc", {{"api.example.com", false, 443}}});
    return s;
  }());
  ASSERT_TRUE(SendResponse(kApproved, kGet, "HTTP/1.1 204 No Content\r\nX-Token-abc: 1\r\n\r\n", named).ok());
  EXPECT_EQ(named, "HTTP/1.1 204 No Content\r\nisb_placeholder_tok: 1\r\n\r\n");

  filter_.Set("sb1", OneSecret(OnLeak::kPass));
  std::string cut;
  Status sent = SendResponse(kApproved, kGet,
                             "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n", cut);
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().message,
            "isb: a response in a transfer-coding other than chunked cannot be scrubbed of secrets");
}

// A request's TE field does not reach the origin: no transfer-coding but chunked comes back.
TEST_F(SecretsFilterTest, ARequestsTeFieldIsRemoved) {
  std::string got;
  ASSERT_TRUE(
      SendRequest(kApproved, "GET / HTTP/1.1\r\nHost: api.example.com\r\nTE: gzip, trailers\r\n\r\n", got).ok());
  EXPECT_EQ(got, "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
}

TEST_F(SecretsFilterTest, ANewValueTakesEffectOnTheNextMessageAndARemovedSandboxGetsNothingSwapped) {
  const std::string request =
      std::string("GET / HTTP/1.1\r\nHost: api.example.com\r\nX-Api-Key: ") + kPlaceholder + "\r\n\r\n";
  SandboxSecrets next = OneSecret(OnLeak::kPass);
  next.bindings[0].value = "v2";
  filter_.Set("sb1", next);
  std::string got;
  ASSERT_TRUE(SendRequest(kApproved, request, got).ok());
  EXPECT_EQ(got, "GET / HTTP/1.1\r\nHost: api.example.com\r\nX-Api-Key: v2\r\n\r\n");
  filter_.Remove("sb1");
  ASSERT_TRUE(SendRequest(kApproved, request, got).ok());
  EXPECT_EQ(got, request);
  EXPECT_TRUE(filter_.Counters("sb1").empty());
}

// Substitution beyond headers is an admin's opt-in per secret: without it, a placeholder in the target or the body
// of a request to an approved host goes on as it is (it is not secret), is no leak, and counts as no swap.
TEST_F(SecretsFilterTest, WithoutOptInAPlaceholderInTheQueryOrBodyGoesOnAsItIsAndOnlyHeadersAreSwapped) {
  SandboxSecrets headers_only;
  headers_only.bindings.push_back({"OPENAI_KEY", kPlaceholder, kValue, {{"api.example.com", false, 443}}});
  filter_.Set("sb1", headers_only);
  const std::string body = std::string("{\"echo\":\"") + kPlaceholder + "\"}";
  const std::string request =
      std::string("POST /s?q=") + kPlaceholder + " HTTP/1.1\r\nHost: api.example.com\r\nX-Api-Key: " + kPlaceholder +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string got;
  ASSERT_TRUE(SendRequest(kApproved, request, got).ok());
  const std::string head = std::string("POST /s?q=") + kPlaceholder +
                           " HTTP/1.1\r\nHost: api.example.com\r\nX-Api-Key: sk-live/\"42\"\r\n"
                           "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_EQ(got.substr(0, head.size()), head);
  EXPECT_EQ(egress::Dechunk(std::string_view(got).substr(head.size())), body);
  EXPECT_TRUE(leaks_.empty());
  EXPECT_EQ(filter_.Counters("sb1"), (std::map<std::string, SecretCounters>{{"OPENAI_KEY", {1, 0, 0}}}));

  // A request with it only outside the headers is no swap at all.
  std::string plain_got;
  const std::string in_query = std::string("GET /s?q=") + kPlaceholder + " HTTP/1.1\r\nHost: api.example.com\r\n\r\n";
  ASSERT_TRUE(SendRequest(kApproved, in_query, plain_got).ok());
  EXPECT_EQ(plain_got, in_query);
  EXPECT_EQ(filter_.Counters("sb1"), (std::map<std::string, SecretCounters>{{"OPENAI_KEY", {1, 0, 0}}}));
}

TEST_F(SecretsFilterTest, QueryOptInAloneSwapsTheTargetButLeavesTheBody) {
  SandboxSecrets query_only;
  query_only.bindings.push_back(
      {"OPENAI_KEY", kPlaceholder, kValue, {{"api.example.com", false, 443}}, {.query = true, .body = false}});
  filter_.Set("sb1", query_only);
  const std::string request = std::string("POST /s?q=") + kPlaceholder +
                              " HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 24\r\n\r\n" + kPlaceholder;
  std::string got;
  ASSERT_TRUE(SendRequest(kApproved, request, got).ok());
  const std::string head =
      "POST /s?q=sk-live%2F%2242%22 HTTP/1.1\r\nHost: api.example.com\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  ASSERT_EQ(got.substr(0, head.size()), head);
  EXPECT_EQ(egress::Dechunk(std::string_view(got).substr(head.size())), kPlaceholder);
}

// Headers are swapped only where credentials travel (credential_headers.h): a placeholder in any other field goes on
// as it is, so an origin that reflects or stores it cannot hand the value back; it is no leak and counts as no swap.
TEST_F(SecretsFilterTest, OnlyCredentialHeadersHaveThePlaceholderSwappedAndAnyOtherHeaderPassesItAsItIs) {
  std::string request = std::string("GET / HTTP/1.1\r\nHost: api.example.com\r\n");
  for (const char* name : {"Authorization", "proxy-authorization", "X-Api-Key", "Api-Key", "X-Auth-Token",
                           "X-Goog-Api-Key", "X-Debug", "Referer", "Cookie"})
    request += std::string(name) + ": " + kPlaceholder + "\r\n";
  request += "\r\n";
  std::string got;
  ASSERT_TRUE(SendRequest(kApproved, request, got).ok());
  EXPECT_EQ(got, std::string("GET / HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: sk-live/\"42\"\r\n"
                             "proxy-authorization: sk-live/\"42\"\r\nX-Api-Key: sk-live/\"42\"\r\n"
                             "Api-Key: sk-live/\"42\"\r\nX-Auth-Token: sk-live/\"42\"\r\n"
                             "X-Goog-Api-Key: sk-live/\"42\"\r\nX-Debug: ") +
                     kPlaceholder + "\r\nReferer: " + kPlaceholder + "\r\nCookie: " + kPlaceholder + "\r\n\r\n");
  EXPECT_TRUE(leaks_.empty());

  const std::string reflected =
      std::string("GET / HTTP/1.1\r\nHost: api.example.com\r\nX-Debug: ") + kPlaceholder + "\r\n\r\n";
  ASSERT_TRUE(SendRequest(kApproved, reflected, got).ok());
  EXPECT_EQ(got, reflected);
  EXPECT_TRUE(leaks_.empty());
  EXPECT_EQ(filter_.Counters("sb1"), (std::map<std::string, SecretCounters>{{"OPENAI_KEY", {1, 0, 0}}}));
}

// A secret's own header names (SecretMeta::headers) are swapped as the credential headers are, in any case.
TEST_F(SecretsFilterTest, AHeaderNameTheSecretAddsIsSwappedToo) {
  SandboxSecrets secrets = OneSecret(OnLeak::kPass);
  secrets.bindings[0].headers = {"X-Custom-Key"};
  filter_.Set("sb1", secrets);
  const std::string request = std::string("GET / HTTP/1.1\r\nHost: api.example.com\r\nx-custom-key: ") + kPlaceholder +
                              "\r\nX-Custom-Other: " + kPlaceholder + "\r\n\r\n";
  std::string got;
  ASSERT_TRUE(SendRequest(kApproved, request, got).ok());
  EXPECT_EQ(got, std::string("GET / HTTP/1.1\r\nHost: api.example.com\r\nx-custom-key: sk-live/\"42\"\r\n"
                             "X-Custom-Other: ") +
                     kPlaceholder + "\r\n\r\n");
}

// A retired secret (deleted, or its latest value unreadable) is still scrubbed, but neither swapped nor judged.
TEST_F(SecretsFilterTest, ARetiredSecretIsScrubbedButNeitherSwappedNorHeldBack) {
  SandboxSecrets secrets = OneSecret(OnLeak::kBlock);
  secrets.bindings[0].retired = true;
  secrets.bindings[0].old_values = {"sk-old-value-1"};
  filter_.Set("sb1", secrets);
  const std::string request =
      std::string("GET / HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: ") + kPlaceholder + "\r\n\r\n";
  std::string got;
  ASSERT_TRUE(SendRequest(kApproved, request, got).ok());
  EXPECT_EQ(got, request);
  const std::string elsewhere =
      std::string("GET / HTTP/1.1\r\nHost: evil.example.com\r\nAuthorization: ") + kPlaceholder + "\r\n\r\n";
  ASSERT_TRUE(SendRequest(kOtherHost, elsewhere, got).ok());
  EXPECT_EQ(got, elsewhere);
  EXPECT_TRUE(leaks_.empty());
  const std::string body = std::string("a sk-old-value-1 b ") + kValue;
  const std::string response = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_TRUE(SendResponse(kApproved, kGet, response, got).ok());
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_EQ(got.substr(0, head.size()), head);
  EXPECT_EQ(egress::Dechunk(std::string_view(got).substr(head.size())),
            std::string("a ") + kPlaceholder + " b " + kPlaceholder);
}

// After a 101 on plain HTTP the bytes would pass unread (over TLS each WebSocket message is filtered): from a
// sandbox with secrets an upgrade is refused, to any host on any port; over TLS it goes on. A placeholder in it is
// reported as the leak it is, before the upgrade is looked at.
TEST_F(SecretsFilterTest, APlainHttpUpgradeFromASandboxWithSecretsIsRefusedToAnyHost) {
  const std::string upgrade =
      "GET /ws HTTP/1.1\r\nHost: api.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
  std::string got;
  Status refused = SendRequest(kPlain, upgrade, got);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "isb: a protocol upgrade over plain HTTP to api.example.com is refused: this sandbox has secrets, and "
            "what follows the upgrade could not be checked for them; use https:// or wss://");
  EXPECT_EQ(got, "");
  const Exchange other_plain{"sb1", "other.example.com", 8080, false};
  std::string other = upgrade;
  other.replace(other.find("api.example.com"), 15, "other.example.com");
  refused = SendRequest(other_plain, other, got);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "isb: a protocol upgrade over plain HTTP to other.example.com is refused: this sandbox has secrets, and "
            "what follows the upgrade could not be checked for them; use https:// or wss://");
  EXPECT_EQ(got, "");
  EXPECT_TRUE(leaks_.empty());
  ASSERT_TRUE(SendRequest(kApproved, upgrade, got).ok());
  EXPECT_EQ(got, upgrade);
  filter_.Remove("sb1");
  ASSERT_TRUE(SendRequest(kPlain, upgrade, got).ok());  // a sandbox without secrets
  EXPECT_EQ(got, upgrade);
}

TEST_F(SecretsFilterTest, APlainHttpUpgradeCarryingAPlaceholderIsReportedAsALeak) {
  const std::string upgrade =
      std::string("GET /ws?k=") + kPlaceholder +
      " HTTP/1.1\r\nHost: other.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
  const Exchange other_plain{"sb1", "other.example.com", 80, false};
  std::string got;
  Status refused = SendRequest(other_plain, upgrade, got);  // pass: reported, then the upgrade refused
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "isb: a protocol upgrade over plain HTTP to other.example.com is refused: this sandbox has secrets, and "
            "what follows the upgrade could not be checked for them; use https:// or wss://");
  EXPECT_EQ(got, "");
  EXPECT_EQ(leaks_,
            (std::vector<LeakEvent>{{"sb1", "OPENAI_KEY", "other.example.com", 80, "plain http", OnLeak::kPass}}));
  filter_.Set("sb1", OneSecret(OnLeak::kBlock));
  refused = SendRequest(other_plain, upgrade, got);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "secret OPENAI_KEY may not be sent to other.example.com");
  EXPECT_EQ(got, "");
  ASSERT_EQ(leaks_.size(), 2u);
  EXPECT_EQ(leaks_[1], (LeakEvent{"sb1", "OPENAI_KEY", "other.example.com", 80, "plain http", OnLeak::kBlock}));
}

// An origin may echo a value the secret had before it was changed: every version's value is scrubbed.
TEST_F(SecretsFilterTest, AnEarlierValueOfTheSecretIsScrubbedAsTheLatestIs) {
  SandboxSecrets secrets = OneSecret(OnLeak::kPass);
  secrets.bindings[0].old_values = {"sk-old-value-1", "sk-old-value-2"};
  filter_.Set("sb1", secrets);
  const std::string body = std::string("a sk-old-value-1 b sk-old-value-2 c ") + kValue;
  const std::string response =
      "HTTP/1.1 200 OK\r\nX-Old: sk-old-value-1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string got;
  ASSERT_TRUE(SendResponse(kApproved, kGet, response, got).ok());
  const std::string head =
      std::string("HTTP/1.1 200 OK\r\nX-Old: ") + kPlaceholder + "\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_EQ(got.substr(0, head.size()), head);
  EXPECT_EQ(egress::Dechunk(std::string_view(got).substr(head.size())),
            std::string("a ") + kPlaceholder + " b " + kPlaceholder + " c " + kPlaceholder);
  EXPECT_EQ(filter_.Counters("sb1"), (std::map<std::string, SecretCounters>{{"OPENAI_KEY", {0, 1, 0}}}));
}

// Each request that swaps a placeholder is one use per secret (head and body together), for the audit log.
TEST_F(SecretsFilterTest, ARequestThatSwapsIsReportedAsOneUseNamingTheSecretAndHost) {
  std::vector<UseEvent> uses;
  filter_.OnUse([&](const UseEvent& use) { uses.push_back(use); });
  const std::string body = kPlaceholder;
  const std::string request = std::string("POST / HTTP/1.1\r\nHost: api.example.com\r\nX-Api-Key: ") + kPlaceholder +
                              "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string got;
  ASSERT_TRUE(SendRequest(kApproved, request, got).ok());
  ASSERT_TRUE(
      SendRequest(kApproved, std::string(kGet).insert(16, "X-Api-Key: " + std::string(kPlaceholder) + "\r\n"), got)
          .ok());
  ASSERT_TRUE(SendRequest(kApproved, kGet, got).ok());  // nothing to swap: no use
  ASSERT_TRUE(
      SendRequest(kOtherHost,
                  std::string("GET / HTTP/1.1\r\nHost: evil.example.com\r\nX-Key: ") + kPlaceholder + "\r\n\r\n",
                  got)
          .ok());  // a leak, not a use
  const UseEvent use{"sb1", "OPENAI_KEY", "api.example.com", 443};
  EXPECT_EQ(uses, (std::vector<UseEvent>{use, use}));
  EXPECT_EQ(leaks_.size(), 1u);
}

// A placeholder in a header's name is a leak as one in its value is.
TEST_F(SecretsFilterTest, APlaceholderInAHeadersNameForAnotherHostIsHeldBack) {
  filter_.Set("sb1", OneSecret(OnLeak::kBlock));
  const std::string request =
      std::string("GET / HTTP/1.1\r\nHost: evil.example.com\r\nX-") + kPlaceholder + ": 1\r\n\r\n";
  std::string got;
  Status sent = SendRequest(kOtherHost, request, got);
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().message, "secret OPENAI_KEY may not be sent to evil.example.com");
  EXPECT_EQ(
      leaks_,
      (std::vector<LeakEvent>{{"sb1", "OPENAI_KEY", "evil.example.com", 443, "a header's name", OnLeak::kBlock}}));
}

// A request body in a coding isb cannot decode could carry a placeholder it can neither swap nor hold back: it is
// refused, to an approved host or any other, before a byte of it goes on.
TEST_F(SecretsFilterTest, ARequestBodyInAnUnknownCodingIsRefused) {
  for (const Exchange& exchange : {kApproved, kOtherHost}) {
    const std::string request =
        "POST / HTTP/1.1\r\nHost: " + exchange.host + "\r\nContent-Encoding: compress\r\nContent-Length: 4\r\n\r\nabcd";
    std::string got;
    Status sent = SendRequest(exchange, request, got);
    ASSERT_FALSE(sent.ok()) << exchange.host;
    EXPECT_EQ(sent.error().code, Code::kForbidden);
    EXPECT_EQ(sent.error().message,
              "isb: the body cannot be checked for secrets' placeholders: content coding \"compress\" is not one of "
              "gzip, deflate, br, zstd");
    EXPECT_EQ(got.find("abcd"), std::string::npos) << got;
  }
}

// A request's trailer fields are never read by the filter, so they do not go on: a placeholder in one reaches no one.
TEST_F(SecretsFilterTest, ARequestsTrailersAreDroppedWhateverTheyHold) {
  for (const Exchange& exchange : {kApproved, kOtherHost}) {
    const std::string head = "POST / HTTP/1.1\r\nHost: " + exchange.host + "\r\nTransfer-Encoding: chunked\r\n\r\n";
    std::string got;
    ASSERT_TRUE(SendRequest(exchange, head + "2\r\nok\r\n0\r\nX-Key: " + kPlaceholder + "\r\n\r\n", got).ok());
    EXPECT_EQ(got, head + "2\r\nok\r\n0\r\n\r\n") << exchange.host;
  }
  EXPECT_TRUE(leaks_.empty());
}

TEST_F(SecretsFilterTest, ASandboxWithoutSecretsIsRelayedByteForByte) {
  const std::string request = "POST / HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 3\r\n\r\nabc";
  std::string got;
  ASSERT_TRUE(SendRequest({"other", "api.example.com", 443, true}, request, got).ok());
  EXPECT_EQ(got, request);
}

}  // namespace
}  // namespace isb::secrets
