// The message relay over in-memory streams: exact bytes out for each framing, filtered or not, and how much it
// reads and writes at once.
#include "egress/message_relay.h"

#include <deque>

#include <gtest/gtest.h>

#include "egress/parsed_messages.h"

#include "egress/replacing_filter.h"

namespace isb::egress {
namespace {

namespace asio = boost::asio;

// Reads return the scripted pieces (each cut to what the read asks for), then the end; writes are kept.
class ScriptedStream : public MessageStream {
 public:
  explicit ScriptedStream(std::deque<std::string> pieces = {}) : pieces_(std::move(pieces)) {}
  asio::awaitable<Result<size_t>> ReadInto(std::string& buffer, size_t max) override {
    largest_read_ = std::max(largest_read_, max);
    if (pieces_.empty()) co_return size_t{0};
    std::string& next = pieces_.front();
    const size_t n = std::min(max, next.size());
    buffer.append(next, 0, n);
    next.erase(0, n);
    if (next.empty()) pieces_.pop_front();
    co_return n;
  }
  asio::awaitable<Status> Write(std::string_view bytes) override {
    largest_write_ = std::max(largest_write_, bytes.size());
    written_.append(bytes);
    co_return Status();
  }
  const std::string& written() const { return written_; }
  std::string unread() const {
    std::string rest;
    for (const std::string& piece : pieces_) rest += piece;
    return rest;
  }
  size_t largest_read() const { return largest_read_; }
  size_t largest_write() const { return largest_write_; }

