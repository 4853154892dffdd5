// Content codings: each coding's body decoded, filtered and encoded again however it is cut, checked against the
// libraries' own one-shot functions; corrupt, truncated and bomb bodies refused.
#include "secrets/content_coding.h"

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include "secrets/stream_replace.h"
#include "secrets/zlib_whole.h"

namespace isb::secrets {
namespace {

std::string Encoded(Coding coding, std::string_view text) {
  switch (coding) {
    case Coding::kGzip:
      return ZlibWhole(text, 31);
    case Coding::kDeflate:
      return ZlibWhole(text, 15);
    case Coding::kBrotli: {
      size_t size = BrotliEncoderMaxCompressedSize(text.size());
      std::string out(size, '\0');
      EXPECT_TRUE(BrotliEncoderCompress(5, 22, BROTLI_MODE_GENERIC, text.size(),
                                        reinterpret_cast<const uint8_t*>(text.data()), &size,
                                        reinterpret_cast<uint8_t*>(out.data())));
      out.resize(size);
      return out;
    }
    case Coding::kZstd: {
      std::string out(ZSTD_compressBound(text.size()), '\0');
      const size_t size = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
      EXPECT_FALSE(ZSTD_isError(size));
      out.resize(size);
      return out;
    }
  }
  return {};
}

std::string Decoded(Coding coding, std::string_view data) {
  switch (coding) {
    case Coding::kGzip:
      return UnzlibWhole(data, 31);
    case Coding::kDeflate:
      return UnzlibWhole(data, 15);
    case Coding::kBrotli: {
      std::string out(8 << 20, '\0');
      size_t size = out.size();
      EXPECT_EQ(BrotliDecoderDecompress(data.size(), reinterpret_cast<const uint8_t*>(data.data()), &size,
                                        reinterpret_cast<uint8_t*>(out.data())),
                BROTLI_DECODER_RESULT_SUCCESS);
      out.resize(size);
      return out;
    }
    case Coding::kZstd: {
      std::string out(8 << 20, '\0');
      const size_t size = ZSTD_decompress(out.data(), out.size(), data.data(), data.size());
      EXPECT_FALSE(ZSTD_isError(size)) << ZSTD_getErrorName(size);
      out.resize(ZSTD_isError(size) ? 0 : size);
      return out;
    }
  }
  return {};
}

std::unique_ptr<RecodedBody> Scrubbing(Coding coding, ExpansionLimit limit = {}) {
  auto set = std::make_shared<const ReplaceSet>(std::vector<Replacement>{{"sk-live-value", "isb_PH"}});
  return std::make_unique<RecodedBody>(coding, std::make_unique<StreamReplacer>(set), limit);
}

// `data` through `body` in pieces of `piece` bytes; fails the test on a refusal.
std::string Through(egress::BodyFilter& body, std::string_view data, size_t piece) {
  std::string out;
  for (size_t at = 0; at < data.size(); at += piece) {
    body.Take(data.substr(at, piece), out);
    EXPECT_EQ(body.Refusal(), "");
  }
  body.Finish(out);
  EXPECT_EQ(body.Refusal(), "");
  return out;
}

std::string Text(int lines = 3000) {
  std::string text;
  for (int i = 0; i < lines; ++i) text += "line " + std::to_string(i) + (i % 100 == 7 ? " sk-live-value\n" : "\n");
  return text;
}

std::string Scrubbed(std::string text) {
  for (size_t at; (at = text.find("sk-live-value")) != std::string::npos;) text.replace(at, 13, "isb_PH");
  return text;
}

class EachCoding : public ::testing::TestWithParam<Coding> {};

TEST_P(EachCoding, ABodyIsDecodedScrubbedAndEncodedAgainInItsCodingHoweverItIsCut) {
  const std::string text = Text();
  const std::string encoded = Encoded(GetParam(), text);
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}, encoded.size()}) {
    auto body = Scrubbing(GetParam());
    const std::string out = Through(*body, encoded, piece);
    EXPECT_EQ(Decoded(GetParam(), out), Scrubbed(text)) << "pieces of " << piece;
    EXPECT_EQ(body->decoded_bytes(), text.size());
  }
}

// Large enough that half of it holds whole blocks of every coding (zstd's are up to 128 KiB).
TEST_P(EachCoding, WhatEachTakeGivesDecodesAtOnceSoAStreamStaysStreamed) {
  const std::string text = Text(60000);
  const std::string encoded = Encoded(GetParam(), text);
  auto body = Scrubbing(GetParam());
  std::string out;
  body->Take(std::string_view(encoded).substr(0, encoded.size() / 2), out);
  ASSERT_EQ(body->Refusal(), "");
  if (GetParam() == Coding::kGzip || GetParam() == Coding::kDeflate) {
    const std::string partial = UnzlibWhole(out, GetParam() == Coding::kGzip ? 31 : 15);
    EXPECT_GT(partial.size(), 0u);
    EXPECT_TRUE(Scrubbed(text).starts_with(partial));
  } else {
    EXPECT_GT(out.size(), 0u);
  }
}

