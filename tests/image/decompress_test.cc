// Decompression: gzip and zstd told apart by magic, whole streams and concatenated ones read back, and every way a
// stream can be wrong (truncated, corrupt, trailing bytes, a bomb past max_out) an error with its exact message.
#include "image/decompress.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <string>

#include "secrets/zlib_whole.h"

namespace isb::image {
namespace {

std::string Gzip(std::string_view text) { return secrets::ZlibWhole(text, 31); }

std::string Zstd(std::string_view text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::span<const uint8_t> Bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

// All of `compressed` through Decompressing in reads of `piece` bytes: the bytes, or the error.
Result<std::string> Inflate(std::string_view compressed, Compression c, uint64_t max_out, size_t piece = 4096) {
  StringSource in(compressed);
  std::unique_ptr<ByteSource> d = Decompressing(in, c, max_out);
  std::string out;
  std::vector<uint8_t> buf(piece);
  for (;;) {
    ISB_ASSIGN_OR_RETURN(size_t n, d->Read(buf));
    if (n == 0) return out;
    out.append(reinterpret_cast<const char*>(buf.data()), n);
  }
}

std::string Text(size_t n) {
  std::string s;
  for (size_t i = 0; s.size() < n; ++i) s += "line " + std::to_string(i) + "\n";
  s.resize(n);
  return s;
}

TEST(DecompressTest, MagicBytesTellGzipFromZstdFromAPlainTar) {
  EXPECT_EQ(SniffCompression(Bytes(Gzip("x"))), Compression::kGzip);
  EXPECT_EQ(SniffCompression(Bytes(Zstd("x"))), Compression::kZstd);
  EXPECT_EQ(SniffCompression(Bytes("etc/passwd\0\0\0")), Compression::kNone);
  EXPECT_EQ(SniffCompression(Bytes("\x1f")), Compression::kNone);
  EXPECT_EQ(SniffCompression(Bytes("\x28\xb5\x2f")), Compression::kNone);
  EXPECT_EQ(SniffCompression({}), Compression::kNone);
}

TEST(DecompressTest, AGzipStreamReadsBackWholeInAnyPieceSize) {
  const std::string text = Text(300000);
  for (size_t piece : {1u, 7u, 4096u, 1u << 20}) {
    Result<std::string> out = Inflate(Gzip(text), Compression::kGzip, 1 << 20, piece);
    ASSERT_TRUE(out.ok()) << out.error().message;
    EXPECT_EQ(*out, text) << piece;
  }
}

TEST(DecompressTest, AZstdStreamReadsBackWholeInAnyPieceSize) {
  const std::string text = Text(300000);
  for (size_t piece : {1u, 7u, 4096u, 1u << 20}) {
    Result<std::string> out = Inflate(Zstd(text), Compression::kZstd, 1 << 20, piece);
    ASSERT_TRUE(out.ok()) << out.error().message;
    EXPECT_EQ(*out, text) << piece;
  }
}

TEST(DecompressTest, ConcatenatedGzipMembersAndZstdFramesReadAsOneStream) {
  EXPECT_EQ(*Inflate(Gzip("one ") + Gzip("two"), Compression::kGzip, 100), "one two");
  EXPECT_EQ(*Inflate(Zstd("one ") + Zstd("two"), Compression::kZstd, 100), "one two");
}

TEST(DecompressTest, NoneCopiesTheBytesUnderTheSameLimit) {
  EXPECT_EQ(*Inflate("plain", Compression::kNone, 5), "plain");
  Result<std::string> over = Inflate("plain!", Compression::kNone, 5);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, Code::kTooLarge);
  EXPECT_EQ(over.error().message, "none stream: decompresses to more than 5 bytes (the limit max_out)");
}

TEST(DecompressTest, AGzipBombStopsAtMaxOutWithAnErrorNamingTheLimit) {
  const std::string bomb = Gzip(std::string(16 << 20, '\0'));
  ASSERT_LT(bomb.size(), 20u << 10);  // 1000 to 1 and more
  Result<std::string> out = Inflate(bomb, Compression::kGzip, 1 << 20);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, Code::kTooLarge);
  EXPECT_EQ(out.error().message, "gzip stream: decompresses to more than 1048576 bytes (the limit max_out)");
}

TEST(DecompressTest, AZstdBombStopsAtMaxOutWithAnErrorNamingTheLimit) {
  Result<std::string> out = Inflate(Zstd(std::string(16 << 20, 'a')), Compression::kZstd, 1 << 20);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, Code::kTooLarge);
  EXPECT_EQ(out.error().message, "zstd stream: decompresses to more than 1048576 bytes (the limit max_out)");
}

TEST(DecompressTest, ExactlyMaxOutBytesIsAllowed) {
  EXPECT_EQ(Inflate(Gzip(std::string(1000, 'a')), Compression::kGzip, 1000)->size(), 1000u);
  EXPECT_EQ(Inflate(Zstd(std::string(1000, 'a')), Compression::kZstd, 1000)->size(), 1000u);
}

TEST(DecompressTest, ATruncatedGzipStreamIsAnError) {
  const std::string text = Text(100000);
  const std::string gz = Gzip(text);
  Result<std::string> out = Inflate(std::string_view(gz).substr(0, gz.size() - 4), Compression::kGzip, 1 << 20);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, Code::kInvalidArgument);
  EXPECT_EQ(out.error().message,
            "gzip stream: truncated (the input ended before the end of the stream, after 100000 bytes out)");
}

TEST(DecompressTest, ATruncatedZstdStreamIsAnError) {
  const std::string z = Zstd(Text(100000));
  Result<std::string> out = Inflate(std::string_view(z).substr(0, z.size() / 2), Compression::kZstd, 1 << 20);
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(
      out.error().message.starts_with("zstd stream: truncated (the input ended before the end of the "
                                      "stream, after "))
      << out.error().message;
}

TEST(DecompressTest, AnEmptyInputIsATruncatedStream) {
  EXPECT_EQ(Inflate("", Compression::kGzip, 10).error().message,
            "gzip stream: truncated (the input ended before the end of the stream, after 0 bytes out)");
  EXPECT_EQ(Inflate("", Compression::kZstd, 10).error().message,
            "zstd stream: truncated (the input ended before the end of the stream, after 0 bytes out)");
}

TEST(DecompressTest, CorruptDataIsAnErrorWithTheLibrarysReason) {
  std::string gz = Gzip("hello hello hello");
  gz[3] = '\xe0';  // reserved flag bits
  EXPECT_EQ(Inflate(gz, Compression::kGzip, 100).error().message, "gzip stream: corrupt (unknown header flags set)");
  std::string z = Zstd("hello hello hello");
  z[4] = '\xff';  // frame header descriptor with its reserved bit
  EXPECT_EQ(Inflate(z, Compression::kZstd, 100).error().message, "zstd stream: corrupt (Unsupported frame parameter)");
}

TEST(DecompressTest, BytesAfterTheLastMemberOrFrameAreAnError) {
  Result<std::string> gz = Inflate(Gzip("data") + "trailing", Compression::kGzip, 100);
  ASSERT_FALSE(gz.ok());
  EXPECT_EQ(gz.error().message, "gzip stream: corrupt (incorrect header check)");
  Result<std::string> z = Inflate(Zstd("data") + "trailing", Compression::kZstd, 100);
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.error().message, "zstd stream: corrupt (Unknown frame descriptor)");
}

}  // namespace
}  // namespace isb::image
