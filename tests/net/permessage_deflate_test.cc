// permessage-deflate against RFC 7692's own examples (section 7.2.3), its negotiation rules (section 7.1), and the
// bounds on inflating.
#include "net/permessage_deflate.h"

#include <gtest/gtest.h>

#include "net/byte_string.h"

namespace isb::net {
namespace {

using testing::Bytes;

const std::string kHelloCompressed = Bytes({0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00});

std::string Deflate(WsDeflater& deflater, std::string_view message) {
  std::string out;
  deflater.Take(message, out);
  deflater.Finish(out);
  return out;
}

Result<std::string> Inflate(WsInflater& inflater, std::string_view compressed, size_t piece = 1 << 16) {
  std::string out;
  while (!compressed.empty()) {
    ISB_ASSIGN_OR_RETURN(size_t used, inflater.Take(compressed, out, piece));
    compressed.remove_prefix(used);
  }
  for (;;) {
    ISB_ASSIGN_OR_RETURN(bool whole, inflater.Finish(out, piece));
    if (whole) return out;
  }
}

TEST(PermessageDeflateTest, HelloDeflatesToTheRfcsBytes) {
  WsDeflater deflater(15, false);
  EXPECT_EQ(Deflate(deflater, "Hello"), kHelloCompressed);
  // With context takeover, the second "Hello" refers back to the first (RFC 7692 section 7.2.3.2).
  EXPECT_EQ(Deflate(deflater, "Hello"), Bytes({0xf2, 0x00, 0x11, 0x00, 0x00}));
}

TEST(PermessageDeflateTest, WithoutContextTakeoverEveryMessageStandsAlone) {
  WsDeflater deflater(15, true);
  EXPECT_EQ(Deflate(deflater, "Hello"), kHelloCompressed);
  EXPECT_EQ(Deflate(deflater, "Hello"), kHelloCompressed);
}

TEST(PermessageDeflateTest, AWindowOfEightBitsRefersToNothingEarlier) {
  WsDeflater deflater(8, false);
  WsInflater inflater(false, 1 << 20);
  const std::string message(4000, 'a');
  std::string compressed = Deflate(deflater, message);
  // Huffman coding alone: about a bit per byte of a one-letter text, where matches would take a few bytes.
  EXPECT_GT(compressed.size(), 400u);
  EXPECT_EQ(Inflate(inflater, compressed).value(), message);
  WsDeflater nine(9, false);
  EXPECT_LT(Deflate(nine, message).size(), 100u);
}

TEST(PermessageDeflateTest, AnEmptyMessageDeflatesToOneZeroByte) {
  WsDeflater deflater(15, false);
  EXPECT_EQ(Deflate(deflater, ""), Bytes({0x00}));
}

TEST(PermessageDeflateTest, TheRfcsExamplesInflate) {
  WsInflater inflater(false, 1000);
  EXPECT_EQ(Inflate(inflater, kHelloCompressed).value(), "Hello");
  EXPECT_EQ(Inflate(inflater, Bytes({0xf2, 0x00, 0x11, 0x00, 0x00})).value(), "Hello");
  // A stored block, and a final block (RFC 7692 sections 7.2.3.3 and 7.2.3.4).
  EXPECT_EQ(Inflate(inflater, Bytes({0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00})).value(),
            "Hello");
  WsInflater fresh(false, 1000);
  EXPECT_EQ(Inflate(fresh, Bytes({0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00})).value(), "Hello");
  EXPECT_EQ(Inflate(fresh, kHelloCompressed).value(), "Hello");
}

TEST(PermessageDeflateTest, RoundTripsInSmallPiecesWithContextTakeover) {
  WsDeflater deflater(10, false);
  WsInflater inflater(false, 1 << 20);
  for (int i = 0; i < 5; ++i) {
    std::string message;
    for (int j = 0; j < 2000; ++j) message += "line " + std::to_string(j % 37) + " of message " + std::to_string(i);
    std::string compressed = Deflate(deflater, message);
    EXPECT_LT(compressed.size(), message.size() / 10);
    Result<std::string> back = Inflate(inflater, compressed, 7);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, message);
  }
}

TEST(PermessageDeflateTest, InflatingPastTheLimitIsRefused) {
  WsDeflater deflater(15, false);
  std::string bomb = Deflate(deflater, std::string(1 << 20, '\0'));
  WsInflater inflater(false, 65536);
  Result<std::string> out = Inflate(inflater, bomb, 4096);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, Code::kTooLarge);
  EXPECT_EQ(out.error().message, "a message inflates past the limit of 65536 bytes");
}