 private:
  std::deque<std::string> pieces_;
  std::string written_;
  size_t largest_read_ = 0, largest_write_ = 0;
};

Status Relay(ScriptedStream& from, ScriptedStream& to, std::string& buffer, PreparedMessage& message) {
  asio::io_context io;
  Status result = Error::Of(Code::kInternal, "did not finish");
  asio::co_spawn(io, RelayMessage(from, to, buffer, message), [&](std::exception_ptr e, Status s) {
    if (!e) result = std::move(s);
  });
  io.run();
  return result;
}

const Exchange kExchange{"sb1", "example.test", 443};

TEST(MessageRelay, AnUnfilteredRequestGoesAsSentAndTheNextRequestStaysInTheBuffer) {
  const std::string head = "POST /a HTTP/1.1\r\nHost:  example.test\r\nContent-Length: 11\r\n\r\n";
  MessageFilter identity;
  PreparedMessage message = PrepareRequest(identity, kExchange, head, Request(head));
  ScriptedStream from({"PLACEH", "OLDERGET /next HTTP/1.1\r\n"}), to;
  std::string buffer;
  ASSERT_TRUE(Relay(from, to, buffer, message).ok());
  EXPECT_EQ(to.written(), head + "PLACEHOLDER");
  EXPECT_EQ(buffer, "");
  EXPECT_EQ(from.unread(), "GET /next HTTP/1.1\r\n") << "no read goes past the body's end";
}

TEST(MessageRelay, AFilteredRequestGetsItsHeadEditedForItsSandboxAndItsBodyChunkedAnew) {
  const std::string head = "POST /a HTTP/1.1\r\nHost: example.test\r\nContent-Length: 11\r\n\r\n";
  ReplacingFilter filter("PLACEHOLDER", "s3cr3t");
  PreparedMessage message = PrepareRequest(filter, kExchange, head, Request(head));
  ScriptedStream from, to;
  std::string buffer = "PLACEHOLDERGET /next HTTP/1.1\r\n";
  ASSERT_TRUE(Relay(from, to, buffer, message).ok());
  EXPECT_EQ(to.written(),
            "POST /a HTTP/1.1\r\nHost: example.test\r\nX-Filtered: sb1\r\nTransfer-Encoding: chunked\r\n\r\n"
            "6\r\ns3cr3t\r\n0\r\n\r\n");
  EXPECT_EQ(buffer, "GET /next HTTP/1.1\r\n");
}

TEST(MessageRelay, AFilteredHttp10RequestIsSentWithItsNewContentLengthAfterItsBody) {
  const std::string head = "POST /a HTTP/1.0\r\nHost: example.test\r\nContent-Length: 13\r\n\r\n";
  ReplacingFilter filter("PLACEHOLDER", "s3cr3t");
  PreparedMessage message = PrepareRequest(filter, kExchange, head, Request(head));
  EXPECT_EQ(message.out, Reframe::kBuffered);
  ScriptedStream from({"PLACEH", "OLDER!!"}), to;
  std::string buffer;
  ASSERT_TRUE(Relay(from, to, buffer, message).ok());
  EXPECT_EQ(to.written(),
            "POST /a HTTP/1.0\r\nHost: example.test\r\nX-Filtered: sb1\r\nContent-Length: 8\r\n\r\n"
            "s3cr3t!!");
}

TEST(MessageRelay, AFilteredHttp10RequestPastTheBoundIsRefusedBeforeAnythingIsSent) {
  const uint64_t size = kMaxBufferedBody + 100;
  const std::string head =
      "POST /a HTTP/1.0\r\nHost: example.test\r\nContent-Length: " + std::to_string(size) + "\r\n\r\n";
  ReplacingFilter filter("PLACEHOLDER", "s3cr3t");
  PreparedMessage message = PrepareRequest(filter, kExchange, head, Request(head));
  ScriptedStream from({std::string(size, 'a')}), to;
  std::string buffer;
  Status relayed = Relay(from, to, buffer, message);
  ASSERT_FALSE(relayed.ok());
  EXPECT_EQ(relayed.error().code, Code::kTooLarge);
  EXPECT_EQ(to.written(), "");
}

TEST(MessageRelay, AMalformedChunkSizeStopsTheBodyWithItsReason) {
  const std::string head = "POST /a HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\n\r\n";
  MessageFilter identity;
  PreparedMessage message = PrepareRequest(identity, kExchange, head, Request(head));
  ScriptedStream from({"5\r\nhello\r\n", "g\r\n"}), to;
  std::string buffer;
  Status relayed = Relay(from, to, buffer, message);
  ASSERT_FALSE(relayed.ok());
  EXPECT_EQ(relayed.error().code, Code::kInvalidArgument);
  EXPECT_EQ(relayed.error().message, "chunk size line does not start with a hexadecimal size");
  EXPECT_EQ(to.written(), head + "5\r\nhello\r\n") << "nothing of the piece with the fault";
}

TEST(MessageRelay, ABodyThatEndsEarlyFails) {
  const std::string head = "POST /a HTTP/1.1\r\nHost: example.test\r\nContent-Length: 10\r\n\r\n";
  MessageFilter identity;
  PreparedMessage message = PrepareRequest(identity, kExchange, head, Request(head));
  ScriptedStream from({"12345"}), to;
  std::string buffer;
  Status relayed = Relay(from, to, buffer, message);
  ASSERT_FALSE(relayed.ok());
  EXPECT_EQ(relayed.error().code, Code::kUnavailable);
  EXPECT_EQ(relayed.error().message, "the body ended before its end");
}

TEST(MessageRelay, AFilteredResponseToAnHttp10ClientLosesItsLengthAndEndsWithTheConnection) {
  const HttpHead request = Request("GET / HTTP/1.0\r\nHost: example.test\r\n\r\n");
  const std::string raw = "HTTP/1.1 200 OK\r\nContent-Length: 11\r\nX: y\r\n\r\n";
  ResponseHeadResult parsed = ParseResponseHead(raw);
  ASSERT_EQ(parsed.kind, ResponseHeadResult::kParsed);
  ReplacingFilter filter("PLACEHOLDER", "s3cr3t");
  PreparedMessage message = PrepareResponse(filter, kExchange, request, raw, parsed.head);
  EXPECT_EQ(message.out, Reframe::kUntilClose);
  ScriptedStream from({"PLACEHOLDER"}), to;
  std::string buffer;
  ASSERT_TRUE(Relay(from, to, buffer, message).ok());
  EXPECT_EQ(to.written(), "HTTP/1.1 200 OK\r\nX: y\r\n\r\ns3cr3t");
}

TEST(MessageRelay, AResponseToHeadHasNoBodyWhateverItsContentLength) {
  const HttpHead request = Request("HEAD / HTTP/1.1\r\nHost: example.test\r\n\r\n");
  const std::string raw = "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n";
  ResponseHeadResult parsed = ParseResponseHead(raw);
  ReplacingFilter filter("PLACEHOLDER", "s3cr3t");
  PreparedMessage message = PrepareResponse(filter, kExchange, request, raw, parsed.head);
  ScriptedStream from({"GET"}), to;
  std::string buffer;
  ASSERT_TRUE(Relay(from, to, buffer, message).ok());
  EXPECT_EQ(to.written(), raw);
}

// A filtered body many times larger than the buffer bound goes through in pieces: no read takes more than
// kRelayPiece, no write carries more than a piece's content and framing.
TEST(MessageRelay, ALargeFilteredBodyGoesThroughInBoundedReadsAndWrites) {
  std::string body;
  for (int i = 0; body.size() < 4 * kMaxBufferedBody; ++i) body += "PLACEHOLDER " + std::to_string(i) + "\n";
  const std::string head =
      "PUT /big HTTP/1.1\r\nHost: example.test\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  ReplacingFilter filter("PLACEHOLDER", "s");
  PreparedMessage message = PrepareRequest(filter, kExchange, head, Request(head));
  std::deque<std::string> pieces;
  for (size_t at = 0; at < body.size(); at += 100000) pieces.push_back(body.substr(at, 100000));
  ScriptedStream from(std::move(pieces)), to;
  std::string buffer;
  ASSERT_TRUE(Relay(from, to, buffer, message).ok());
  const std::string prefix =
      "PUT /big HTTP/1.1\r\nHost: example.test\r\nX-Filtered: sb1\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_TRUE(to.written().starts_with(prefix));
  std::string expected;
  size_t at = 0;
  for (size_t hit; (hit = body.find("PLACEHOLDER", at)) != std::string::npos; at = hit + 11)
    expected.append(body, at, hit - at).append("s");
  expected.append(body, at);
  EXPECT_TRUE(Dechunk(std::string_view(to.written()).substr(prefix.size())) == expected);
  EXPECT_EQ(from.largest_read(), kRelayPiece);
  EXPECT_LE(to.largest_write(), kRelayPiece + 16);
}

}  // namespace
}  // namespace isb::egress
