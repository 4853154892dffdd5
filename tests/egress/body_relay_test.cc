#include "egress/body_relay.h"

#include <gtest/gtest.h>

#include "egress/parsed_messages.h"

#include "egress/replacing_filter.h"

namespace isb::egress {
namespace {

std::unique_ptr<BodyFilter> Replacing(std::string needle = "PLACEHOLDER", std::string with = "s3cr3t") {
  return std::make_unique<ReplacingBody>(std::move(needle), std::move(with));
}

// What one relay puts out for `bytes` fed in pieces of `piece` bytes: the output, the last step, and the input used.
struct Relayed {
  std::string out;
  BodyRelay::Step last;
  size_t used = 0;
};
Relayed Feed(BodyRelay& relay, std::string_view bytes, size_t piece) {
  Relayed r;
  for (size_t at = 0; at <= bytes.size(); at += piece) {
    r.last = relay.Feed(bytes.substr(at, std::min(piece, bytes.size() - at)), r.out);
    r.used += r.last.used;
    if (r.last.state != BodyRelay::State::kMore) break;
    if (at == bytes.size()) break;
  }
  return r;
}

BodyFraming Length(uint64_t n) { return {BodyFraming::kLength, n}; }
const BodyFraming kChunked{BodyFraming::kChunked, 0};

// `text` with every `needle` replaced, in one pass.
std::string ReplaceAll(std::string_view text, std::string_view needle, std::string_view with) {
  std::string out;
  size_t at = 0;
  for (size_t hit; (hit = text.find(needle, at)) != std::string_view::npos; at = hit + needle.size())
    out.append(text.substr(at, hit - at)).append(with);
  return out.append(text.substr(at));
}

TEST(ChooseReframe, OnlyAFilteredBodyIsFramedAnewAndHttp10GetsNoChunks) {
  EXPECT_EQ(ChooseReframe(Length(5), false, true, 1), Reframe::kAsSent);
  EXPECT_EQ(ChooseReframe(kChunked, false, false, 1), Reframe::kAsSent);
  EXPECT_EQ(ChooseReframe({}, true, true, 1), Reframe::kAsSent);
  EXPECT_EQ(ChooseReframe(kChunked, true, true, 1), Reframe::kChunked);
  EXPECT_EQ(ChooseReframe(Length(5), true, true, 1), Reframe::kChunked);
  EXPECT_EQ(ChooseReframe(Length(5), true, false, 1), Reframe::kChunked);
  EXPECT_EQ(ChooseReframe(Length(5), true, true, 0), Reframe::kBuffered);
  EXPECT_EQ(ChooseReframe(Length(5), true, false, 0), Reframe::kUntilClose);
  EXPECT_EQ(ChooseReframe({BodyFraming::kUntilClose, 0}, true, false, 1), Reframe::kUntilClose);
}

TEST(BodyRelay, AnUnfilteredContentLengthBodyPassesAsSentAndStopsAtItsEnd) {
  BodyRelay relay(Length(10), Reframe::kAsSent, nullptr);
  std::string out;
  BodyRelay::Step step = relay.Feed("01234", out);
  EXPECT_EQ(step.state, BodyRelay::State::kMore);
  EXPECT_EQ(step.used, 5u);
  EXPECT_EQ(relay.opaque_remaining(), 5u);
  step = relay.Feed("56789GET / HTTP/1.1\r\n", out);
  EXPECT_EQ(step.state, BodyRelay::State::kDone);
  EXPECT_EQ(step.used, 5u) << "the next request's bytes are not the body's";
  EXPECT_EQ(out, "0123456789");
  EXPECT_EQ(relay.opaque_remaining(), 0u);
}

TEST(BodyRelay, BytesSplicedPastAnUnfilteredBodyCountTowardsItsEnd) {
  BodyRelay relay(Length(100), Reframe::kAsSent, nullptr);
  std::string out;
  relay.Feed("0123456789", out);
  relay.Skipped(85);
  EXPECT_EQ(relay.opaque_remaining(), 5u);
  BodyRelay::Step step = relay.Feed("abcdeXYZ", out);
  EXPECT_EQ(step.state, BodyRelay::State::kDone);
  EXPECT_EQ(step.used, 5u);
  EXPECT_EQ(out, "0123456789abcde");
  EXPECT_EQ(relay.length_out(), 100u);
}

TEST(BodyRelay, AnUnfilteredChunkedBodyPassesByteForByteWithExtensionsAndTrailersHoweverItIsSplit) {
  const std::string body = "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Sum: 12\r\n\r\n";
  for (size_t piece = 1; piece <= body.size(); ++piece) {
    BodyRelay relay(kChunked, Reframe::kAsSent, nullptr);
    Relayed r = Feed(relay, body + "NEXT", piece);
    EXPECT_EQ(r.last.state, BodyRelay::State::kDone) << piece;
    EXPECT_EQ(r.used, body.size()) << piece;
    EXPECT_EQ(r.out, body) << piece;
  }
}

TEST(BodyRelay, AFilteredChunkedBodyIsChunkedAnewWithItsTrailers) {
  const std::string body = "6;ext=1\r\nPLACEH\r\n7\r\nOLDER, \r\nB\r\nPLACEHOLDER\r\n0\r\nX-Sum: 12\r\nX-B: c\r\n\r\n";
  BodyRelay relay(kChunked, Reframe::kChunked, Replacing());
  Relayed r = Feed(relay, body + "NEXT", body.size() + 4);
  EXPECT_EQ(r.last.state, BodyRelay::State::kDone);
  EXPECT_EQ(r.used, body.size());
  // The content read in one piece is one chunk (chunk extensions are the sender's framing, not content), then the
  // trailers as they came.
  EXPECT_EQ(r.out, "e\r\ns3cr3t, s3cr3t\r\n0\r\nX-Sum: 12\r\nX-B: c\r\n\r\n");
  EXPECT_EQ(relay.length_out(), 14u);
}

TEST(BodyRelay, AFilteredChunkedBodySplitAtEveryByteCarriesTheSameContent) {
  const std::string body = "6\r\nPLACEH\r\n7\r\nOLDER, \r\nB\r\nPLACEHOLDER\r\n0\r\nX-Sum: 12\r\n\r\n";
  for (size_t piece = 1; piece <= body.size(); ++piece) {
    BodyRelay relay(kChunked, Reframe::kChunked, Replacing());
    Relayed r = Feed(relay, body, piece);
    ASSERT_EQ(r.last.state, BodyRelay::State::kDone) << piece;
    EXPECT_EQ(Dechunk(r.out), "s3cr3t, s3cr3t") << piece;
    EXPECT_TRUE(r.out.ends_with("\r\n0\r\nX-Sum: 12\r\n\r\n")) << r.out;
  }
}

TEST(BodyRelay, AFilteredContentLengthBodyGoesChunkedWithItsNewLength) {
  const std::string body = "a=PLACEHOLDER&b=PLACEHOLDER";
  BodyRelay relay(Length(body.size()), Reframe::kChunked, Replacing());
  Relayed r = Feed(relay, body + "GET /next", 10);
  EXPECT_EQ(r.last.state, BodyRelay::State::kDone);
  EXPECT_EQ(r.used, body.size());
  // Pieces of 10: "a=PLACEHOL" gives nothing (the filter keeps its last 10 bytes back), "DER&b=PLAC" gives
  // "a=s3cr3t", "EHOLDER" (the body's end) "&b=s3cr3t"; each piece the filter gives is a chunk.
  EXPECT_EQ(r.out, "8\r\na=s3cr3t\r\n9\r\n&b=s3cr3t\r\n0\r\n\r\n");
  EXPECT_EQ(relay.length_out(), 17u);
}

TEST(BodyRelay, AnEmptyFilteredBodyIsTheLastChunkAlone) {
  BodyRelay relay(Length(0), Reframe::kChunked, Replacing());
  std::string out;
  BodyRelay::Step step = relay.Feed("", out);
  EXPECT_EQ(step.state, BodyRelay::State::kDone);
  EXPECT_EQ(out, "0\r\n\r\n");
}

TEST(BodyRelay, AFilteredHttp10RequestBodyIsHeldWholeAndCountedForItsContentLength) {
  const std::string body = "x=PLACEHOLDER";
  BodyRelay relay(Length(body.size()), Reframe::kBuffered, Replacing());
  Relayed r = Feed(relay, body, 4);
  EXPECT_EQ(r.last.state, BodyRelay::State::kDone);
  EXPECT_EQ(r.out, "x=s3cr3t");
  EXPECT_EQ(relay.length_out(), 8u);
}

TEST(BodyRelay, AHeldBodyPastTheBoundIsRefused) {
  // Past the bound by more than the filter keeps back.
  const std::string body(kMaxBufferedBody + 20, 'a');
  BodyRelay relay(Length(body.size() + 100), Reframe::kBuffered, Replacing());
  Relayed r = Feed(relay, body, 64 * 1024);
  EXPECT_EQ(r.last.state, BodyRelay::State::kTooLarge);
  EXPECT_EQ(r.last.reason,
            "an HTTP/1.0 request's body that a filter changes is held whole, and this one came to more "
            "than 1048576 bytes: send it with HTTP/1.1");
  std::string more;
  EXPECT_EQ(relay.Feed("aaaa", more).state, BodyRelay::State::kTooLarge) << "it stays refused";
  EXPECT_EQ(more, "");
}

TEST(BodyRelay, AFilteredResponseToAnHttp10ClientEndsWithTheConnection) {
  BodyRelay relay(Length(11), Reframe::kUntilClose, Replacing());
  Relayed r = Feed(relay, "PLACEHOLDER", 3);
  EXPECT_EQ(r.last.state, BodyRelay::State::kDone);
  EXPECT_EQ(r.out, "s3cr3t");
}

TEST(BodyRelay, ABodyFramedByTheConnectionEndsWhenItDoes) {
  BodyRelay relay({BodyFraming::kUntilClose, 0}, Reframe::kUntilClose, Replacing());
  std::string out;
  EXPECT_EQ(relay.Feed("one PLACE", out).state, BodyRelay::State::kMore);
  EXPECT_EQ(relay.Feed("HOLDER two PLACE", out).state, BodyRelay::State::kMore);
  EXPECT_EQ(relay.End(out).state, BodyRelay::State::kDone);
  EXPECT_EQ(out, "one s3cr3t two PLACE") << "what was kept back goes at the end";
}

TEST(BodyRelay, ABodyCutShortIsMalformed) {
  for (BodyFraming framing : {Length(10), kChunked}) {
    BodyRelay relay(framing, Reframe::kChunked, Replacing());
    std::string out;
    relay.Feed(framing.kind == BodyFraming::kChunked ? "a\r\n01234" : "01234", out);
    BodyRelay::Step end = relay.End(out);
    EXPECT_EQ(end.state, BodyRelay::State::kMalformed);
    EXPECT_EQ(end.reason, "the body ended before its end");
  }
}

TEST(BodyRelay, MalformedChunkSizesAreRefusedFilteredOrNot) {
  const std::pair<std::string, std::string> cases[] = {
      {"zz\r\nab\r\n0\r\n\r\n", "chunk size line does not start with a hexadecimal size"},
      {"1000000000000000\r\n", "chunk size longer than 15 hexadecimal digits"},
      {"5 \r\nhello\r\n", "chunk size followed by something other than ';' or CRLF"},
      {"5\nhello\r\n", "chunk size followed by something other than ';' or CRLF"},
      {"5\r\nhelloX\r\n", "chunk data not followed by CRLF"},
      {"-5\r\n", "chunk size line does not start with a hexadecimal size"},
  };
  for (const auto& [body, reason] : cases) {
    for (bool filtered : {false, true}) {
      BodyRelay relay(kChunked, filtered ? Reframe::kChunked : Reframe::kAsSent, filtered ? Replacing() : nullptr);
      std::string out;
      BodyRelay::Step step = relay.Feed(body, out);
      EXPECT_EQ(step.state, BodyRelay::State::kMalformed) << body;
      EXPECT_EQ(step.reason, reason) << body;
      EXPECT_EQ(relay.Feed("0\r\n\r\n", out).state, BodyRelay::State::kMalformed) << "it stays refused";
    }
  }
}

// Memory: a body many times larger than any buffer of the relay's goes through piece by piece. What comes out of
// each piece is that piece's content (changed) and its chunk framing, nothing held over but the filter's own tail.
TEST(BodyRelay, ABodyLargerThanEveryBoundGoesThroughInBoundedPieces) {
  constexpr size_t kPiece = 16 * 1024;
  std::string body;
  for (int i = 0; body.size() < 8 * kMaxBufferedBody; ++i) body += "line " + std::to_string(i) + " PLACEHOLDER\n";
  for (BodyFraming framing : {Length(body.size()), kChunked}) {
    std::string input = body;
    if (framing.kind == BodyFraming::kChunked) {
      input.clear();
      for (size_t at = 0; at < body.size(); at += 7000) {
        const std::string part = body.substr(at, 7000);
        char size[16];
        std::snprintf(size, sizeof size, "%zx\r\n", part.size());
        input += size + part + "\r\n";
      }
      input += "0\r\n\r\n";
    }
    auto filter = std::make_unique<ReplacingBody>("PLACEHOLDER", "a-longer-secret-value");
    ReplacingBody* replacing = filter.get();
    BodyRelay relay(framing, Reframe::kChunked, std::move(filter));
    std::string content;
    size_t largest = 0;
    BodyRelay::Step step;
    for (size_t at = 0; step.state == BodyRelay::State::kMore; at += kPiece) {
      std::string out;
      step = relay.Feed(std::string_view(input).substr(at, kPiece), out);
      largest = std::max(largest, out.size());
      ChunkedScanner scanner;
      if (step.state == BodyRelay::State::kMore) {
        std::string data;
        ASSERT_EQ(scanner.Feed(out, &data).state, ChunkedScanner::State::kMore);
        content += data;
      } else {
        content += Dechunk(out.substr(0, out.size()));
      }
    }
    ASSERT_EQ(step.state, BodyRelay::State::kDone);
    const std::string expected = ReplaceAll(body, "PLACEHOLDER", "a-longer-secret-value");
    EXPECT_TRUE(content == expected) << content.size() << " bytes, not " << expected.size();
    EXPECT_EQ(relay.length_out(), expected.size());
    // A piece's content grows by at most 10 bytes for each of its placeholders (one in 18 bytes), plus a chunk head.
    EXPECT_LE(largest, kPiece * 2);
    EXPECT_LE(replacing->most_kept(), 10u);
  }
}

}  // namespace
}  // namespace isb::egress