TEST_P(EachCoding, ATruncatedBodyIsRefusedAtItsEnd) {
  const std::string encoded = Encoded(GetParam(), Text());
  auto body = Scrubbing(GetParam());
  std::string out;
  body->Take(std::string_view(encoded).substr(0, encoded.size() - 3), out);
  EXPECT_EQ(body->Refusal(), "");
  body->Finish(out);
  EXPECT_EQ(body->Refusal(), "isb: the body's " + std::string(CodingName(GetParam())) + " stream ends before its end");
}

std::string CodingTestName(const ::testing::TestParamInfo<Coding>& param) {
  return std::string(CodingName(param.param));
}

INSTANTIATE_TEST_SUITE_P(Codings, EachCoding,
                         ::testing::Values(Coding::kGzip, Coding::kDeflate, Coding::kBrotli, Coding::kZstd),
                         CodingTestName);

TEST(ContentCoding, RawDeflateIsTakenAsBrowsersTakeItAndSentBackRaw) {
  const std::string text = Text();
  auto body = Scrubbing(Coding::kDeflate);
  const std::string out = Through(*body, ZlibWhole(text, -15), 100);
  EXPECT_EQ(UnzlibWhole(out, -15), Scrubbed(text));
}

TEST(ContentCoding, GzipMembersOneAfterAnotherAreOneBody) {
  auto body = Scrubbing(Coding::kGzip);
  const std::string out = Through(*body, ZlibWhole("first sk-live-", 31) + ZlibWhole("value second", 31), 5);
  EXPECT_EQ(UnzlibWhole(out, 31), "first isb_PH second");
  // Cut exactly where the second member starts.
  auto cut = Scrubbing(Coding::kGzip);
  std::string whole;
  cut->Take(ZlibWhole("first sk-live-", 31), whole);
  cut->Take(ZlibWhole("value second", 31) + "trailing bytes", whole);
  cut->Take("\x1f\x8b more trailing bytes", whole);
  cut->Finish(whole);
  EXPECT_EQ(cut->Refusal(), "");
  EXPECT_EQ(UnzlibWhole(whole, 31), "first isb_PH second") << "what follows the last member is dropped";
}

TEST(ContentCoding, DataNotInItsCodingIsRefusedWithTheLibrarysReason) {
  auto body = Scrubbing(Coding::kGzip);
  std::string out;
  body->Take("this is not gzip at all", out);
  EXPECT_EQ(body->Refusal(), "isb: the body is not valid gzip: incorrect header check");
  auto zstd = Scrubbing(Coding::kZstd);
  zstd->Take("this is not zstd at all", out);
  EXPECT_EQ(zstd->Refusal(), "isb: the body is not valid zstd: Unknown frame descriptor");
}

TEST(ContentCoding, ABodyThatExpandsPastTheLimitIsRefusedWithoutDecodingItAll) {
  const std::string zeros(16 << 20, '\0');
  const std::string bomb = ZlibWhole(zeros, 31);
  auto body = Scrubbing(Coding::kGzip, {1 << 20, 100});
  std::string out;
  for (size_t at = 0; at < bomb.size() && body->Refusal().empty(); at += 1000)
    body->Take(std::string_view(bomb).substr(at, 1000), out);
  EXPECT_EQ(body->Refusal(),
            "isb: the body decodes to more than 100 times its gzip size: refused as a decompression bomb");
  EXPECT_LE(body->decoded_bytes(), (1u << 20) + 16 * 1024);
}

TEST(ContentCoding, AnEmptyBodyInACodingStaysEmpty) {
  auto body = Scrubbing(Coding::kBrotli);
  EXPECT_EQ(Through(*body, "", 1), "");
}

TEST(ContentCoding, ContentEncodingListsTheCodingsInTheOrderApplied) {
  Result<std::vector<Coding>> codings = ParseContentEncoding(" gzip , identity,BR,x-gzip ,zstd, deflate");
  ASSERT_TRUE(codings.ok());
  EXPECT_EQ(*codings,
            (std::vector<Coding>{Coding::kGzip, Coding::kBrotli, Coding::kGzip, Coding::kZstd, Coding::kDeflate}));
  Result<std::vector<Coding>> unknown = ParseContentEncoding("gzip, Compress");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, Code::kInvalidArgument);
  EXPECT_EQ(unknown.error().message, "content coding \"compress\" is not one of gzip, deflate, br, zstd");
}

TEST(ContentCoding, StackedCodingsAreUndoneOutermostFirst) {
  auto set = std::make_shared<const ReplaceSet>(std::vector<Replacement>{{"sk-live-value", "isb_PH"}});
  RecodedBody body(Coding::kBrotli,
                   std::make_unique<RecodedBody>(Coding::kGzip, std::make_unique<StreamReplacer>(set)));
  const std::string out = Through(body, Encoded(Coding::kBrotli, ZlibWhole("a sk-live-value b", 31)), 3);
  EXPECT_EQ(UnzlibWhole(Decoded(Coding::kBrotli, out), 31), "a isb_PH b");
}

}  // namespace
}  // namespace isb::secrets