TEST(PermessageDeflateTest, BytesThatAreNotDeflateAreRefused) {
  WsInflater inflater(false, 65536);
  Result<std::string> out = Inflate(inflater, Bytes({0xff, 0xff, 0xff, 0xff}));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, Code::kInvalidArgument);
  EXPECT_EQ(out.error().message, "a compressed message is not valid DEFLATE data");
}

TEST(PermessageDeflateTest, AnExtensionListIsParsed) {
  Result<std::vector<WsExtension>> list = ParseExtensionList(
      "permessage-deflate; client_max_window_bits; server_max_window_bits=\"10\", x-webkit-deflate-frame,"
      "permessage-deflate");
  ASSERT_TRUE(list.ok()) << list.error().message;
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ(FormatExtension((*list)[0]), "permessage-deflate; client_max_window_bits; server_max_window_bits=10");
  EXPECT_EQ((*list)[1].name, "x-webkit-deflate-frame");
  EXPECT_TRUE((*list)[2].params.empty());
  Result<DeflateParams> offer = ParseDeflateParams((*list)[0], false);
  ASSERT_TRUE(offer.ok());
  EXPECT_TRUE(offer->client_max_window_bits_bare);
  EXPECT_EQ(offer->server_window(), 10);
  EXPECT_EQ(offer->client_window(), 15);
}

TEST(PermessageDeflateTest, MalformedListsAndParametersAreRefused) {
  EXPECT_EQ(ParseExtensionList("").error().message,
            "Sec-WebSocket-Extensions: an extension name is missing or not a token");
  EXPECT_EQ(ParseExtensionList("a; =1").error().message, "Sec-WebSocket-Extensions: a parameter of a is not a token");
  EXPECT_EQ(ParseExtensionList("a; b=\"1").error().message,
            "Sec-WebSocket-Extensions: a quoted value of a is not closed");
  EXPECT_EQ(ParseExtensionList("a b").error().message, "Sec-WebSocket-Extensions: unexpected text after a");
  auto params = [](const std::string& text, bool response) {
    return ParseDeflateParams(ParseExtensionList(text).value()[0], response);
  };
  EXPECT_EQ(params("permessage-deflate; server_max_window_bits=16", false).error().message,
            "Sec-WebSocket-Extensions: server_max_window_bits must be 8 to 15, not 16");
  EXPECT_EQ(params("permessage-deflate; server_max_window_bits=08", false).error().message,
            "Sec-WebSocket-Extensions: server_max_window_bits must be 8 to 15, not 08");
  EXPECT_EQ(params("permessage-deflate; server_max_window_bits", false).error().message,
            "Sec-WebSocket-Extensions: server_max_window_bits needs a value");
  EXPECT_EQ(params("permessage-deflate; client_max_window_bits", true).error().message,
            "Sec-WebSocket-Extensions: client_max_window_bits needs a value");
  EXPECT_EQ(params("permessage-deflate; client_no_context_takeover; client_no_context_takeover", false).error().message,
            "Sec-WebSocket-Extensions: permessage-deflate has client_no_context_takeover twice");
  EXPECT_EQ(params("permessage-deflate; server_no_context_takeover=1", false).error().message,
            "Sec-WebSocket-Extensions: server_no_context_takeover takes no value");
  EXPECT_EQ(params("permessage-deflate; mystery", false).error().message,
            "Sec-WebSocket-Extensions: permessage-deflate has no parameter mystery");
}

TEST(PermessageDeflateTest, AResponseMustKeepWithinTheOffer) {
  DeflateParams offer;
  DeflateParams response;
  EXPECT_EQ(DeflateResponseRefusal(offer, response), "");
  response.client_max_window_bits = 12;
  EXPECT_EQ(DeflateResponseRefusal(offer, response),
            "the response sets client_max_window_bits, which the offer did not allow");
  offer.client_max_window_bits_bare = true;
  EXPECT_EQ(DeflateResponseRefusal(offer, response), "");
  offer.client_max_window_bits = 10;
  EXPECT_EQ(DeflateResponseRefusal(offer, response), "the response's client_max_window_bits exceeds the offer's");
  DeflateParams quiet;
  quiet.server_no_context_takeover = true;
  EXPECT_EQ(DeflateResponseRefusal(quiet, DeflateParams{}),
            "the response drops server_no_context_takeover, which the offer asked for");
  DeflateParams small;
  small.server_max_window_bits = 9;
  EXPECT_EQ(DeflateResponseRefusal(small, DeflateParams{}),
            "the response's server_max_window_bits exceeds the offer's");
}

}  // namespace
}  // namespace isb::net
